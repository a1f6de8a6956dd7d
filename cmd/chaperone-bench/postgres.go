package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chaperone-bio/chaperone/apikey"
	"github.com/chaperone-bio/chaperone/app"
	"github.com/chaperone-bio/chaperone/catalog"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/enginetest"
	"github.com/chaperone-bio/chaperone/store/postgres"
	"github.com/chaperone-bio/chaperone/store/postgres/pgtest"
	"github.com/chaperone-bio/chaperone/worker/remote"
)

// replicaCounts are the deployments the PostgreSQL phase measures.
var replicaCounts = []int{1, 2, 4}

// postgresSamples caps the serial samples of the PostgreSQL phase (wake-ups, pickups).
const postgresSamples = 50

// scaleFigures are the PostgreSQL figures of one deployment.
type scaleFigures struct {
	replicas int
	creates  throughput
	wake     []time.Duration // a cancel through one replica until a wait held on another answers
	pickup   pickup          // a create through one replica until the remote worker, on another, runs it
}

// postgresPhases measures deployments of 1, 2 and 4 serve replicas (child processes,
// --no-worker) on one durable PostgreSQL cluster started for the run, with one remote
// worker (in this process, over HTTP with a worker token). It returns nil figures when
// PostgreSQL is not installed.
func postgresPhases(o options, root string, limits catalog.Limits) ([]scaleFigures, error) {
	cluster, err := pgtest.StartDurable()
	if errors.Is(err, pgtest.ErrNotInstalled) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer cluster.Stop()
	var out []scaleFigures
	for _, n := range replicaCounts {
		f, err := measureReplicas(o, cluster, filepath.Join(root, fmt.Sprintf("pg-%d", n)), n, limits)
		if err != nil {
			return nil, fmt.Errorf("%d replicas: %w", n, err)
		}
		out = append(out, f)
	}
	return out, nil
}

func measureReplicas(o options, cluster *pgtest.Cluster, dir string, n int, limits catalog.Limits) (scaleFigures, error) {
	f := scaleFigures{replicas: n}
	ctx := context.Background()
	dbURL, err := cluster.CreateDatabase(ctx, fmt.Sprintf("bench_%d", n))
	if err != nil {
		return f, err
	}
	// The schema and the keys, before the replicas start.
	st, err := postgres.Open(ctx, dbURL)
	if err != nil {
		return f, err
	}
	keys := make([]string, o.owners)
	for i := range keys {
		key, rec := apikey.New(fmt.Sprintf("bench-%d", i), time.Now())
		if err := st.CreateKey(ctx, rec); err != nil {
			st.Close()
			return f, err
		}
		keys[i] = key
	}
	token, rec := apikey.New("bench-gpu", time.Now())
	rec.Worker = true
	err = st.CreateKey(ctx, rec)
	st.Close()
	if err != nil {
		return f, err
	}

	clients := make([]*client, n)
	for i := range n {
		srv, err := startServer(childConfig{DataDir: filepath.Join(dir, fmt.Sprint("replica-", i)), Limits: limits,
			LogLevel: o.logLevel, Store: dbURL})
		if err != nil {
			return f, err
		}
		defer srv.Close()
		clients[i] = newClient(srv.URL, o.clients)
		defer clients[i].close()
	}
	// The worker talks to the first replica; creates and waits go to the last, so that with
	// more than one replica every figure crosses replicas.
	first, last := clients[0], clients[n-1]
	stopWorker, err := startRemoteWorker(first.base, token, filepath.Join(dir, "worker"))
	if err != nil {
		return f, err
	}
	defer stopWorker()

	// The worker's one slot hangs on a job, so that every create stays queued.
	hang, err := last.create(ctx, keys[0], "hang")
	if err != nil {
		return f, err
	}
	if err := waitRunning(ctx, last, keys[0], hang.ID); err != nil {
		return f, err
	}
	f.creates, err = closedLoop(nil, o.clients, o.warmup, o.duration,
		func(ctx context.Context, rng *rand.Rand) error {
			_, err := clients[rng.IntN(n)].create(ctx, keys[rng.IntN(len(keys))], "ok")
			return err
		})
	if err != nil {
		return f, err
	}
	if f.wake, err = measureWake(ctx, first, last, keys[0], min(o.samples, postgresSamples)); err != nil {
		return f, err
	}
	// Free the worker, and empty the queue the creates filled, so that it is idle.
	if _, _, err := first.do(ctx, http.MethodPost, "/v1/jobs/"+hang.ID+"/cancel", nil, "Authorization", "Bearer "+keys[0]); err != nil {
		return f, err
	}
	if err := cancelQueued(ctx, dbURL); err != nil {
		return f, err
	}
	f.pickup, err = measurePickup(ctx, last, keys[0], min(o.samples, postgresSamples), o.gap)
	return f, err
}

// cancelQueued ends every queued job, as their owners would, so that the worker leases
// only the jobs of the pickup samples.
func cancelQueued(ctx context.Context, dbURL string) error {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `UPDATE jobs SET status = 'canceled', finished_at = now() WHERE status = 'queued'`)
	return err
}

// startRemoteWorker runs chaperone worker's worker, with the test engine, against server.
func startRemoteWorker(server, token, dir string) (stop func(), err error) {
	q, err := remote.NewClient(server, token)
	if err != nil {
		return nil, err
	}
	w, err := app.NewWorker(app.WorkerConfig{ID: "bench-remote", Slots: 1, DataDir: dir,
		Engines: []engine.Engine{enginetest.New(benchModels...)}, Queue: q,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := w.Start(ctx); err != nil {
		cancel()
		return nil, err
	}
	return func() { cancel(); w.Wait() }, nil
}

// measureWake holds a Prefer: wait on a queued job through waiter, cancels the job through
// canceler, and times from sending the cancel until the wait answers.
func measureWake(ctx context.Context, canceler, waiter *client, key string, samples int) ([]time.Duration, error) {
	var out []time.Duration
	for range samples {
		j, err := canceler.create(ctx, key, "ok")
		if err != nil {
			return nil, err
		}
		answered := make(chan time.Time, 1)
		errs := make(chan error, 1)
		go func() {
			code, b, err := waiter.do(ctx, http.MethodGet, "/v1/jobs/"+j.ID, nil, "Authorization", "Bearer "+key, "Prefer", "wait=30")
			if err == nil && code != http.StatusOK {
				err = fmt.Errorf("wait: status %d: %.300s", code, b)
			}
			errs <- err
			answered <- time.Now()
		}()
		if err := awaitHeld(waiter, 1); err != nil {
			return nil, err
		}
		sent := time.Now()
		code, b, err := canceler.do(ctx, http.MethodPost, "/v1/jobs/"+j.ID+"/cancel", nil, "Authorization", "Bearer "+key)
		if err == nil && code != http.StatusOK {
			err = fmt.Errorf("cancel: status %d: %.300s", code, b)
		}
		if err := errors.Join(err, <-errs); err != nil {
			return nil, err
		}
		out = append(out, (<-answered).Sub(sent))
	}
	slices.Sort(out)
	return out, nil
}

// awaitHeld waits until the server of c holds n requests.
func awaitHeld(c *client, n int) error {
	for deadline := time.Now().Add(10 * time.Second); ; {
		held, err := heldRequests(c)
		if err != nil || held >= n {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the server holds %d requests after 10 s, want %d", held, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// reportPostgres prints the figures of the PostgreSQL phase.
func reportPostgres(out io.Writer, figs []scaleFigures) {
	fmt.Fprintln(out)
	if figs == nil {
		fmt.Fprintln(out, "PostgreSQL: not measured (no PostgreSQL server binaries; Debian: apt-get install postgresql)")
		return
	}
	fmt.Fprint(out, wrap("PostgreSQL (a local cluster started for the run, fsync and synchronous_commit on): "+
		"serve replicas in child processes without workers, one remote worker in this process over HTTP "+
		"(worker token) talking to the first replica; creates are spread over all replicas, waits and "+
		"pickups go to the last one, so with 2 or 4 replicas they cross replicas. All on this one machine: "+
		"the replicas, the database and the clients share its cores.", 100, ""))
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "replicas\tcreates/s\tcreate p50\twake-up p50\twake-up p95\tpickup p50 (server)\tpickup p95 (server)\t")
	for _, f := range figs {
		fmt.Fprintf(tw, "%d\t%.0f\t%s\t%s\t%s\t%s\t%s\t\n", f.replicas, f.creates.Rate(),
			ms(percentile(f.creates.Latencies, 50)), ms(percentile(f.wake, 50)), ms(percentile(f.wake, 95)),
			ms(percentile(f.pickup.Server, 50)), ms(percentile(f.pickup.Server, 95)))
	}
	tw.Flush()
	for _, f := range figs {
		if note := errNote(f.creates); note != "" {
			fmt.Fprintf(out, "%d replicas: %d creates failed.%s\n", f.replicas, f.creates.Errors, note)
		}
	}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
