package store

import (
	"context"
	"log/slog"
	"time"
)

// Reap returns jobs whose worker stopped heartbeating to the queue (or fails them after
// maxAttempts), every interval until ctx ends. Any number of server replicas may run it:
// RecoverExpired is a conditional update, so two reapers never both recover one job.
func Reap(ctx context.Context, q Queue, every time.Duration, maxAttempts int, log *slog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			ids, err := q.RecoverExpired(ctx, now, maxAttempts)
			if err != nil && ctx.Err() == nil {
				log.Warn("reaper: recovering expired leases", "error", err.Error())
			}
			if len(ids) > 0 {
				log.Info("reaper: recovered jobs whose worker was lost", "jobs", ids)
			}
		}
	}
}
