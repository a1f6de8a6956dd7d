package scaleout

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/align/aligntest"
	"github.com/chaperone-bio/chaperone/apikey"
	"github.com/chaperone-bio/chaperone/app"
	"github.com/chaperone-bio/chaperone/catalog"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/enginetest"
	"github.com/chaperone-bio/chaperone/store/postgres/pgtest"
)

// replicaEnv, when set to "DATABASE ARTIFACTS DIR", makes the test binary a serve replica
// without a worker, so that a test can kill it with SIGKILL.
const replicaEnv = "CHAPERONE_SCALEOUT_REPLICA"

// msaEnv gives a replica process the stand-in ColabFold server it searches on: the test
// process's one (standInMSA), which every replica of every test shares, as the replicas of
// a deployment share their MSA server.
const msaEnv = "CHAPERONE_SCALEOUT_MSA"

var standInMSA = sync.OnceValue(func() *aligntest.ColabFold { return aligntest.NewColabFold(0) })

// runReplica serves until SIGTERM, as startReplica's replicas do, and prints its URL. Its
// quotas are lifted: the chaos suite creates more jobs a minute than an owner may.
func runReplica(args []string) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	loc := app.Locations{Store: args[0], Artifacts: args[1], DataDir: args[2]}
	stores, err := app.OpenStoresAt(ctx, loc)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer stores.Close()
	limits := catalog.DefaultLimits()
	limits.ActiveJobsPerOwner, limits.CreatesPerMinute = 10000, 10000
	a, err := app.Start(ctx, app.Config{Store: stores.Jobs, Artifacts: stores.Artifacts, Addr: "127.0.0.1:0",
		DataDir: loc.DataDir, Logger: slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
		Limits: limits, NoWorker: true, Engines: []engine.Engine{enginetest.New("boltz2")}, MSAServerURL: os.Getenv(msaEnv),
		Heartbeat: 100 * time.Millisecond, ReapEvery: 200 * time.Millisecond, LeaseTTL: 2 * time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(a.URL)
	<-ctx.Done()
	a.Close()
}

// replica is a serve replica in a process of its own.
type replica struct {
	cmd *exec.Cmd
	url string
}

func startReplicaProcess(t *testing.T, dbURL, artifacts string) *replica {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %s %s", replicaEnv, dbURL, artifacts, t.TempDir()), msaEnv+"="+standInMSA().URL)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the replica printed no URL: %v", err)
	}
	return &replica{cmd: cmd, url: strings.TrimSpace(line)}
}

func (r *replica) kill() {
	r.cmd.Process.Signal(syscall.SIGKILL)
	r.cmd.Wait()
}

// balancer is a load balancer in front of the replicas, as an operator's would be: each
// request goes to the next live replica, and to the one after when it cannot connect; a
// replica that dies with a request in hand leaves its client a 502, which the client may
// send again (proxy_next_upstream of nginx, for a request it sent, does not).
type balancer struct {
	mu       sync.Mutex
	backends []string
	next     int
	// appending receives the replica of each log append as it is passed on, when the
	// test waits for one; cutAppends counts those that a replica died in the middle of.
	appending  chan string
	cutAppends atomic.Int64
	transport  *http.Transport
}

func newBalancer() *balancer {
	return &balancer{appending: make(chan string), transport: &http.Transport{DisableKeepAlives: true}}
}

// isAppend reports whether r is a worker's log append.
func isAppend(r *http.Request) bool {
	return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/log")
}

func (b *balancer) set(backends ...string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.backends = backends
}

// order is the replicas to try, starting with the next in turn.
func (b *balancer) order() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.next++
	out := make([]string, len(b.backends))
	for i := range b.backends {
		out[i] = b.backends[(b.next+i)%len(b.backends)]
	}
	return out
}

func (b *balancer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "reading the request", http.StatusBadRequest)
		return
	}
	for _, backend := range b.order() {
		req, err := http.NewRequestWithContext(r.Context(), r.Method, backend+r.URL.RequestURI(), bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		req.Header = r.Header.Clone()
		if isAppend(r) {
			select {
			case b.appending <- backend:
			default:
			}
		}
		res, err := b.transport.RoundTrip(req)
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			continue // nothing was sent: the next replica
		}
		if err != nil {
			if isAppend(r) {
				b.cutAppends.Add(1)
			}
			http.Error(w, "the replica went away", http.StatusBadGateway)
			return
		}
		for k, v := range res.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(res.StatusCode)
		io.Copy(w, res.Body)
		res.Body.Close()
		return
	}
	http.Error(w, "no replica", http.StatusBadGateway)
}

// createThrough creates a slow job through the balancer, sending the create again under
// its idempotency key until a replica answers it.
func createThrough(t *testing.T, url, key string, steps int) string {
	t.Helper()
	body := fmt.Sprintf(`{"model":"boltz2","sequence":"MKTAYIAKQRQISFVKSHFSRQ","name":"slow:%d"}`, steps)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		req, _ := http.NewRequest(http.MethodPost, url+"/v1/predictions", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusAccepted || res.StatusCode == http.StatusOK {
				return strings.TrimPrefix(res.Header.Get("Location"), "/v1/jobs/")
			}
		}
	}
	t.Fatalf("the create with key %s was not answered within 30 s", key)
	return ""
}

// get reads path through the balancer, again while no replica answers it.
func getThrough(t *testing.T, url, path string, headers ...string) []byte {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		req, _ := http.NewRequest(http.MethodGet, url+path, nil)
		for _, h := range headers {
			k, v, _ := strings.Cut(h, ": ")
			req.Header.Set(k, v)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			continue
		}
		b, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err == nil && res.StatusCode == http.StatusOK {
			return b
		}
	}
	t.Fatalf("GET %s was not answered within 30 s", path)
	return nil
}

// logDamage reads a job's run log as the worker wrote it and counts the lines lost (a
// step missing from an attempt's run of steps, a succeeded attempt's end missing, output
// before any attempt header) and the lines duplicated within an attempt.
func logDamage(log string, steps int, succeeded bool) (lost, duplicated int) {
	var sections [][]string
	for line := range strings.Lines(log) {
		if strings.HasPrefix(line, "== chaperone: attempt ") {
			sections = append(sections, nil)
		}
		if len(sections) == 0 {
			lost++ // output before its attempt's header: the header is lost
			continue
		}
		sections[len(sections)-1] = append(sections[len(sections)-1], strings.TrimSuffix(line, "\n"))
	}
	for i, sec := range sections {
		seen := map[string]bool{}
		next := 1
		for _, line := range sec {
			if seen[line] {
				duplicated++
			}
			seen[line] = true
			var n, of int
			if _, err := fmt.Sscanf(line, "step %d/%d", &n, &of); err == nil {
				if n > next {
					lost += n - next
				}
				next = max(next, n+1)
			}
		}
		if i == len(sections)-1 && succeeded {
			lost += steps + 1 - next
			for _, end := range []string{"wrote 1 outputs", "== chaperone: job succeeded"} {
				if !strings.Contains(strings.Join(sec, "\n"), end) {
					lost++
				}
			}
		}
	}
	if len(sections) == 0 {
		lost++
	}
	return lost, duplicated
}

// TestChaosReplicaSIGKILLs is the chaos suite across replicas: two serve replicas on one
// PostgreSQL database and one artifact folder, behind a load balancer, and two remote
// workers that reach them through it. CHAOS_ROUNDS times (default 6) a replica is
// SIGKILLed as a log append reaches it, at a random moment of the jobs that run meanwhile,
// and a new replica takes its place. Then every job has ended, succeeded, and
// its log is whole: every line of every attempt, once, in order. The workers' own logs
// are JSON throughout.
func TestChaosReplicaSIGKILLs(t *testing.T) {
	rounds := 6
	if n, err := strconv.Atoi(os.Getenv("CHAOS_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 23))
	t.Logf("chaos seed %d, %d rounds", seed, rounds)
	dbURL, artifacts := pgtest.Database(t), t.TempDir()
	replicas := []*replica{startReplicaProcess(t, dbURL, artifacts), startReplicaProcess(t, dbURL, artifacts)}
	lb := newBalancer()
	lb.set(replicas[0].url, replicas[1].url)
	front := httptest.NewServer(lb)
	t.Cleanup(front.Close)

	stores, err := app.OpenStoresAt(context.Background(), app.Locations{DataDir: t.TempDir(), Store: dbURL, Artifacts: artifacts})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stores.Close() })
	token, rec := apikey.New("gpu-nodes", time.Now())
	rec.Worker = true
	if err := stores.Jobs.CreateKey(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	var workerLogs [2]syncBuffer
	for i := range workerLogs {
		startWorkerLogging(t, front.URL, token, fmt.Sprintf("gpu-%d", i+1), t.TempDir(), &workerLogs[i])
	}

	const steps = 20 // two seconds of output, a line every 100 ms
	var ids []string
	for round := range rounds {
		for k := range 2 {
			ids = append(ids, createThrough(t, front.URL, fmt.Sprintf("r%d-%d", round, k), steps))
		}
		time.Sleep(time.Duration(300+rng.IntN(1200)) * time.Millisecond)
		// The kill lands as a log append reaches the victim: in the middle of it, or just
		// before or after.
		victim := round % 2
		for wait := time.After(5 * time.Second); ; {
			select {
			case backend := <-lb.appending:
				if backend != replicas[victim].url {
					continue
				}
			case <-wait:
				t.Fatalf("round %d: no log append reached the replica in 5 s", round)
			}
			break
		}
		replicas[victim].kill()
		lb.set(replicas[1-victim].url)
		replicas[victim] = startReplicaProcess(t, dbURL, artifacts)
		lb.set(replicas[0].url, replicas[1].url)
	}

	var lost, duplicated, attempts int
	for _, id := range ids {
		var j map[string]any
		for deadline := time.Now().Add(90 * time.Second); j["status"] != "succeeded" && j["status"] != "failed"; {
			if time.Now().After(deadline) {
				t.Fatalf("job %s has not ended 90 s after the last kill: %v", id, j)
			}
			if err := json.Unmarshal(getThrough(t, front.URL, "/v1/jobs/"+id, "Prefer: wait=5"), &j); err != nil {
				t.Fatal(err)
			}
		}
		if j["status"] != "succeeded" {
			t.Errorf("job %s %s: %v", id, j["status"], j["error"])
		}
		log := string(getThrough(t, front.URL, "/v1/jobs/"+id+"/logs"))
		l, d := logDamage(log, steps, j["status"] == "succeeded")
		if l+d > 0 {
			t.Errorf("job %s: its log lost %d lines and holds %d twice:\n%s", id, l, d, log)
		}
		lost, duplicated = lost+l, duplicated+d
		attempts += strings.Count(log, "== chaperone: attempt ")
	}
	for i := range workerLogs {
		for line := range strings.Lines(workerLogs[i].String()) {
			if !json.Valid([]byte(line)) {
				t.Errorf("worker gpu-%d logged a line that is not JSON: %q", i+1, line)
			}
		}
	}
	t.Logf("%d rounds across replicas: %d replicas SIGKILLed, %d log appends cut by a kill, %d jobs in %d attempts, %d log lines lost, %d duplicated",
		rounds, rounds, lb.cutAppends.Load(), len(ids), attempts, lost, duplicated)
}

// syncBuffer is a buffer that a process's output and the test may use at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
