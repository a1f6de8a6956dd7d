package worker

import (
	"context"
	"fmt"
	"time"
)

// checkEngines checks every engine's tool and records which models the worker can run.
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
