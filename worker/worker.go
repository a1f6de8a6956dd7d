// Package worker runs jobs: it leases them from a Queue, drives each through its engine in
// a work folder of its own, keeps the lease alive with heartbeats that also carry progress,
// enforces the runtime and stall caps, stops the job's process tree when the lease is lost
// (cancel, delete, expiry), and completes the job with one write fenced by its attempt.
package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/store"
	"github.com/chaperone-bio/chaperone/worker/proc"
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
	// CacheDir is the parent of the engines' cache folders, which outlive jobs and restarts
	// (see engine.Run.CacheDir); empty for none.
	CacheDir string
	// Runtime caps a job per kind; Stall fails a job that shows no progress and no log
	// output for that long. Zero means no cap.
	Runtime map[job.Kind]time.Duration
	Stall   time.Duration
	// LeaseTTL is how long a lease lasts without a heartbeat; Heartbeat is how often a
	// running job reports. A cancel reaches the process tree within Heartbeat plus the
	// process group's termination grace.
	LeaseTTL  time.Duration
	Heartbeat time.Duration
	// Poll is how often an idle slot looks for work when no notification came, a backstop
	// for notifications a remote queue cannot deliver.
	Poll time.Duration
	// Recheck is how often the engines are checked again, so that a tool installed while
	// the worker runs becomes available without a restart.
	Recheck time.Duration
	Logger  *slog.Logger
}

// Worker runs jobs from a queue until its context ends.
type Worker struct {
	cfg  Config
	log  *slog.Logger
	busy atomic.Int32
	wg   sync.WaitGroup

	mu     sync.Mutex
	avail  engine.Availability
	loaded map[string]time.Time // models run recently, so the scheduler can prefer us for them
}

// Causes a running job's context can end with.
var (
	errLeaseLost  = errors.New("lease lost")
	errRuntimeCap = errors.New("runtime cap")
	errStall      = errors.New("stall cap")
)

// Lease timing defaults, shared with whoever wires a worker to an API that judges
// liveness by the same TTL.
const (
	DefaultLeaseTTL  = 30 * time.Second
	DefaultHeartbeat = time.Second
)

// New makes a worker; zero durations take working defaults.
func New(cfg Config) *Worker {
	if cfg.Slots < 1 {
		cfg.Slots = 1
	}
	if cfg.LeaseTTL == 0 {
		cfg.LeaseTTL = DefaultLeaseTTL
	}
	if cfg.Heartbeat == 0 {
		cfg.Heartbeat = DefaultHeartbeat
	}
	if cfg.Poll == 0 {
		cfg.Poll = 5 * time.Second
	}
	if cfg.Recheck == 0 {
		cfg.Recheck = time.Minute
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Worker{cfg: cfg, log: cfg.Logger.With("worker", cfg.ID), loaded: map[string]time.Time{}}
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
	if err := w.cfg.Queue.ReleaseWorker(ctx, w.cfg.ID, time.Now()); err != nil {
		return fmt.Errorf("worker: releasing jobs of a previous run: %w", err)
	}
	if err := w.announce(ctx); err != nil {
		return fmt.Errorf("worker: announcing: %w", err)
	}
	for i := range w.cfg.Slots {
		gpu := ""
		if len(w.cfg.GPUs) > 0 {
			gpu = w.cfg.GPUs[i%len(w.cfg.GPUs)]
		}
		w.wg.Go(func() { w.slot(ctx, gpu) })
	}
	w.wg.Go(func() { w.keepAnnouncing(ctx) })
	w.wg.Go(func() { w.keepChecking(ctx) })
	return nil
}

// Wait returns once the worker has stopped after its context ended: running jobs were
// stopped and handed back to the queue at once rather than after their lease expires.
func (w *Worker) Wait() error {
	w.wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.cfg.Queue.ReleaseWorker(ctx, w.cfg.ID, time.Now()); err != nil {
		w.log.Warn("releasing jobs at shutdown", "error", err.Error())
	}
	return w.cfg.Queue.RemoveWorker(ctx, w.cfg.ID)
}

func (w *Worker) checkEngines(ctx context.Context) {
	a := w.cfg.Engines.Check(ctx, w.cfg.Tools)
	w.mu.Lock()
	w.avail = a
	w.mu.Unlock()
	for m, why := range a.Missing {
		w.log.Info("model unavailable on this worker", "model", m, "reason", why)
	}
}

func (w *Worker) models() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.avail.Models
}

func (w *Worker) announce(ctx context.Context) error {
	w.mu.Lock()
	rec := store.Worker{ID: w.cfg.ID, Models: w.avail.Models, Missing: w.avail.Missing,
		Slots: w.cfg.Slots, Busy: int(w.busy.Load()), SeenAt: time.Now()}
	w.mu.Unlock()
	return w.cfg.Queue.PutWorker(ctx, rec)
}

// keepAnnouncing refreshes the worker's liveness.
func (w *Worker) keepAnnouncing(ctx context.Context) {
	// A worker counts as live for one lease TTL after it announced itself (app wires the
	// API so), so announce three times per TTL.
	announce := time.NewTicker(w.cfg.LeaseTTL / 3)
	defer announce.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-announce.C:
		}
		if err := w.announce(ctx); err != nil && ctx.Err() == nil {
			w.log.Warn("worker heartbeat failed", "error", err.Error())
		}
	}
}

// keepChecking re-checks the engines now and then. It runs apart from keepAnnouncing: a
// check may take minutes (a tool that is slow to start), and the worker must not look dead
// to the API meanwhile, which would refuse creates for every model it serves.
func (w *Worker) keepChecking(ctx context.Context) {
	recheck := time.NewTicker(w.cfg.Recheck)
	defer recheck.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-recheck.C:
			w.checkEngines(ctx)
		}
	}
}

// slot runs one job at a time on its GPU (none if gpu is empty): lease, run, repeat; idle,
// it waits for a notification.
func (w *Worker) slot(ctx context.Context, gpu string) {
	wake := w.cfg.Queue.WorkAvailable(ctx)
	for ctx.Err() == nil {
		var j *job.Job
		if models := w.models(); len(models) > 0 {
			now := time.Now()
			var err error
			j, err = w.cfg.Queue.Lease(ctx, store.LeaseRequest{WorkerID: w.cfg.ID, Models: models,
				Loaded: w.loadedModels(), Now: now, LeaseUntil: now.Add(w.cfg.LeaseTTL)})
			if err != nil && ctx.Err() == nil {
				w.log.Warn("lease failed", "error", err.Error())
			}
		}
		if j == nil {
			select {
			case _, live := <-wake:
				if !live {
					// The notifications were lost: poll until the next renewal.
					wake = nil
				}
			case <-time.After(w.cfg.Poll):
				if wake == nil {
					wake = w.cfg.Queue.WorkAvailable(ctx)
				}
			case <-ctx.Done():
			}
			continue
		}
		w.busy.Add(1)
		w.run(ctx, j, gpu)
		w.busy.Add(-1)
	}
}

func (w *Worker) loadedModels() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]string, 0, len(w.loaded))
	for m, at := range w.loaded {
		if time.Since(at) < 10*time.Minute {
			out = append(out, m)
		}
	}
	sort.Strings(out)
	return out
}

// run drives one leased job to its end.
func (w *Worker) run(ctx context.Context, j *job.Job, gpu string) {
	log := w.log.With("job", j.ID, "attempt", j.Attempt, "model", j.RunModel)
	log.Info("job started")
	started := time.Now()
	jl := &jobLog{q: w.cfg.Queue, id: j.ID}
	fmt.Fprintf(jl, "== chaperone: attempt %d of %s job %s (model %s) on worker %s at %s ==\n",
		j.Attempt, j.Kind, j.ID, j.RunModel, w.cfg.ID, started.UTC().Format(time.RFC3339))

	workDir := filepath.Join(w.cfg.WorkDir, fmt.Sprintf("%s-%d", j.ID, j.Attempt))
	defer os.RemoveAll(workDir)

	runCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	tracker := &progressTracker{last: time.Now()}
	beats := make(chan struct{})
	go func() {
		defer close(beats)
		w.heartbeat(runCtx, stop, j, started, jl, tracker)
	}()

	out, err := w.execute(runCtx, j, workDir, gpu, jl, tracker)
	var results *job.Results
	if err == nil && context.Cause(runCtx) == nil {
		tracker.report(job.Progress{Stage: job.StageWriting, Done: j.Total, Total: j.Total})
		results, err = w.upload(runCtx, j, workDir, out)
	}
	stop(nil)
	<-beats

	cause := context.Cause(runCtx)
	final := tracker.snapshot()
	outcome := store.Outcome{Progress: final, Now: time.Now()}
	switch {
	case ctx.Err() != nil: // the worker is shutting down; Run hands the job back
		fmt.Fprintf(jl, "== chaperone: worker shutting down; the job returns to the queue ==\n")
		jl.flush()
		w.abandon(j)
		return
	case errors.Is(cause, errLeaseLost):
		fmt.Fprintf(jl, "== chaperone: stopped: the job was canceled, deleted, or taken over ==\n")
		jl.flush()
		w.abandon(j)
		log.Info("job stopped: lease lost")
		return
	case errors.Is(cause, errRuntimeCap):
		outcome.Status, outcome.Error = job.Failed,
			fmt.Sprintf("the job exceeded the %s runtime cap of %s and was stopped", j.Kind, w.cfg.Runtime[j.Kind])
	case errors.Is(cause, errStall):
		outcome.Status, outcome.Error = job.Failed,
			fmt.Sprintf("the job showed no progress and no log output for %s (the stall cap) and was stopped", w.cfg.Stall)
	case err != nil:
		outcome.Status, outcome.Error = job.Failed, err.Error()
	default:
		outcome.Status, outcome.Results = job.Succeeded, results
		outcome.Progress = job.Progress{Stage: final.Stage, Done: j.Total, Total: j.Total}
	}
	if outcome.Status == job.Failed {
		fmt.Fprintf(jl, "== chaperone: job failed: %s ==\n", outcome.Error)
	} else {
		fmt.Fprintf(jl, "== chaperone: job succeeded in %.1f s ==\n", time.Since(started).Seconds())
	}
	jl.flush()
	done, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := w.cfg.Queue.Complete(done, j.ID, j.Attempt, outcome); err != nil {
		if errors.Is(err, job.ErrLeaseLost) {
			// Fenced out: someone else owns the job's fate now (cancel, delete, a new attempt).
			log.Info("completion not accepted: the lease was lost")
		} else {
			// The job stays running until its lease runs out and it is tried again.
			log.Error("completing the job failed", "error", err.Error())
		}
		w.abandon(j)
		return
	}
	log.Info("job finished", "status", outcome.Status, "seconds", time.Since(started).Seconds())
}

// execute hands the job to its engine.
func (w *Worker) execute(ctx context.Context, j *job.Job, workDir, gpu string, jl *jobLog, t *progressTracker) (*engine.Output, error) {
	eng, ok := w.cfg.Engines.ForModel(j.RunModel)
	if !ok {
		return nil, fmt.Errorf("this worker has no engine for model %s", j.RunModel)
	}
	if err := os.RemoveAll(workDir); err != nil {
		return nil, fmt.Errorf("preparing the work folder: %w", err)
	}
	if err := os.MkdirAll(workDir, 0o755); err != nil {
		return nil, fmt.Errorf("preparing the work folder: %w", err)
	}
	absWorkDir, err := filepath.Abs(workDir)
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	w.loaded[j.RunModel] = time.Now()
	w.mu.Unlock()
	t.report(job.Progress{Stage: job.StageStarting, Total: j.Total})
	var cacheDir string
	if w.cfg.CacheDir != "" {
		cacheDir = filepath.Join(w.cfg.CacheDir, eng.Name())
	}
	return runEngine(ctx, eng, &engine.Run{
		Job:      j,
		WorkDir:  workDir,
		CacheDir: cacheDir,
		Tools:    w.cfg.Tools,
		Log:      jl,
		Report:   t.report,
		Exec: func(ctx context.Context, c engine.Command) error {
			c.Env = append(c.Env[:len(c.Env):len(c.Env)], runMarker+"="+absWorkDir)
			if gpu != "" {
				c.Env = append(c.Env, "CUDA_VISIBLE_DEVICES="+gpu)
			}
			return proc.Exec(ctx, workDir, jl, c)
		},
	})
}

// runEngine runs one job through its engine. An engine that panics fails that job, with the
// panic in the job's error and its stack in the run log, instead of taking the server down
// with every other job in it.
func runEngine(ctx context.Context, eng engine.Engine, run *engine.Run) (out *engine.Output, err error) {
	defer func() {
		if v := recover(); v != nil {
			fmt.Fprintf(run.Log, "== chaperone: the %s engine panicked: %v ==\n%s", eng.Name(), v, debug.Stack())
			out, err = nil, fmt.Errorf("internal error in the %s engine: %v", eng.Name(), v)
		}
	}()
	return eng.Run(ctx, run)
}

// upload stores the run's files and builds the results manifest. Every file is read through
// the job's work folder and must lie inside it: the tool ran on the caller's input, and a
// file it named or a symlink it left must not make a result of something else on the
// worker (its keys, another job's input). A path may be listed once only, or the job's
// archive, which holds every artifact at its path, could never be built.
func (w *Worker) upload(ctx context.Context, j *job.Job, workDir string, out *engine.Output) (*job.Results, error) {
	root, err := os.OpenRoot(workDir)
	if err != nil {
		return nil, fmt.Errorf("opening the work folder: %w", err)
	}
	defer root.Close()
	res := &job.Results{Rows: out.Rows, Designs: out.Designs, Embedding: out.Embedding,
		Artifacts: make([]job.Artifact, 0, len(out.Files))}
	listed := make(map[string]bool, len(out.Files))
	for _, f := range out.Files {
		if listed[f.Path] {
			return nil, fmt.Errorf("the engine reported the artifact %s twice", f.Path)
		}
		listed[f.Path] = true
		if err := w.putFile(ctx, j, root, workDir, f); err != nil {
			return nil, fmt.Errorf("storing artifact %s: %w", f.Path, err)
		}
		res.Artifacts = append(res.Artifacts, f.Artifact)
	}
	return res, nil
}

func (w *Worker) putFile(ctx context.Context, j *job.Job, root *os.Root, workDir string, f engine.File) error {
	rel, err := relativeTo(workDir, f.Local)
	if err != nil {
		return err
	}
	r, err := root.Open(rel)
	if err != nil {
		return err
	}
	defer r.Close()
	return w.cfg.Queue.PutArtifact(ctx, j.ID, j.Attempt, f.Path, r)
}

// relativeTo returns the path of file inside dir, or an error when it lies outside.
func relativeTo(dir, file string) (string, error) {
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	absFile, err := filepath.Abs(file)
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(absDir, absFile)
	if err != nil || !filepath.IsLocal(rel) {
		return "", errors.New("the engine named a file outside the job's work folder")
	}
	return rel, nil
}

func (w *Worker) abandon(j *job.Job) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.cfg.Queue.Abandon(ctx, j.ID, j.Attempt); err != nil {
		w.log.Warn("dropping files of an abandoned attempt", "job", j.ID, "error", err.Error())
	}
}

// heartbeat keeps the lease, forwards progress and log output, and enforces the caps,
// ending the run's context with the reason when it must stop.
func (w *Worker) heartbeat(ctx context.Context, stop context.CancelCauseFunc, j *job.Job, started time.Time, jl *jobLog, t *progressTracker) {
	tick := time.NewTicker(w.cfg.Heartbeat)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		jl.flush()
		if jl.takeActive() {
			t.touch()
		}
		now := time.Now()
		p, changed, active := t.take()
		if capd := w.cfg.Runtime[j.Kind]; capd > 0 && now.Sub(started) > capd {
			stop(errRuntimeCap)
			return
		}
		if w.cfg.Stall > 0 && now.Sub(t.lastActivity()) > w.cfg.Stall {
			stop(errStall)
			return
		}
		hb := store.Heartbeat{ID: j.ID, Attempt: j.Attempt, Activity: active, Now: now, LeaseUntil: now.Add(w.cfg.LeaseTTL)}
		if changed {
			hb.Progress = &p
		}
		err := w.cfg.Queue.Heartbeat(ctx, hb)
		if errors.Is(err, job.ErrLeaseLost) {
			stop(errLeaseLost)
			return
		}
		if err != nil && ctx.Err() == nil {
			w.log.Warn("heartbeat failed", "job", j.ID, "error", err.Error())
		}
	}
}

// progressTracker holds the latest progress an engine reported and when the job last
// showed life.
type progressTracker struct {
	mu      sync.Mutex
	cur     job.Progress
	changed bool
	active  bool
	last    time.Time
}

func (t *progressTracker) report(p job.Progress) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p.Stage == "" {
		p.Stage = t.cur.Stage
	}
	t.cur, t.changed, t.active, t.last = p, true, true, time.Now()
}

func (t *progressTracker) touch() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.active, t.last = true, time.Now()
}

func (t *progressTracker) take() (p job.Progress, changed, active bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p, changed, active = t.cur, t.changed, t.active
	t.changed, t.active = false, false
	return p, changed, active
}

func (t *progressTracker) snapshot() job.Progress {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.cur
}

func (t *progressTracker) lastActivity() time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.last
}

// jobLog buffers a job's output and appends it to the run log in chunks, at every
// heartbeat and whenever a chunk fills, so the log is readable while the job runs without
// one store write per line.
type jobLog struct {
	q  Queue
	id string

	mu     sync.Mutex
	buf    []byte
	active bool // output arrived since the last takeActive
}

const logChunk = 64 << 10

func (l *jobLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	l.buf = append(l.buf, p...)
	l.active = true
	full := len(l.buf) >= logChunk
	l.mu.Unlock()
	if full {
		l.flush()
	}
	return len(p), nil
}

// takeActive reports whether output arrived since it was last asked.
func (l *jobLog) takeActive() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	a := l.active
	l.active = false
	return a
}

// flush appends what is buffered to the run log.
func (l *jobLog) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := l.q.AppendLog(ctx, l.id, l.buf); err != nil {
		// The log is best effort; the job's outcome does not depend on it.
		slog.Warn("appending to a job log", "job", l.id, "error", err.Error())
	}
	l.buf = l.buf[:0]
}

var _ io.Writer = (*jobLog)(nil)
