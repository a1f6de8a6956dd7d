package slurm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
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
