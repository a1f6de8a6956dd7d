package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The prediction every benchmark submits: the default model (boltz2), one short chain
// folded single-sequence, so that it goes to the workers at once (make bench-align
// measures the alignment stage), defaults for every other param. The name picks the test
// engine's behaviour.
func predictBody(name string) []byte {
	return fmt.Appendf(nil, `{"sequence":"MKTAYIAKQRQISFVKSHFSRQ","name":%q,"params":{"use_msa_server":false}}`, name)
}

// client is one HTTP client with keep-alive connections to a server.
type client struct {
	base string
	http *http.Client
}

func newClient(base string, conns int) *client {
	tr := &http.Transport{
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		DisableCompression:  true,
		IdleConnTimeout:     time.Minute,
	}
	return &client{base: base, http: &http.Client{Transport: tr}}
}

func (c *client) close() { c.http.CloseIdleConnections() }

// jobView is the part of a Job the benchmarks read.
type jobView struct {
	ID        string `json:"id"`
	Status    string `json:"status"`
	CreatedAt string `json:"created_at"`
	StartedAt string `json:"started_at"`
	Error     string `json:"error"`
}

// do sends one request and returns the status and body; header pairs are name, value.
func (c *client) do(ctx context.Context, method, path string, body []byte, header ...string) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := c.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res.StatusCode, b, err
}

func (c *client) create(ctx context.Context, key, name string, header ...string) (jobView, error) {
	header = append([]string{"Authorization", "Bearer " + key}, header...)
	code, b, err := c.do(ctx, http.MethodPost, "/v1/predictions", predictBody(name), header...)
	if err != nil {
		return jobView{}, err
	}
	if code != http.StatusAccepted {
		return jobView{}, fmt.Errorf("create: status %d: %.300s", code, b)
	}
	var j jobView
	err = json.Unmarshal(b, &j)
	return j, err
}

func (c *client) get(ctx context.Context, key, id string) (jobView, error) {
	code, b, err := c.do(ctx, http.MethodGet, "/v1/jobs/"+id, nil, "Authorization", "Bearer "+key)
	if err != nil {
		return jobView{}, err
	}
	if code != http.StatusOK {
		return jobView{}, fmt.Errorf("get: status %d: %.300s", code, b)
	}
	var j jobView
	err = json.Unmarshal(b, &j)
	return j, err
}

// throughput is the outcome of a closed-loop load phase.
type throughput struct {
	N         int           // requests completed inside the measured window
	Errors    int           // requests that failed inside the window
	FirstErr  error         // the first of them
	Window    time.Duration // the measured window
	Latencies []time.Duration
	ServerCPU time.Duration // CPU the server process used in the window
	ClientCPU time.Duration // CPU this process (the clients) used in the window
}

func (t throughput) Rate() float64 { return float64(t.N) / t.Window.Seconds() }

// add counts u, another window of the same load, into t.
func (t *throughput) add(u throughput) {
	t.N += u.N
	t.Errors += u.Errors
	if t.FirstErr == nil {
		t.FirstErr = u.FirstErr
	}
	t.Window += u.Window
	t.Latencies = append(t.Latencies, u.Latencies...)
	slices.Sort(t.Latencies)
	t.ServerCPU += u.ServerCPU
	t.ClientCPU += u.ClientCPU
}

// closedLoop runs clients goroutines, each calling op back to back, for warmup and then
// for the measured window; only requests that start and end inside the window count. The
// server's CPU is measured when srv is not nil.
func closedLoop(srv *server, clients int, warmup, window time.Duration, op func(ctx context.Context, rng *rand.Rand) error) (throughput, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	from, to := start.Add(warmup), start.Add(warmup+window)

	var (
		mu  sync.Mutex
		res = throughput{Window: window}
		wg  sync.WaitGroup
	)
	for i := range clients {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(i), uint64(start.UnixNano())))
			var lat []time.Duration
			n, errs := 0, 0
			var firstErr error
			for {
				t0 := time.Now()
				if !t0.Before(to) {
					break
				}
				err := op(ctx, rng)
				t1 := time.Now()
				if t0.Before(from) || t1.After(to) {
					continue
				}
				if err != nil {
					errs++
					if firstErr == nil {
						firstErr = err
					}
					continue
				}
				n++
				lat = append(lat, t1.Sub(t0))
			}
			mu.Lock()
			res.N += n
			res.Errors += errs
			if res.FirstErr == nil {
				res.FirstErr = firstErr
			}
			res.Latencies = append(res.Latencies, lat...)
			mu.Unlock()
		})
	}
	// CPU of both sides over the window.
	stats := func() (serverStats, error) {
		if srv == nil {
			return serverStats{}, nil
		}
		return srv.Stats()
	}
	time.Sleep(time.Until(from))
	server0, err0 := stats()
	client0 := selfCPU()
	time.Sleep(time.Until(to))
	server1, err1 := stats()
	client1 := selfCPU()
	wg.Wait()
	if err := errors.Join(err0, err1); err != nil {
		return res, err
	}
	res.ServerCPU = server1.CPU - server0.CPU
	res.ClientCPU = client1 - client0
	slices.Sort(res.Latencies)
	return res, nil
}

// percentile of sorted durations, nearest rank.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p/100+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// parseTime reads the API's RFC 3339 timestamps.
func parseTime(s string) (time.Time, error) { return time.Parse(time.RFC3339Nano, s) }

// waitRunning polls a job until its worker has leased it.
func waitRunning(ctx context.Context, c *client, key, id string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		j, err := c.get(ctx, key, id)
		if err != nil {
			return err
		}
		switch j.Status {
		case "running":
			return nil
		case "queued":
		default:
			return fmt.Errorf("job %s is %s, expected it to run: %s", id, j.Status, j.Error)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("job %s never started: %w", id, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// pickup is the outcome of the serial submit-to-running samples.
type pickup struct {
	Server []time.Duration // started_at − created_at, both stamped by the server
	Seen   []time.Duration // client: send until a GET first shows the job leased
	Done   []time.Duration // client: send until a long-poll shows the job succeeded
}

// measurePickup submits samples "ok" jobs one at a time to a server whose worker is idle.
// After each create it polls the job without a hold until it is no longer queued (a
// long-poll would only answer once the job has ended), then holds with Prefer: wait until
// it has ended.
func measurePickup(ctx context.Context, c *client, key string, samples int, gap time.Duration) (pickup, error) {
	var p pickup
	for range samples {
		sent := time.Now()
		j, err := c.create(ctx, key, "ok")
		for err == nil && j.Status == "queued" {
			j, err = c.get(ctx, key, j.ID)
		}
		seen := time.Now()
		if err != nil {
			return p, err
		}
		code, b, err := c.do(ctx, http.MethodGet, "/v1/jobs/"+j.ID, nil, "Authorization", "Bearer "+key, "Prefer", "wait=30")
		done := time.Now()
		if err == nil && code != http.StatusOK {
			err = fmt.Errorf("get: status %d: %.300s", code, b)
		}
		if err == nil {
			err = json.Unmarshal(b, &j)
		}
		if err != nil {
			return p, err
		}
		if j.Status != "succeeded" {
			return p, fmt.Errorf("job %s is %s after the hold, expected succeeded: %s", j.ID, j.Status, j.Error)
		}
		created, err1 := parseTime(j.CreatedAt)
		started, err2 := parseTime(j.StartedAt)
		if err := errors.Join(err1, err2); err != nil {
			return p, err
		}
		p.Server = append(p.Server, started.Sub(created))
		p.Seen = append(p.Seen, seen.Sub(sent))
		p.Done = append(p.Done, done.Sub(sent))
		// Let the worker finish its bookkeeping (work folder removal) and go idle.
		time.Sleep(gap)
	}
	for _, d := range [][]time.Duration{p.Server, p.Seen, p.Done} {
		slices.Sort(d)
	}
	return p, nil
}

// waiters is the outcome of the held long-polls.
type waiters struct {
	N                     int
	Before, During, After serverStats   // After: once released and their goroutines gone
	CPU                   time.Duration // server CPU over Hold while all were held
	Hold                  time.Duration
	Early                 int   // long-polls that ended before they were released
	FirstErr              error // why the first of them ended
}

// holdWaiters opens n connections, each holding GET /v1/jobs/{id} with Prefer: wait=60 on
// a job that never ends, and measures the server process before, while they are held, and
// after they were released.
// With profileDir set, the server's CPU profile over the hold and its heap profile while
// the long-polls are held are written there.
func holdWaiters(srv *server, key, id string, n int, hold time.Duration, profileDir string) (waiters, error) {
	w := waiters{N: n, Hold: hold}
	before, err := srv.Mem()
	if err != nil {
		return w, err
	}
	w.Before = before

	c := newClient(srv.URL, n)
	defer c.close()
	ctx, release := context.WithCancel(context.Background())
	var (
		wg       sync.WaitGroup
		released atomic.Bool
		mu       sync.Mutex
	)
	for range n {
		wg.Go(func() {
			code, _, err := c.do(ctx, http.MethodGet, "/v1/jobs/"+id, nil,
				"Authorization", "Bearer "+key, "Prefer", "wait=60")
			if err == nil {
				err = fmt.Errorf("answered %d before it was released", code)
			}
			if !released.Load() {
				mu.Lock()
				w.Early++
				if w.FirstErr == nil {
					w.FirstErr = err
				}
				mu.Unlock()
			}
		})
	}
	stop := sync.OnceFunc(func() {
		released.Store(true)
		release()
		wg.Wait()
	})
	defer stop()

	// Wait until the server holds them all, as its metrics say.
	metrics := newClient(srv.URL, 1)
	defer metrics.close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		held, err := heldRequests(metrics)
		if err != nil {
			return w, err
		}
		if held >= n {
			break
		}
		if time.Now().After(deadline) {
			return w, fmt.Errorf("only %d of %d waiters reached the server", held, n)
		}
		time.Sleep(250 * time.Millisecond)
	}
	if profileDir != "" {
		if err := srv.StartProfile(filepath.Join(profileDir, "waiters-cpu.pprof")); err != nil {
			return w, err
		}
	}
	s0, err := srv.Stats()
	if err != nil {
		return w, err
	}
	time.Sleep(hold)
	s1, err := srv.Stats()
	if err != nil {
		return w, err
	}
	if profileDir != "" {
		if err := srv.StopProfile(); err != nil {
			return w, err
		}
	}
	w.CPU = s1.CPU - s0.CPU
	if w.During, err = srv.Mem(); err != nil {
		return w, err
	}
	if profileDir != "" {
		if err := srv.WriteHeapProfile(filepath.Join(profileDir, "waiters-heap.pprof")); err != nil {
			return w, err
		}
	}
	stop() // w.Early is final once every waiter has returned
	for range 40 {
		held, err := heldRequests(metrics)
		if err != nil {
			return w, err
		}
		if held == 0 {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	w.After, err = srv.Mem()
	return w, err
}

// heldRequests reads from the server's metrics how many requests it holds.
func heldRequests(c *client) (int, error) {
	code, b, err := c.do(context.Background(), http.MethodGet, "/metrics", nil)
	if err == nil && code != http.StatusOK {
		err = fmt.Errorf("metrics: status %d", code)
	}
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "chaperone_held_requests "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return int(f), err
		}
	}
	return 0, errors.New("the server's metrics have no chaperone_held_requests")
}
