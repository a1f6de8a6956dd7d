package worker

import (
	"context"
	"errors"
	"time"

	"github.com/chaperone-bio/chaperone/job"
)

// Causes a running job's context can end with.
var (
	errLeaseLost  = errors.New("lease lost")
	errRuntimeCap = errors.New("runtime cap")
	errStall      = errors.New("stall cap")
)

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
