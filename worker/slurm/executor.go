package slurm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/worker"
)

// Config is an executor's setup.
type Config struct {
	// WorkerID is stable across restarts: a restarted executor adopts the batch jobs of
	// its folders by it.
	WorkerID string
	// Slots is how many jobs the executor keeps submitted to Slurm at once.
	Slots int
	// Dir is the parent of the job folders, on a filesystem the compute nodes share.
	Dir string
	// Models are the models offered: the tools are checked on the compute nodes, not
	// here, where they need not be installed.
	Models []string
	// Probe narrows Models to those a compute node can run, by running chaperone doctor
	// there as a batch job at start and every hour (see probe).
	Probe  bool
	Queue  worker.Queue
	Slurm  CLI
	Submit Submit
	// Binary is the chaperone binary the batch jobs run, as the compute nodes see it.
	Binary string
	// Tools, Runtime and Stall go to the batch jobs, whose workers run with them.
	Tools   engine.Tools
	Runtime map[job.Kind]time.Duration
	Stall   time.Duration
	// LeaseWait is how long one lease request waits for work at the server.
	LeaseWait time.Duration
	// Poll is how often squeue is asked about the batch jobs held. Their leases, logs and
	// progress are forwarded every heartbeat from their folders, and a batch job that
	// wrote its outcome is looked up at once, so Poll only bounds how soon a pending job's
	// reason and an end without an outcome (time limit, node failure, scancel outside
	// chaperone) are seen; slurmctld is spared a query a second per executor.
	Poll   time.Duration
	Logger *slog.Logger
}

// Submit is what every batch job asks Slurm for besides its script.
type Submit struct {
	Partition string
	Account   string
	GPUs      int    // --gpus; 0: none asked
	Gres      string // --gres, e.g. gpu:a100:1
	// Time is the batch job's time limit in Slurm's format; empty: the job's runtime cap
	// plus TimeMargin, rounded up to minutes.
	Time       string
	TimeMargin time.Duration
	Options    []string // more sbatch options, as given
	// For holds more sbatch options for the jobs of one kind (predict, design, embed) or
	// one model (its run model: boltz2, rfd3, esmc-6b, …), after Options: sbatch takes the
	// last of a repeated option, so a model's own request wins over its kind's, and both
	// over the general one (an embedding partition, more memory for one model).
	For map[string][]string
}

// Executor submits leased jobs to Slurm and follows them. See the package doc.
type Executor struct {
	cfg     Config
	log     *slog.Logger
	refusal worker.Refusal

	leasing     context.Context // ends when the executor stops taking work
	stopLeasing context.CancelFunc
	wg          sync.WaitGroup
	freed       chan struct{} // a job left: a slot for the next lease
	lastPoll    time.Time     // when squeue was last asked; only the follow loop uses it

	mu     sync.Mutex
	timing worker.Timing
	jobs   map[string]*tracked // by folder name
	// models are offered; missing says why each configured model that is not, is not.
	models  []string
	missing map[string]string
}

// tracked is one job the executor holds: its folder and what it forwarded of it. Only the
// follow loop (and finish, which it starts) touch it after it was added.
type tracked struct {
	lease    worker.Lease
	dir      string
	slurmID  string     // "" until sbatch answered (or the batch job was found by its name)
	sentLog  int64      // bytes of the batch job's log forwarded
	streamed int64      // bytes of the attempt's output the server took: the forwarded log and the executor's own lines
	ownLines []byte     // the executor's own lines for the log that the server has not taken yet
	progress []byte     // progress.json as last forwarded
	stage    string     // the stage last sent by the executor itself (scheduler, starting)
	reason   string     // the pending reason last logged
	lost     bool       // the lease is lost: the batch job is canceled, the folder goes when it ends
	queued   QueueEntry // the batch job as squeue last listed it
	// ending is set while finish runs, in a goroutine of its own, which owns the fields
	// above meanwhile.
	ending atomic.Bool
}

// DefaultPoll is how often an executor asks squeue about its batch jobs by default.
const DefaultPoll = 30 * time.Second

// New makes an executor; zero values take working defaults.
func New(cfg Config) *Executor {
	if cfg.Slots < 1 {
		cfg.Slots = 8
	}
	if cfg.LeaseWait == 0 {
		cfg.LeaseWait = 30 * time.Second
	}
	if cfg.Poll == 0 {
		cfg.Poll = DefaultPoll
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Executor{cfg: cfg, log: cfg.Logger.With("worker", cfg.WorkerID), freed: make(chan struct{}, 1),
		jobs: map[string]*tracked{}, models: cfg.Models}
}

// Start announces the executor, adopts the batch jobs that an earlier run of it left in
// its folders (it hands nothing back: they run on in Slurm), and starts leasing and
// following, until ctx ends.
func (e *Executor) Start(ctx context.Context) error {
	if err := os.MkdirAll(e.cfg.Dir, 0o755); err != nil {
		return fmt.Errorf("slurm: the job folder: %w", err)
	}
	if err := e.checkRequest(ctx); err != nil {
		return err
	}
	if err := e.announce(ctx); err != nil {
		return fmt.Errorf("slurm: announcing: %w", err)
	}
	if err := e.adopt(ctx); err != nil {
		return err
	}
	ctx = e.refusal.Arm(ctx)
	e.leasing, e.stopLeasing = context.WithCancel(ctx)
	e.wg.Go(func() { e.lease(ctx) })
	e.wg.Go(func() { e.follow(ctx) })
	e.wg.Go(func() { e.keepAnnouncing(ctx) })
	if e.cfg.Probe {
		e.wg.Go(func() { e.keepProbing(ctx) })
	}
	return nil
}

// Drain stops taking work and returns once every job held has ended, or with ctx's error.
func (e *Executor) Drain(ctx context.Context) error {
	e.stopLeasing()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for e.busy() > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}

// Stopped is closed when the executor stopped on its own, the server having refused its
// token; Wait then returns worker.ErrRevoked.
func (e *Executor) Stopped() <-chan struct{} { return e.refusal.Stopped() }

// Wait returns once the executor stopped after its context ended: the batch jobs still
// held are canceled in Slurm, their folders removed, and their jobs handed back to the
// queue without using up an attempt (unless the server refused the executor: then their
// leases run out).
func (e *Executor) Wait() error {
	e.wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e.mu.Lock()
	left := slices.Collect(maps.Values(e.jobs))
	e.mu.Unlock()
	for _, t := range left {
		e.cancel(ctx, t)
		os.RemoveAll(t.dir)
	}
	if err := e.refusal.Err(); err != nil {
		return err
	}
	if err := e.cfg.Queue.HandBack(ctx, e.cfg.WorkerID); err != nil {
		e.log.Warn("handing back jobs at shutdown", "error", err.Error())
	}
	return e.cfg.Queue.RemoveWorker(ctx, e.cfg.WorkerID)
}

// checkRequest asks Slurm, submitting nothing, whether it takes batch jobs with the
// operator's request, so that a wrong partition, account or GPU request stops the executor
// at start, in Slurm's words, instead of failing every job it leases.
func (e *Executor) checkRequest(ctx context.Context) error {
	script := filepath.Join(e.cfg.Dir, "check-"+e.cfg.WorkerID+".sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ntrue\n"), 0o755); err != nil {
		return fmt.Errorf("slurm: the job folder: %w", err)
	}
	defer os.Remove(script)
	general := e.batchOptions("chaperone-check", e.cfg.Dir, e.timeLimit(job.PredictKind))
	if err := e.check(ctx, general, script, "the jobs", "--slurm-partition, --slurm-account, --slurm-gpus, --slurm-gres, --slurm-option"); err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(e.cfg.Submit.For)) {
		opts := append(slices.Clone(general), e.cfg.Submit.For[name]...)
		if err := e.check(ctx, opts, script, "the "+name+" jobs", "--slurm-option-for "+name+"=…"); err != nil {
			return err
		}
	}
	return nil
}

// check asks Slurm whether it takes a batch job with opts; which and flags name the jobs
// and the flags that asked for them in the error.
func (e *Executor) check(ctx context.Context, opts []string, script, which, flags string) error {
	err := e.cfg.Slurm.Check(ctx, opts, script)
	var refused *RefusedError
	switch {
	case errors.As(err, &refused):
		return fmt.Errorf("slurm: Slurm would refuse %s as configured (%s): %s", which, flags, refused.Message)
	case err != nil:
		return fmt.Errorf("slurm: asking Slurm whether it takes %s: %w", which, err)
	}
	return nil
}

func (e *Executor) busy() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.jobs)
}

func (e *Executor) leaseTiming() worker.Timing {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.timing
}

func (e *Executor) announce(ctx context.Context) error {
	e.mu.Lock()
	a := worker.Announcement{WorkerID: e.cfg.WorkerID, Models: e.models, Missing: e.missing, Slots: e.cfg.Slots}
	e.mu.Unlock()
	t, err := worker.Announce(ctx, e.cfg.Queue, a)
	if err != nil {
		return err
	}
	e.mu.Lock()
	e.timing = t
	e.mu.Unlock()
	return nil
}

func (e *Executor) keepAnnouncing(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(e.leaseTiming().LeaseTTL / 3):
		}
		if err := e.announce(ctx); err != nil && ctx.Err() == nil && !e.refusal.Check(err) {
			e.log.Warn("announcing failed", "error", err.Error())
		}
	}
}

// lease takes work while a slot is free, and submits each job it gets.
func (e *Executor) lease(ctx context.Context) {
	for e.leasing.Err() == nil {
		if e.busy() >= e.cfg.Slots {
			select {
			case <-e.freed:
			case <-e.leasing.Done():
			}
			continue
		}
		e.mu.Lock()
		models := e.models
		e.mu.Unlock()
		l, err := e.cfg.Queue.Lease(e.leasing, worker.LeaseRequest{WorkerID: e.cfg.WorkerID, Models: models,
			Wait: e.cfg.LeaseWait})
		if err != nil && e.leasing.Err() == nil && !e.refusal.Check(err) {
			e.log.Warn("lease failed", "error", err.Error())
			select {
			case <-time.After(time.Second):
			case <-e.leasing.Done():
			}
		}
		if l != nil {
			e.begin(ctx, l)
		}
	}
}

// begin writes a leased job's folder and submits its batch job. A job Slurm refuses fails
// with Slurm's words.
func (e *Executor) begin(ctx context.Context, l *worker.Lease) {
	log := e.log.With("job", l.JobID, "attempt", l.Attempt)
	t := &tracked{lease: *l, dir: filepath.Join(e.cfg.Dir, folderName(l.Fence))}
	if err := e.prepare(t); err != nil {
		log.Error("preparing the job folder", "error", err.Error())
		e.fail(ctx, t, "the Slurm executor could not prepare the job's folder: "+err.Error())
		return
	}
	e.appendLog(ctx, t, fmt.Sprintf("== chaperone: attempt %d of %s job %s (model %s) handed to Slurm by worker %s at %s ==\n",
		l.Attempt, l.Kind, l.JobID, l.RunModel, e.cfg.WorkerID, time.Now().UTC().Format(time.RFC3339)))
	// The follow loop takes the job up only after this first submission, so that it
	// cannot submit it too.
	if e.submit(ctx, t) {
		e.mu.Lock()
		e.jobs[folderName(l.Fence)] = t
		e.mu.Unlock()
	}
}

// prepare writes the folder: lease, run spec, batch script, and alive.
func (e *Executor) prepare(t *tracked) error {
	if err := os.RemoveAll(t.dir); err != nil {
		return err
	}
	if err := os.MkdirAll(t.dir, 0o755); err != nil {
		return err
	}
	spec := RunSpec{WorkerID: e.cfg.WorkerID, Tools: e.cfg.Tools,
		Runtime: e.cfg.Runtime[t.lease.Kind], Stall: e.cfg.Stall, Timing: e.leaseTiming()}
	if err := writeJSON(filepath.Join(t.dir, fileLease), t.lease); err != nil {
		return err
	}
	if err := writeJSON(filepath.Join(t.dir, fileRun), spec); err != nil {
		return err
	}
	script := fmt.Sprintf("#!/bin/sh\n# chaperone job %s, attempt %d\nexec %s slurm-job %s\n",
		t.lease.JobID, t.lease.Attempt, shellQuote(e.cfg.Binary), shellQuote(t.dir))
	if err := os.WriteFile(filepath.Join(t.dir, fileScript), []byte(script), 0o755); err != nil {
		return err
	}
	return touch(filepath.Join(t.dir, fileAlive))
}

// submit runs sbatch for a tracked job without a Slurm id. Slurm refusing the job fails
// it, and submit reports false; any other error leaves it for the next tick, which first
// looks for the batch job by its name, in case sbatch did submit it.
func (e *Executor) submit(ctx context.Context, t *tracked) bool {
	id, err := e.cfg.Slurm.Submit(ctx, e.sbatchOptions(t), filepath.Join(t.dir, fileScript))
	var refused *RefusedError
	switch {
	case errors.As(err, &refused):
		e.log.Warn("Slurm refused a job", "job", t.lease.JobID, "error", err.Error())
		e.forget(t)
		e.fail(ctx, t, refused.Error())
		return false
	case err != nil:
		e.log.Warn("submitting to Slurm failed; trying again", "job", t.lease.JobID, "error", err.Error())
		return true
	}
	e.tookID(ctx, t, id)
	e.appendLog(ctx, t, fmt.Sprintf("== chaperone: submitted to Slurm as job %s ==\n", id))
	// The job waits in Slurm's queue until the next tick says otherwise.
	t.stage = job.StageScheduler
	e.heartbeat(ctx, t, worker.Heartbeat{Fence: t.lease.Fence, Progress: &job.Progress{Stage: job.StageScheduler, Total: t.lease.Total}})
	return true
}

// tookID records the Slurm job id of a tracked job.
func (e *Executor) tookID(ctx context.Context, t *tracked, id string) {
	t.slurmID = id
	if err := os.WriteFile(filepath.Join(t.dir, fileSlurmID), []byte(id+"\n"), 0o644); err != nil {
		e.log.Warn("recording the Slurm job id", "job", t.lease.JobID, "slurm_job", id, "error", err.Error())
	}
}

// sbatchOptions are sbatch's options for a job.
func (e *Executor) sbatchOptions(t *tracked) []string {
	opts := e.batchOptions(jobName(t.lease.Fence), t.dir, e.timeLimit(t.lease.Kind))
	opts = append(opts, e.cfg.Submit.For[string(t.lease.Kind)]...)
	return append(opts, e.cfg.Submit.For[t.lease.RunModel]...)
}

// batchOptions are sbatch's options for a batch job of the executor: its name and folder,
// the time limit, and the operator's request (partition, account, GPUs, more options).
func (e *Executor) batchOptions(name, dir, timeLimit string) []string {
	s := e.cfg.Submit
	opts := []string{
		"--job-name=" + name,
		"--comment=chaperone:" + e.cfg.WorkerID,
		"--output=" + filepath.Join(dir, fileOutput),
		"--chdir=" + dir,
		"--no-requeue",
		"--time=" + timeLimit,
	}
	if s.Partition != "" {
		opts = append(opts, "--partition="+s.Partition)
	}
	if s.Account != "" {
		opts = append(opts, "--account="+s.Account)
	}
	if s.GPUs > 0 {
		opts = append(opts, "--gpus="+strconv.Itoa(s.GPUs))
	}
	if s.Gres != "" {
		opts = append(opts, "--gres="+s.Gres)
	}
	return append(opts, s.Options...)
}

// timeLimit is the batch job's --time: as configured, else the runtime cap plus the
// margin in whole minutes, so that the job's own cap, with its own words, ends it first.
func (e *Executor) timeLimit(kind job.Kind) string {
	if e.cfg.Submit.Time != "" {
		return e.cfg.Submit.Time
	}
	limit := e.cfg.Runtime[kind]
	if limit <= 0 {
		return "UNLIMITED"
	}
	return strconv.Itoa(int(math.Ceil((limit + e.cfg.Submit.TimeMargin).Minutes())))
}

// follow keeps every held job's lease, forwards what its batch job wrote, and ends the
// job once its batch job left Slurm's queue.
func (e *Executor) follow(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(e.leaseTiming().Heartbeat):
		}
		e.tick(ctx)
	}
}

// tick is one round of follow: every job's lease, log and progress, and, when a poll is
// due, one squeue call for all the jobs held.
func (e *Executor) tick(ctx context.Context) {
	e.mu.Lock()
	held := slices.Collect(maps.Values(e.jobs))
	e.mu.Unlock()
	var ids []string
	due := time.Since(e.lastPoll) >= e.cfg.Poll
	for _, t := range held {
		if !t.lost {
			// A lost job's batch job is not kept alive: if scancel failed, it stops
			// itself once alive is a lease TTL old.
			if err := touch(filepath.Join(t.dir, fileAlive)); err != nil {
				e.log.Warn("touching alive", "job", t.lease.JobID, "error", err.Error())
			}
		}
		if t.slurmID != "" {
			ids = append(ids, t.slurmID)
			// Ask now about a batch job that squeue has not listed yet, one being
			// canceled, and one that wrote its outcome and is about to leave the queue.
			due = due || t.lost || t.queued.State == "" || (!t.ending.Load() && exists(filepath.Join(t.dir, fileOutcome)))
		}
	}
	var (
		queued map[string]QueueEntry
		err    error
	)
	if due {
		e.lastPoll = time.Now()
		if queued, err = e.cfg.Slurm.Queue(ctx, ids); err != nil {
			e.log.Warn("squeue failed", "error", err.Error())
		}
	}
	for _, t := range held {
		entry, inQueue := queued[t.slurmID]
		switch {
		case t.ending.Load():
			e.heartbeat(ctx, t, worker.Heartbeat{Fence: t.lease.Fence})
		case t.lost:
			// Canceled: the folder goes once Slurm says the batch job ended.
			if t.slurmID == "" || (due && err == nil && !inQueue) {
				e.drop(t)
			}
		case t.slurmID == "":
			e.findOrSubmit(ctx, t)
		case due && err != nil: // no news from Slurm: keep the lease only
			e.heartbeat(ctx, t, worker.Heartbeat{Fence: t.lease.Fence})
		case !due:
			e.forward(ctx, t, t.queued)
		case inQueue:
			t.queued = entry
			e.forward(ctx, t, entry)
		default:
			t.ending.Store(true)
			e.wg.Go(func() { e.finish(context.WithoutCancel(ctx), t) })
		}
	}
}

// findOrSubmit submits a job that has no Slurm id yet, unless a batch job of its name
// exists already (sbatch answered too late, or the executor died before it wrote the id):
// a job is never submitted twice.
func (e *Executor) findOrSubmit(ctx context.Context, t *tracked) {
	found, err := e.cfg.Slurm.Named(ctx, jobName(t.lease.Fence))
	if err != nil {
		e.log.Warn("squeue by name failed", "job", t.lease.JobID, "error", err.Error())
		e.heartbeat(ctx, t, worker.Heartbeat{Fence: t.lease.Fence})
		return
	}
	if len(found) > 0 {
		e.tookID(ctx, t, found[0])
		e.heartbeat(ctx, t, worker.Heartbeat{Fence: t.lease.Fence})
		return
	}
	e.submit(ctx, t)
}

// forward sends what a queued or running batch job wrote since the last tick, with a
// heartbeat. While Slurm holds the job pending, its stage is scheduler and the log says
// why it waits.
func (e *Executor) forward(ctx context.Context, t *tracked, q QueueEntry) {
	hb := worker.Heartbeat{Fence: t.lease.Fence}
	// Once the batch job reported progress it runs, whatever squeue said last.
	if q.State == "PENDING" && t.progress == nil {
		if q.Reason != t.reason {
			t.reason = q.Reason
			e.appendLog(ctx, t, fmt.Sprintf("== chaperone: Slurm job %s pending in partition %s (%s) ==\n", t.slurmID, q.Partition, q.Reason))
		}
		if t.stage != job.StageScheduler {
			t.stage = job.StageScheduler
			hb.Progress = &job.Progress{Stage: job.StageScheduler, Total: t.lease.Total}
		}
	} else if q.State != "" && t.stage == job.StageScheduler {
		// Running on a node, before the batch job's first progress arrives.
		t.stage = job.StageStarting
		hb.Progress, hb.Activity = &job.Progress{Stage: job.StageStarting, Total: t.lease.Total}, true
	}
	if e.forwardLog(ctx, t) {
		hb.Activity = true
	}
	if p, ok := e.newProgress(t); ok {
		hb.Progress, hb.Activity = p, true
	}
	e.heartbeat(ctx, t, hb)
}

// heartbeat sends hb; a lease lost (cancel, delete, expiry) cancels the batch job.
func (e *Executor) heartbeat(ctx context.Context, t *tracked, hb worker.Heartbeat) {
	err := e.cfg.Queue.Heartbeat(ctx, hb)
	switch {
	case errors.Is(err, job.ErrLeaseLost):
		e.log.Info("lease lost; canceling the Slurm job", "job", t.lease.JobID, "slurm_job", t.slurmID)
		t.lost = true
		e.cancel(ctx, t)
	case err != nil && ctx.Err() == nil && !e.refusal.Check(err):
		e.log.Warn("heartbeat failed", "job", t.lease.JobID, "error", err.Error())
	}
}

// cancel cancels a job's batch job, by id, or by name when its id is not known.
func (e *Executor) cancel(ctx context.Context, t *tracked) {
	id := t.slurmID
	if id == "" {
		found, err := e.cfg.Slurm.Named(ctx, jobName(t.lease.Fence))
		if err != nil || len(found) == 0 {
			return
		}
		id = found[0]
	}
	if err := e.cfg.Slurm.Cancel(ctx, id); err != nil {
		e.log.Warn("scancel failed", "job", t.lease.JobID, "slurm_job", id, "error", err.Error())
	}
}

// newProgress is the batch job's progress when it changed since it was last forwarded.
func (e *Executor) newProgress(t *tracked) (*job.Progress, bool) {
	b, err := os.ReadFile(filepath.Join(t.dir, fileProgress))
	if err != nil || slices.Equal(b, t.progress) {
		return nil, false
	}
	var p job.Progress
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, false
	}
	t.progress, t.stage = b, p.Stage
	return &p, true
}

// finish ends a job whose batch job left Slurm's queue: with the batch job's outcome and
// artifacts when it wrote them, else as Slurm's record of the batch job says. It runs on
// when the executor stops, so that a result that is there is delivered.
func (e *Executor) finish(ctx context.Context, t *tracked) {
	log := e.log.With("job", t.lease.JobID, "attempt", t.lease.Attempt, "slurm_job", t.slurmID)
	e.forwardLog(ctx, t)
	var outcome worker.Completion
	switch err := readJSON(filepath.Join(t.dir, fileOutcome), &outcome); {
	case err == nil:
		if err := e.upload(ctx, t); err != nil {
			log.Error("uploading the results", "error", err.Error())
			outcome = worker.Completion{Fence: t.lease.Fence, Status: job.Failed, Progress: outcome.Progress,
				Error: "storing the results failed: " + err.Error()}
		}
	case errors.Is(err, os.ErrNotExist):
		final, err := e.cfg.Slurm.Ended(ctx, t.slurmID)
		if err != nil {
			log.Warn("Slurm has no record of how the batch job ended; the attempt is lost", "error", err.Error())
			e.drop(t)
			return
		}
		end := judge(final, tail(filepath.Join(t.dir, fileOutput)))
		if end.lost {
			log.Warn("the batch job ended without fault of its own; the job goes back to the queue", "state", final.State)
			e.appendLog(ctx, t, fmt.Sprintf("== chaperone: Slurm job %s ended %s; the job goes back to the queue ==\n", t.slurmID, final.State))
			e.drop(t)
			return
		}
		outcome = worker.Completion{Fence: t.lease.Fence, Status: job.Failed, Error: end.failure}
		if p, ok := e.newProgress(t); ok {
			outcome.Progress = *p
		}
		e.appendLog(ctx, t, fmt.Sprintf("== chaperone: job failed: %s ==\n", end.failure))
	default:
		log.Error("reading the outcome", "error", err.Error())
		t.ending.Store(false) // try again at the next tick
		return
	}
	done, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := e.cfg.Queue.Complete(done, outcome); err != nil && !errors.Is(err, job.ErrLeaseLost) {
		log.Error("completing the job failed; trying again", "error", err.Error())
		t.ending.Store(false)
		return
	}
	log.Info("job finished", "status", outcome.Status)
	e.drop(t)
}

// upload stores the artifacts the batch job wrote.
func (e *Executor) upload(ctx context.Context, t *tracked) error {
	paths, err := artifacts(t.dir)
	if err != nil {
		return err
	}
	for _, p := range paths {
		f, err := os.Open(filepath.Join(t.dir, dirOut, filepath.FromSlash(p)))
		if err != nil {
			return err
		}
		err = e.cfg.Queue.PutArtifact(ctx, t.lease.Fence, p, f)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	return nil
}

// fail completes a job the executor could not hand to Slurm.
func (e *Executor) fail(ctx context.Context, t *tracked, msg string) {
	e.appendLog(ctx, t, fmt.Sprintf("== chaperone: job failed: %s ==\n", msg))
	err := e.cfg.Queue.Complete(ctx, worker.Completion{Fence: t.lease.Fence, Status: job.Failed, Error: msg})
	if err != nil && !errors.Is(err, job.ErrLeaseLost) {
		e.log.Error("failing the job", "job", t.lease.JobID, "error", err.Error())
	}
	os.RemoveAll(t.dir)
}

// drop stops following a job and removes its folder.
func (e *Executor) drop(t *tracked) {
	e.forget(t)
	os.RemoveAll(t.dir)
}

// forget stops following a job, freeing its slot.
func (e *Executor) forget(t *tracked) {
	e.mu.Lock()
	delete(e.jobs, folderName(t.lease.Fence))
	e.mu.Unlock()
	select {
	case e.freed <- struct{}{}:
	default:
	}
}

// adopt takes up the folders an earlier run of this executor left: a job whose lease the
// server still honours is followed again (and submitted only if Slurm has no batch job of
// its name); one it does not is canceled in Slurm and its folder removed.
func (e *Executor) adopt(ctx context.Context) error {
	entries, err := os.ReadDir(e.cfg.Dir)
	if err != nil {
		return fmt.Errorf("slurm: reading the job folder: %w", err)
	}
	for _, d := range entries {
		dir := filepath.Join(e.cfg.Dir, d.Name())
		var spec RunSpec
		var l worker.Lease
		if !d.IsDir() || readJSON(filepath.Join(dir, fileRun), &spec) != nil || spec.WorkerID != e.cfg.WorkerID ||
			readJSON(filepath.Join(dir, fileLease), &l) != nil {
			continue
		}
		t := &tracked{lease: l, dir: dir}
		if b, err := os.ReadFile(filepath.Join(dir, fileSlurmID)); err == nil {
			t.slurmID = strings.TrimSpace(string(b))
		}
		if b, err := os.ReadFile(filepath.Join(dir, fileLogSent)); err == nil {
			t.sentLog, t.streamed = readSent(b)
		}
		err := e.cfg.Queue.Heartbeat(ctx, worker.Heartbeat{Fence: l.Fence})
		switch {
		case errors.Is(err, job.ErrLeaseLost):
			e.log.Info("a job of an earlier run is no longer ours; canceling its Slurm job", "job", l.JobID, "slurm_job", t.slurmID)
			e.cancel(ctx, t)
			os.RemoveAll(dir)
			continue
		case err != nil:
			return fmt.Errorf("slurm: taking up job %s of an earlier run: %w", l.JobID, err)
		}
		if err := touch(filepath.Join(dir, fileAlive)); err != nil {
			return fmt.Errorf("slurm: taking up job %s of an earlier run: %w", l.JobID, err)
		}
		e.log.Info("following a Slurm job of an earlier run again", "job", l.JobID, "slurm_job", t.slurmID)
		e.appendLog(ctx, t, fmt.Sprintf("== chaperone: worker %s restarted and follows this job's Slurm job again ==\n", e.cfg.WorkerID))
		e.mu.Lock()
		e.jobs[d.Name()] = t
		e.mu.Unlock()
	}
	return nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// touch sets a file's modification time to now, creating it when missing.
func touch(path string) error {
	now := time.Now()
	if err := os.Chtimes(path, now, now); err == nil || !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return os.WriteFile(path, nil, 0o644)
}

// tail is the end of a file, for quoting in an error.
func tail(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	const max = 4 << 10
	if st, err := f.Stat(); err == nil && st.Size() > max {
		f.Seek(st.Size()-max, io.SeekStart)
	}
	b, _ := io.ReadAll(f)
	return string(b)
}
