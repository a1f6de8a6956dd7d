// Package backend is the server side of the worker protocol: it implements worker.Queue on
// the server's own job store and artifact store. The in-process worker calls it directly;
// the HTTP transport for workers on other machines serves it. It owns what the protocol
// leaves to the server: the clock that sets lease times, long-polled leasing, the fencing
// of log and artifact writes by attempt, recovering the leases of lost workers, and
// dropping the files of attempts that lost their lease.
//
// It imports worker (for the wire types), store, artifact, align (the searched alignments a
// lease carries) and job of chaperone's packages.
package backend

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/chaperone-bio/chaperone/align"
	"github.com/chaperone-bio/chaperone/artifact"
	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/store"
	"github.com/chaperone-bio/chaperone/worker"
)

// Defaults of Config.
const (
	DefaultLeaseTTL   = 30 * time.Second
	DefaultHeartbeat  = time.Second
	DefaultSweepEvery = 10 * time.Minute
	// MaxWait caps how long one lease request waits for work, so that a long-poll stays
	// well inside the idle timeouts of the proxies an HTTP request may pass.
	MaxWait = time.Minute
	// pollBackstop is how often a waiting lease looks for work once the store lost its
	// notifications.
	pollBackstop = time.Second
)

// Config is a backend's setup; zero values take the defaults.
type Config struct {
	Store     store.Store
	Artifacts artifact.Store
	// MaxAttempts is how many leases a job gets before a lost one fails it.
	MaxAttempts int
	LeaseTTL    time.Duration
	Heartbeat   time.Duration
	// SweepEvery is how often Reap checks every job's files against its state, the
	// backstop that catches what the clean-up at each event could not (see Reap).
	SweepEvery time.Duration
	// Alignments holds the alignments the alignment stage searched (aligner.Cache): a
	// lease carries those of its job. Nil when no job of this deployment has searches.
	Alignments Alignments
	// Now is the server's clock; nil is time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

// Alignments reads searched alignments: those of a search of chains, ok false when any
// part is missing.
type Alignments interface {
	Get(ctx context.Context, chains []string) (res align.Result, ok bool, err error)
}

// Queue is worker.Queue on the server's stores. It is safe for concurrent use.
type Queue struct{ cfg Config }

var _ worker.Queue = (*Queue)(nil)

// New makes a backend.
func New(cfg Config) *Queue {
	if cfg.MaxAttempts < 1 {
		cfg.MaxAttempts = 1
	}
	if cfg.LeaseTTL == 0 {
		cfg.LeaseTTL = DefaultLeaseTTL
	}
	if cfg.Heartbeat == 0 {
		cfg.Heartbeat = DefaultHeartbeat
	}
	if cfg.SweepEvery == 0 {
		cfg.SweepEvery = DefaultSweepEvery
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Queue{cfg: cfg}
}

// Timing is the lease timing the backend holds workers to.
func (q *Queue) Timing() worker.Timing {
	return worker.Timing{LeaseTTL: q.cfg.LeaseTTL, Heartbeat: q.cfg.Heartbeat}
}

func (q *Queue) Announce(ctx context.Context, a worker.Announcement) (worker.Timing, error) {
	err := q.cfg.Store.PutWorker(ctx, store.Worker{ID: a.WorkerID, Models: a.Models, Missing: a.Missing,
		Loaded: a.Loaded, Slots: a.Slots, SeenAt: q.cfg.Now()})
	return q.Timing(), err
}

// Lease watches the queue before each try, so that a job queued between a try and the
// wait that follows it still wakes the wait.
func (q *Queue) Lease(ctx context.Context, req worker.LeaseRequest) (*worker.Lease, error) {
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	queued := q.cfg.Store.Watch(watchCtx, "")
	var backstop <-chan time.Time
	deadline := time.NewTimer(min(req.Wait, MaxWait))
	defer deadline.Stop()
	for {
		now := q.cfg.Now()
		j, err := q.cfg.Store.LeaseJob(ctx, store.LeaseRequest{WorkerID: req.WorkerID, Models: req.Models,
			Loaded: req.Loaded, Now: now, LeaseUntil: now.Add(q.cfg.LeaseTTL)})
		if err != nil {
			return nil, err
		}
		if j != nil {
			l, err := q.withAlignments(ctx, j)
			if l != nil || err != nil {
				return l, err
			}
			continue // its alignments were gone: it went back to the alignment stage
		}
		select {
		case _, live := <-queued:
			if !live {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				// The store lost its notifications: look now and then for the rest of this
				// wait; the next request watches anew.
				queued = nil
				t := time.NewTicker(pollBackstop)
				defer t.Stop()
				backstop = t.C
			}
		case <-backstop:
		case <-deadline.C:
			return nil, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// withAlignments is the lease of j with the alignments of its searches. When any is gone
// from the cache (swept since they were searched), j goes back to the alignment stage
// rather than to a worker that would have to search itself, and the lease is nil.
func (q *Queue) withAlignments(ctx context.Context, j *job.Job) (*worker.Lease, error) {
	l := leaseOf(j)
	for _, search := range j.Searches {
		res, ok, err := q.cfg.Alignments.Get(ctx, search.Chains)
		if err == nil && ok {
			l.Alignments = append(l.Alignments, res)
			continue
		}
		if err != nil {
			q.cfg.Logger.Warn("reading a leased job's alignments", "job", j.ID, "error", err)
		} else {
			q.cfg.Logger.Warn("a leased job's alignments are gone from the cache: it is searched again", "job", j.ID)
		}
		if err := q.cfg.Store.ReturnForAlignment(ctx, j.ID, j.Attempt); err != nil && !errors.Is(err, job.ErrLeaseLost) {
			return nil, err
		}
		return nil, nil
	}
	return l, nil
}

func leaseOf(j *job.Job) *worker.Lease {
	if j == nil {
		return nil
	}
	return &worker.Lease{Fence: worker.Fence{JobID: j.ID, Attempt: j.Attempt}, Kind: j.Kind, Name: j.Name,
		Model: j.Model, Protocol: j.Protocol, RunModel: j.RunModel, Params: j.Params, Input: j.Input, Total: j.Total}
}

func (q *Queue) Heartbeat(ctx context.Context, hb worker.Heartbeat) error {
	now := q.cfg.Now()
	err := q.cfg.Store.Heartbeat(ctx, store.Heartbeat{ID: hb.JobID, Attempt: hb.Attempt, Progress: hb.Progress,
		Activity: hb.Activity, Now: now, LeaseUntil: now.Add(q.cfg.LeaseTTL)})
	if errors.Is(err, job.ErrLeaseLost) {
		// The usual way a cancel is noticed while the worker is alive.
		q.tidy(ctx, hb.JobID)
	}
	return err
}

// AppendLog refuses output of an attempt that is not running, and keeps each byte of an
// attempt's output once however often it is sent (artifact.Store.AppendLog). The check
// and the append are two steps, so a chunk checked just before its job was canceled can
// land after that: it is that attempt's genuine output, and it is kept. Once the job's
// next attempt has written, the store refuses it. A chunk that lands after its job was
// deleted would leave a log behind without a job, so the check is repeated after the
// append and such a log is dropped.
func (q *Queue) AppendLog(ctx context.Context, f worker.Fence, offset int64, p []byte) error {
	if err := q.fence(ctx, f); err != nil {
		return err
	}
	_, err := q.cfg.Artifacts.AppendLog(ctx, f.JobID, f.Attempt, offset, p)
	if errors.Is(err, artifact.ErrLogClosed) {
		return job.ErrLeaseLost
	}
	if err != nil {
		return err
	}
	if _, err := q.cfg.Store.GetJobSummary(ctx, f.JobID); errors.Is(err, job.ErrNotFound) {
		return errors.Join(job.ErrLeaseLost, q.cfg.Artifacts.DeleteJob(ctx, f.JobID))
	}
	return nil
}

// PutArtifact refuses a file of an attempt that is not running, and checks again once the
// file is stored: an attempt that lost its lease while its file was being written would
// otherwise leave the file behind, since the clean-up for that loss may have run before
// the file arrived. Whoever stores last sees the loss and drops the file.
//
// One window stays open: a Put that passed the first check while its attempt ran, and
// finishes after that same attempt completed (a transport retrying an upload the worker
// had given up on), replaces a result file of the succeeded attempt. A worker completes
// only after its uploads returned, so only such a retry can do it.
func (q *Queue) PutArtifact(ctx context.Context, f worker.Fence, path string, r io.Reader) error {
	if err := q.fence(ctx, f); err != nil {
		return err
	}
	if err := q.cfg.Artifacts.Put(ctx, f.JobID, f.Attempt, path, r); err != nil {
		return err
	}
	return q.fence(ctx, f)
}

// Holder returns the worker that holds the lease of attempt f, or job.ErrLeaseLost when
// the job does not run under it: the worker endpoints take bytes (log, uploads) only from
// the holder's token.
func (q *Queue) Holder(ctx context.Context, f worker.Fence) (string, error) {
	j, err := q.cfg.Store.GetJobSummary(ctx, f.JobID)
	switch {
	case errors.Is(err, job.ErrNotFound):
		return "", job.ErrLeaseLost
	case err != nil:
		return "", err
	case j.Status != job.Running || j.Attempt != f.Attempt:
		return "", job.ErrLeaseLost
	}
	return j.WorkerID, nil
}

// fence returns job.ErrLeaseLost, and drops what lost attempts left, unless the job is
// running under f.Attempt.
func (q *Queue) fence(ctx context.Context, f worker.Fence) error {
	j, err := q.cfg.Store.GetJobSummary(ctx, f.JobID)
	switch {
	case errors.Is(err, job.ErrNotFound):
		return errors.Join(job.ErrLeaseLost, q.cfg.Artifacts.DeleteJob(ctx, f.JobID))
	case err != nil:
		return err
	case j.Status == job.Running && j.Attempt == f.Attempt:
		return nil
	}
	q.tidyJob(ctx, j)
	return job.ErrLeaseLost
}

// Complete refuses an outcome that is not one (a status other than succeeded or failed)
// as invalid, before it reaches the store.
func (q *Queue) Complete(ctx context.Context, c worker.Completion) error {
	if c.Status != job.Succeeded && c.Status != job.Failed {
		return job.Invalid("status", "a job completes as %q or %q, not %q", job.Succeeded, job.Failed, c.Status)
	}
	err := q.cfg.Store.CompleteJob(ctx, c.JobID, c.Attempt, store.Outcome{Status: c.Status, Error: c.Error,
		Progress: c.Progress, Results: c.Results, Now: q.cfg.Now()})
	if errors.Is(err, job.ErrLeaseLost) || (err == nil && c.Status == job.Failed) {
		// A fenced-out attempt's files, or what a failed attempt stored before it failed,
		// are results of nothing.
		q.tidy(ctx, c.JobID)
	}
	return err
}

func (q *Queue) ReleaseWorker(ctx context.Context, workerID string) error {
	released, err := q.cfg.Store.ReleaseWorker(ctx, workerID, q.cfg.Now(), q.cfg.MaxAttempts)
	for _, r := range released {
		q.endAttempt(ctx, r, "lost: the worker running it started again, and what it ran before died with it")
		q.tidy(ctx, r.ID)
	}
	return err
}

func (q *Queue) HandBack(ctx context.Context, workerID string) error {
	handed, err := q.cfg.Store.HandBack(ctx, workerID, q.cfg.Now())
	for _, r := range handed {
		q.endAttempt(ctx, r, "handed back: its worker shut down before it ended, so it does not count as an attempt")
		q.tidy(ctx, r.ID)
	}
	return err
}

// endAttempt closes the run log's account of an attempt that the server ended rather than
// its worker (whose writes it refuses now, if the worker is there at all), so that every
// attempt's part of the log ends with how it ended: here how, and what becomes of the job.
func (q *Queue) endAttempt(ctx context.Context, r store.Recovered, how string) {
	next := "the job goes back to the queue"
	if r.Failed {
		next = "that was its last attempt: the job failed"
	}
	line := fmt.Sprintf("== chaperone: attempt %d %s; %s ==\n", r.Attempt, how, next)
	if err := artifact.EndLog(ctx, q.cfg.Artifacts, r.ID, r.Attempt, line); err != nil {
		q.cfg.Logger.Warn("closing the log of an attempt", "job", r.ID, "attempt", r.Attempt, "error", err.Error())
	}
}

func (q *Queue) RemoveWorker(ctx context.Context, workerID string) error {
	return q.cfg.Store.RemoveWorker(ctx, workerID)
}

// Reap returns jobs whose worker stopped heartbeating to the queue (or fails them after
// MaxAttempts) and drops the files of their lost attempts, every interval until ctx ends.
// Any number of server replicas may run it: recovery is a conditional update, so two
// reapers never both recover one job, and dropping lost files is idempotent.
//
// It also sweeps every job's files against the job's state at start and every SweepEvery.
// The clean-up at each event (a refused heartbeat or write, a refused or failed
// completion, a recovery, a release) covers what happens while the server runs, but not a
// job canceled while its worker was already gone (nobody's heartbeat is refused then), nor
// files of a server that crashed between two steps; the sweep catches those.
func (q *Queue) Reap(ctx context.Context, every time.Duration) {
	q.Sweep(ctx)
	reap := time.NewTicker(every)
	defer reap.Stop()
	sweep := time.NewTicker(q.cfg.SweepEvery)
	defer sweep.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-reap.C:
			q.RecoverExpired(ctx)
		case <-sweep.C:
			q.Sweep(ctx)
		}
	}
}

// RecoverExpired is one round of Reap's recovery: jobs whose lease ran out by the server's
// clock go back to the queue (or fail after MaxAttempts), and their lost attempts' files go.
func (q *Queue) RecoverExpired(ctx context.Context) {
	recovered, err := q.cfg.Store.RecoverExpired(ctx, q.cfg.Now(), q.cfg.MaxAttempts)
	if err != nil && ctx.Err() == nil {
		q.cfg.Logger.Warn("reaper: recovering expired leases", "error", err.Error())
	}
	for _, r := range recovered {
		q.cfg.Logger.Info("reaper: recovered a job whose worker was lost", "job", r.ID, "attempt", r.Attempt, "failed", r.Failed)
		q.endAttempt(ctx, r, fmt.Sprintf("lost: nothing renewed its lease for %s (its worker stopped, lost the server, "+
			"or gave the attempt up)", q.cfg.LeaseTTL))
		q.tidy(ctx, r.ID)
	}
}

// Sweep drops, for every job that has files, what its state says is garbage: everything
// of a job the store no longer has, and the files of every attempt that is not running
// and did not succeed.
func (q *Queue) Sweep(ctx context.Context) {
	ids, err := q.cfg.Artifacts.Jobs(ctx)
	if err != nil {
		q.cfg.Logger.Warn("sweeping job files", "error", err.Error())
		return
	}
	for _, id := range ids {
		if ctx.Err() != nil {
			return
		}
		q.tidy(ctx, id)
	}
}

// tidy makes the job's files agree with its state as the store has it now.
func (q *Queue) tidy(ctx context.Context, id string) {
	j, err := q.cfg.Store.GetJobSummary(ctx, id)
	switch {
	case errors.Is(err, job.ErrNotFound):
		q.warn(id, q.cfg.Artifacts.DeleteJob(ctx, id))
	case err != nil:
		q.warn(id, err)
	default:
		q.tidyJob(ctx, j)
	}
}

// tidyJob drops the files of every attempt of j up to its current one, except the current
// one when it is running (its files are on their way) or succeeded (they are the job's
// results). Attempt numbers only grow and a lost attempt never runs again, so what it
// drops stays garbage however the job moves on meanwhile.
func (q *Queue) tidyJob(ctx context.Context, j *store.JobSummary) {
	for a := 1; a <= j.Attempt; a++ {
		if a == j.Attempt && (j.Status == job.Running || j.Status == job.Succeeded) {
			continue
		}
		q.warn(j.ID, q.cfg.Artifacts.DeleteAttempt(ctx, j.ID, a))
	}
}

func (q *Queue) warn(id string, err error) {
	if err != nil {
		q.cfg.Logger.Warn("dropping files of a lost attempt", "job", id, "error", err.Error())
	}
}
