// Package worker runs jobs: it leases them from a Queue, drives each through its engine in
// a work folder of its own, keeps the lease alive with heartbeats that also carry progress,
// enforces the runtime and stall caps, stops the job's process tree when the lease is lost
// (cancel, delete, expiry), and completes the job with one write fenced by its attempt.
// Warm engines (engine.Warm) keep a session per slot between jobs; see slotState.
//
// worker.go starts the worker, runs its slots' lease loops, drains and stops it; run.go
// runs one leased job through its engine to its completion, heartbeat.go keeps that job's
// lease and enforces the caps, upload.go stores its files, joblog.go ships its run log;
// announce.go keeps the server told what the worker can run; sessions.go holds the slots'
// warm sessions; leftovers.go kills what a crashed run left behind.
//
// The worker reaches the server only through Queue, in the protocol's own wire types, so
// that it runs the same in the server's process and on another machine. It imports engine,
// engine/proc, job and align of chaperone's packages, never store or artifact.
package worker

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/job"
)

// Config is a worker's setup.
type Config struct {
	ID    string // stable across restarts, so a restarted worker can release its old jobs
	Slots int    // jobs run at once
	// GPUs are the CUDA device ids this worker may use. Slot i runs its jobs with
	// CUDA_VISIBLE_DEVICES set to GPUs[i mod len(GPUs)], so one slot per GPU keeps every
	// job on a GPU of its own. Empty means no GPU (the variable is left alone).
	GPUs    []string
	Engines *engine.Registry
	Tools   engine.Tools
	Queue   Queue
	WorkDir string // parent of the per-job work folders
	// Runtime caps a job per kind; Stall fails a job that shows no progress and no log
	// output for that long. Zero means no cap.
	Runtime map[job.Kind]time.Duration
	Stall   time.Duration
	// LeaseWait is how long one lease request of an idle slot waits for work at the
	// server. How long leases last and how often they are renewed is the server's setting
	// (Timing): a cancel reaches the process tree within Timing.Heartbeat plus the process
	// group's termination grace.
	LeaseWait time.Duration
	// Recheck is how often the engines are checked again, so that a tool installed while
	// the worker runs becomes available without a restart.
	Recheck time.Duration
	Logger  *slog.Logger
}

// Worker runs jobs from a queue until its context ends.
type Worker struct {
	cfg     Config
	log     *slog.Logger
	refusal Refusal
	wg      sync.WaitGroup
	// leasing ends when the worker stops taking work: at Drain, or when its context ends.
	leasing     context.Context
	stopLeasing context.CancelFunc
	running     sync.WaitGroup // the slot goroutines, which Drain waits for

	mu     sync.Mutex
	avail  engine.Availability
	timing Timing
	slots  []*slotState
}

// leaseRetry is how long a slot waits after a failed lease request before the next.
const leaseRetry = time.Second

// New makes a worker; zero durations take working defaults.
func New(cfg Config) *Worker {
	if cfg.Slots < 1 {
		cfg.Slots = 1
	}
	if cfg.LeaseWait == 0 {
		cfg.LeaseWait = 30 * time.Second
	}
	if cfg.Recheck == 0 {
		cfg.Recheck = time.Minute
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	w := &Worker{cfg: cfg, log: cfg.Logger.With("worker", cfg.ID)}
	for i := range cfg.Slots {
		s := &slotState{index: i}
		if len(cfg.GPUs) > 0 {
			s.gpu = cfg.GPUs[i%len(cfg.GPUs)]
		}
		w.slots = append(w.slots, s)
	}
	return w
}

// Start checks the engines, hands back what an earlier run of this worker held, announces
// the worker, and starts its slots, which run until ctx ends. When Start returns, the
// worker is visible to the API as live.
func (w *Worker) Start(ctx context.Context) error {
	if n := killLeftovers(w.cfg.WorkDir); n > 0 {
		w.log.Warn("killed processes left running by an earlier run of this worker", "processes", n)
	}
	// Work folders of an earlier run belong to attempts that are over.
	if err := os.RemoveAll(w.cfg.WorkDir); err != nil {
		return fmt.Errorf("worker: clearing old work folders: %w", err)
	}
	w.checkEngines(ctx)
	// Whatever an earlier run of this worker held died with it.
	if err := w.cfg.Queue.ReleaseWorker(ctx, w.cfg.ID); err != nil {
		return fmt.Errorf("worker: releasing jobs of a previous run: %w", err)
	}
	if err := w.announce(ctx); err != nil {
		return fmt.Errorf("worker: announcing: %w", err)
	}
	ctx = w.refusal.Arm(ctx)
	w.leasing, w.stopLeasing = context.WithCancel(ctx)
	for _, s := range w.slots {
		w.running.Add(1)
		w.wg.Go(func() {
			defer w.running.Done()
			w.slot(ctx, s)
		})
	}
	w.wg.Go(func() { w.keepAnnouncing(ctx) })
	w.wg.Go(func() { w.keepChecking(ctx) })
	return nil
}

// Stopped is closed when the worker stopped on its own, the server having refused its
// token; Wait then returns ErrRevoked.
func (w *Worker) Stopped() <-chan struct{} { return w.refusal.Stopped() }

// Drain stops the worker taking work and returns once the jobs it runs have ended, or with
// ctx's error when ctx ends first. The worker still renews its leases meanwhile; ending its
// context then stops what still runs, and Wait hands it back. A rolling restart drains each
// worker before it stops, so that no job is cut off that could finish in time.
func (w *Worker) Drain(ctx context.Context) error {
	w.stopLeasing()
	drained := make(chan struct{})
	go func() {
		w.running.Wait()
		close(drained)
	}()
	select {
	case <-drained:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Wait returns once the worker has stopped after its context ended: running jobs were
// stopped and handed back to the queue at once rather than after their lease expires,
// without counting against their attempt limit (the worker stopped them; they did nothing
// wrong), and the slots' sessions were closed.
// A worker the server refused hands nothing back (it would be refused too) and returns
// ErrRevoked.
func (w *Worker) Wait() error {
	w.wg.Wait()
	if err := w.refusal.Err(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.cfg.Queue.HandBack(ctx, w.cfg.ID); err != nil {
		w.log.Warn("handing back jobs at shutdown", "error", err.Error())
	}
	return w.cfg.Queue.RemoveWorker(ctx, w.cfg.ID)
}

// slot runs one job at a time on its GPU: lease (waiting at the server for work), run,
// repeat, until the worker stops leasing. When it stops, it closes its session.
func (w *Worker) slot(ctx context.Context, s *slotState) {
	defer w.closeSession(s)
	for w.leasing.Err() == nil {
		l, err := w.cfg.Queue.Lease(w.leasing, LeaseRequest{WorkerID: w.cfg.ID, Models: w.models(),
			Loaded: w.loadedModels(), Wait: w.cfg.LeaseWait})
		if err != nil && w.leasing.Err() == nil && !w.refusal.Check(err) {
			w.log.Warn("lease failed", "error", err.Error())
			select {
			case <-time.After(leaseRetry):
			case <-w.leasing.Done():
			}
		}
		if l == nil {
			continue
		}
		w.run(ctx, l, s)
	}
}
