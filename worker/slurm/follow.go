package slurm

import (
	"context"
	"errors"
	"maps"
	"path/filepath"
	"slices"
	"time"

	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/worker"
)

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
