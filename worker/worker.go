// Package worker runs jobs: it leases them from a Queue, drives each through its engine in
// a work folder of its own, keeps the lease alive with heartbeats that also carry progress,
// enforces the runtime and stall caps, stops the job's process tree when the lease is lost
// (cancel, delete, expiry), and completes the job with one write fenced by its attempt.
// Warm engines (engine.Warm) keep a session per slot between jobs; see slotState.
//
// The worker reaches the server only through Queue, in the protocol's own wire types, so
// that it runs the same in the server's process and on another machine. It imports engine,
// engine/proc, job and align of chaperone's packages, never store or artifact.
package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/chaperone-bio/chaperone/align"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/proc"
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
	// CacheDir is the parent of the engines' cache folders, which outlive jobs and restarts
	// (see engine.Run.CacheDir); empty for none.
	CacheDir string
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

// Causes a running job's context can end with.
var (
	errLeaseLost  = errors.New("lease lost")
	errRuntimeCap = errors.New("runtime cap")
	errStall      = errors.New("stall cap")
)

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

func (w *Worker) checkEngines(ctx context.Context) {
	a := w.cfg.Engines.Check(ctx, w.cfg.Tools)
	w.mu.Lock()
	prev, first := w.avail, w.avail.Missing == nil
	w.avail = a
	w.mu.Unlock()
	// What each model's check found at start is logged once by whoever starts the worker
	// (app logs doctor's findings); the checks after it log what changed. Only the public
	// reason is announced, and so reaches API callers; the detail (paths, the tool's
	// output) stays in this log.
	if first {
		return
	}
	for m, why := range a.Missing {
		if prev.Missing[m] != why {
			w.log.Info("model unavailable on this worker", "model", m, "reason", why, "detail", a.Detail[m])
		}
	}
	for _, m := range a.Models {
		if _, was := prev.Missing[m]; was {
			w.log.Info("model available again on this worker", "model", m)
		}
	}
}

func (w *Worker) models() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.avail.Models
}

// announce tells the server about the worker and learns the timing it is held to.
func (w *Worker) announce(ctx context.Context) error {
	loaded := w.loadedModels()
	w.mu.Lock()
	a := Announcement{WorkerID: w.cfg.ID, Models: w.avail.Models, Missing: w.avail.Missing, Loaded: loaded,
		Slots: w.cfg.Slots}
	w.mu.Unlock()
	t, err := Announce(ctx, w.cfg.Queue, a)
	if err != nil {
		return err
	}
	w.mu.Lock()
	w.timing = t
	w.mu.Unlock()
	return nil
}

// Announce tells q about a worker and returns the lease timing the server holds it to,
// refusing an answer that gives none: every worker of the protocol announces this way.
func Announce(ctx context.Context, q Queue, a Announcement) (Timing, error) {
	t, err := q.Announce(ctx, a)
	if err != nil {
		return Timing{}, err
	}
	if t.LeaseTTL <= 0 || t.Heartbeat <= 0 {
		return Timing{}, fmt.Errorf("the server gave no lease timing (%+v)", t)
	}
	return t, nil
}

func (w *Worker) leaseTiming() Timing {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.timing
}

// keepAnnouncing refreshes the worker's liveness.
func (w *Worker) keepAnnouncing(ctx context.Context) {
	// A worker counts as live for one lease TTL after it announced itself, so announce
	// three times per TTL.
	announce := time.NewTimer(w.leaseTiming().LeaseTTL / 3)
	defer announce.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-announce.C:
		}
		if err := w.announce(ctx); err != nil && ctx.Err() == nil && !w.refusal.Check(err) {
			w.log.Warn("worker heartbeat failed", "error", err.Error())
		}
		announce.Reset(w.leaseTiming().LeaseTTL / 3)
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

// loadedModels lists the models that the slots' sessions hold loaded now, as the sessions
// themselves report it.
func (w *Worker) loadedModels() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, s := range w.slots {
		if s.session != nil {
			out = append(out, s.session.Loaded()...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// RunLease runs one job that was leased elsewhere to its end, as a slot of a leasing
// worker runs it (engine, caps, progress, log, upload, completion), under the lease timing
// given: a Slurm batch job runs the lease its executor took, through a Queue of its own.
// The worker takes no other work, so it is not started; RunLease uses its first slot.
func (w *Worker) RunLease(ctx context.Context, l *Lease, timing Timing) {
	w.mu.Lock()
	w.timing = timing
	w.mu.Unlock()
	s := w.slots[0]
	defer w.closeSession(s)
	w.run(ctx, l, s)
}

// run drives one leased job to its end.
func (w *Worker) run(ctx context.Context, l *Lease, s *slotState) {
	j := l.Job()
	timing := w.leaseTiming()
	log := w.log.With("job", j.ID, "attempt", j.Attempt, "model", j.RunModel)
	log.Info("job started")
	started := time.Now()
	workDir := filepath.Join(w.cfg.WorkDir, fmt.Sprintf("%s-%d", j.ID, j.Attempt))
	jl := newJobLog(w.cfg.Queue, l.Fence, workDir, w.log, started.Add(timing.LeaseTTL))
	fmt.Fprintf(jl, "== chaperone: attempt %d of %s job %s (model %s) on worker %s at %s ==\n",
		j.Attempt, j.Kind, j.ID, j.RunModel, w.cfg.ID, started.UTC().Format(time.RFC3339))

	defer os.RemoveAll(workDir)

	runCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	tracker := &progressTracker{last: time.Now()}
	beats := make(chan struct{})
	go func() {
		defer close(beats)
		w.heartbeat(runCtx, stop, j, timing, started, jl, tracker)
	}()

	out, err := w.execute(runCtx, j, l.Alignments, workDir, s, jl, tracker)
	var results *job.Results
	if err == nil && context.Cause(runCtx) == nil {
		tracker.report(job.Progress{Stage: job.StageWriting, Done: j.Total, Total: j.Total})
		results, err = w.upload(runCtx, l.Fence, workDir, out)
	}
	stop(nil)
	<-beats

	cause := context.Cause(runCtx)
	final := tracker.snapshot()
	outcome := Completion{Fence: l.Fence, Progress: final}
	switch {
	case ctx.Err() != nil: // the worker is shutting down; Wait hands the job back, and the
		// server closes the attempt's log saying so.
		jl.flush(true)
		return
	case errors.Is(cause, errLeaseLost):
		// The server refuses this attempt's writes now, the log included, and drops
		// whatever files it stored.
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
		fmt.Fprintf(jl, "== chaperone: job failed: %s ==\n", firstLine(outcome.Error))
	} else {
		fmt.Fprintf(jl, "== chaperone: job succeeded in %.1f s ==\n", time.Since(started).Seconds())
	}
	jl.flush(true)
	done, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := w.cfg.Queue.Complete(done, outcome); err != nil {
		if errors.Is(err, job.ErrLeaseLost) {
			// Fenced out: someone else owns the job's fate now (cancel, delete, a new
			// attempt), and the server dropped this attempt's files.
			log.Info("completion not accepted: the lease was lost")
		} else {
			// The job stays running until its lease runs out and it is tried again; the
			// server drops this attempt's files then.
			log.Error("completing the job failed", "error", err.Error())
		}
		return
	}
	log.Info("job finished", "status", outcome.Status, "seconds", time.Since(started).Seconds())
}

// execute hands the job to its engine: through the slot's session for a warm engine, else
// by one run of the engine's tool.
func (w *Worker) execute(ctx context.Context, j *job.Job, alignments []align.Result, workDir string, s *slotState, jl *jobLog, t *progressTracker) (*engine.Output, error) {
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
	t.report(job.Progress{Stage: job.StageStarting, Total: j.Total})
	var cacheDir string
	if w.cfg.CacheDir != "" {
		cacheDir = filepath.Join(w.cfg.CacheDir, eng.Name())
	}
	run := &engine.Run{
		Job:        j,
		WorkDir:    workDir,
		CacheDir:   cacheDir,
		Tools:      w.cfg.Tools,
		Alignments: alignments,
		Log:        jl,
		Report:     t.report,
		Exec: func(ctx context.Context, c engine.Command) error {
			c.Env = w.processEnv(c.Env, absWorkDir, s.gpu)
			return proc.Exec(ctx, workDir, jl, c)
		},
	}
	warm, ok := eng.(engine.Warm)
	if !ok {
		// A tool run once per job needs the slot's GPU to itself.
		w.closeSession(s)
		return guard(eng, run, func() (*engine.Output, error) { return eng.Run(ctx, run) })
	}
	sess, err := w.session(ctx, s, warm)
	if err != nil {
		return nil, fmt.Errorf("starting the %s engine: %w", eng.Name(), err)
	}
	out, err := guard(eng, run, func() (*engine.Output, error) { return sess.Run(ctx, run) })
	if dead := sess.Err(); dead != nil {
		fmt.Fprintf(jl, "== chaperone: the %s session ended (%v); the next job starts a fresh one ==\n", eng.Name(), dead)
		w.closeSession(s)
	}
	return out, err
}

// processEnv is the environment added to every process a job or session starts: the marker
// that lets a restarted worker find it (see killLeftovers) and the slot's GPU.
func (w *Worker) processEnv(env []string, dir, gpu string) []string {
	env = append(env[:len(env):len(env)], runMarker+"="+dir)
	if gpu != "" {
		env = append(env, "CUDA_VISIBLE_DEVICES="+gpu)
	}
	return env
}

// guard runs one job through its engine. An engine that panics fails that job, with the
// panic in the job's error and its stack in the run log, instead of taking the server down
// with every other job in it.
func guard(eng engine.Engine, run *engine.Run, fn func() (*engine.Output, error)) (out *engine.Output, err error) {
	defer func() {
		if v := recover(); v != nil {
			fmt.Fprintf(run.Log, "== chaperone: the %s engine panicked: %v ==\n%s", eng.Name(), v, debug.Stack())
			out, err = nil, fmt.Errorf("internal error in the %s engine: %v", eng.Name(), v)
		}
	}()
	return fn()
}

// upload stores the run's files and builds the results manifest. Every file is read through
// the job's work folder and must lie inside it: the tool ran on the caller's input, and a
// file it named or a symlink it left must not make a result of something else on the
// worker (its keys, another job's input). A path may be listed once only, or the job's
// archive, which holds every artifact at its path, could never be built.
func (w *Worker) upload(ctx context.Context, fence Fence, workDir string, out *engine.Output) (*job.Results, error) {
	root, err := os.OpenRoot(workDir)
	if err != nil {
		return nil, fmt.Errorf("opening the work folder: %w", err)
	}
	defer root.Close()
	res := &job.Results{Rows: out.Rows, Designs: out.Designs, Embedding: out.Embedding,
		Artifacts: make([]job.Artifact, 0, len(out.Files))}
	listed := make(map[string]bool, len(out.Files))
	for _, file := range out.Files {
		if listed[file.Path] {
			return nil, fmt.Errorf("the engine reported the artifact %s twice", file.Path)
		}
		listed[file.Path] = true
		if err := w.putFile(ctx, fence, root, workDir, file); err != nil {
			return nil, fmt.Errorf("storing artifact %s: %w", file.Path, err)
		}
		res.Artifacts = append(res.Artifacts, file.Artifact)
	}
	return res, nil
}

func (w *Worker) putFile(ctx context.Context, fence Fence, root *os.Root, workDir string, f engine.File) error {
	rel, err := relativeTo(workDir, f.Local)
	if err != nil {
		return err
	}
	r, err := root.Open(rel)
	if err != nil {
		return err
	}
	defer r.Close()
	return w.cfg.Queue.PutArtifact(ctx, fence, f.Path, r)
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

// heartbeat keeps the lease, forwards progress and log output, and enforces the caps,
// ending the run's context with the reason when it must stop. A worker cut off from the
// server stops the job once its lease can no longer have been renewed, since by then the
// server may give the job to another worker.
func (w *Worker) heartbeat(ctx context.Context, stop context.CancelCauseFunc, j *job.Job, timing Timing, started time.Time, jl *jobLog, t *progressTracker) {
	tick := time.NewTicker(timing.Heartbeat)
	defer tick.Stop()
	// The lease was taken before the job reached the worker, so counting from started errs
	// on the late side by the time the lease took to arrive.
	renewed := started
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		jl.flush(false)
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
		hb := Heartbeat{Fence: Fence{JobID: j.ID, Attempt: j.Attempt}, Activity: active}
		if changed {
			hb.Progress = &p
		}
		err := w.cfg.Queue.Heartbeat(ctx, hb)
		switch {
		case err == nil:
			// The server renewed the lease after the heartbeat was sent; counting from
			// the sending errs on the early side.
			renewed = now
			jl.renewed(now.Add(timing.LeaseTTL))
		case errors.Is(err, job.ErrLeaseLost):
			stop(errLeaseLost)
			return
		case ctx.Err() != nil, w.refusal.Check(err):
		case time.Since(renewed) >= timing.LeaseTTL:
			w.log.Warn("cut off from the server for longer than the lease lasts; stopping the job", "job", j.ID, "error", err.Error())
			stop(errLeaseLost)
			return
		default:
			w.log.Warn("heartbeat failed", "job", j.ID, "error", err.Error())
		}
	}
}
