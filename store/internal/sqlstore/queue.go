package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/store"
)

// LeaseJob implements store.Queue. StartedAt is set at every lease, not only the first:
// it is when the current attempt started, which is what the runtime cap and the runtime
// history behind Retry-After measure.
func (c *Core) LeaseJob(ctx context.Context, req store.LeaseRequest) (*job.Job, error) {
	if len(req.Models) == 0 {
		return nil, nil
	}
	return c.takeJob(ctx, "leasing", c.d.Lease,
		req.WorkerID, c.d.NullTime(req.LeaseUntil), c.d.Time(req.Now), c.d.List(req.Models), c.d.List(req.Loaded))
}

// takeJob runs statement, which takes one job for a worker or an aligner (a lease, a
// claim), and returns the job; nil when there was none to take.
func (c *Core) takeJob(ctx context.Context, doing, statement string, args ...any) (*job.Job, error) {
	var out *job.Job
	err := c.db.Write(ctx, func(ctx context.Context, tx Querier, changed func(...string)) error {
		out = nil
		j, err := c.d.ScanJob(tx.QueryRow(ctx, statement, args...))
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %s: %w", c.d.Name, doing, err)
		}
		out = j
		changed(j.ID)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Heartbeat implements store.Queue.
func (c *Core) Heartbeat(ctx context.Context, hb store.Heartbeat) error {
	var p job.Progress
	if hb.Progress != nil {
		p = *hb.Progress
	}
	return c.db.Write(ctx, func(ctx context.Context, tx Querier, changed func(...string)) error {
		// Watchers care about progress, not about the lease: only a heartbeat that moves
		// what a job view shows wakes them.
		moved := false
		if hb.Progress != nil {
			var (
				stage       string
				done, total int
				value       *float64
			)
			err := tx.QueryRow(ctx, c.q.progressOf, hb.ID, hb.Attempt).Scan(&stage, &done, &total, &value)
			if errors.Is(err, sql.ErrNoRows) {
				return job.ErrLeaseLost
			}
			if err != nil {
				return fmt.Errorf("%s: heartbeat: %w", c.d.Name, err)
			}
			v := p.Value()
			moved = p.Stage != "" && p.Stage != stage || p.Done != done || p.Total != total ||
				(v != nil) != (value != nil) || v != nil && *v != *value
		}
		n, err := tx.Exec(ctx, heartbeat,
			c.d.NullTime(hb.LeaseUntil), hb.Progress != nil, p.Stage, p.Done, p.Total, p.Value(),
			hb.Activity, c.d.Time(hb.Now), hb.ID, hb.Attempt)
		if err != nil {
			return fmt.Errorf("%s: heartbeat: %w", c.d.Name, err)
		}
		if n == 0 {
			return job.ErrLeaseLost
		}
		if moved {
			changed(hb.ID)
		}
		return nil
	})
}

// CompleteJob implements store.Queue. Stage, done and total keep their last reported values
// unless out reports new ones, so a failure shows where it failed; progress becomes 1 on
// success, and on failure keeps its last value unless out gives one.
func (c *Core) CompleteJob(ctx context.Context, id string, attempt int, out store.Outcome) error {
	var (
		results     any // NULL unless there are results
		errText     string
		setProgress bool
		progress    *float64
	)
	switch out.Status {
	case job.Succeeded:
		if out.Results != nil {
			b, err := json.Marshal(out.Results)
			if err != nil {
				return fmt.Errorf("%s: results: %w", c.d.Name, err)
			}
			results = string(b)
		}
		one := 1.0
		setProgress, progress = true, &one
	case job.Failed:
		errText = out.Error
		progress = out.Progress.Value()
		setProgress = progress != nil
	default:
		return fmt.Errorf("%s: a job cannot complete as %q", c.d.Name, out.Status)
	}
	return c.db.Write(ctx, func(ctx context.Context, tx Querier, changed func(...string)) error {
		n, err := tx.Exec(ctx, complete,
			string(out.Status), errText, results, c.d.Time(out.Now), out.Progress.Stage,
			out.Progress.Total, out.Progress.Done, setProgress, progress, id, attempt)
		if err != nil {
			return fmt.Errorf("%s: completing: %w", c.d.Name, err)
		}
		if n == 0 {
			return job.ErrLeaseLost
		}
		if out.Status == job.Succeeded && out.Results != nil {
			if n := out.Results.LargestInput(); n > 0 {
				if _, err := tx.Exec(ctx, c.d.RaiseMeasuredWall, id, n); err != nil {
					return fmt.Errorf("%s: measured wall: %w", c.d.Name, err)
				}
			}
		}
		changed(id)
		return nil
	})
}

// RecoverExpired implements store.Queue.
func (c *Core) RecoverExpired(ctx context.Context, now time.Time, maxAttempts int) ([]store.Recovered, error) {
	return c.recover(ctx, now, maxAttempts, c.q.recoverExpired, c.d.Time(now))
}

// ReleaseWorker implements store.Queue.
func (c *Core) ReleaseWorker(ctx context.Context, workerID string, now time.Time, maxAttempts int) ([]store.Recovered, error) {
	return c.recover(ctx, now, maxAttempts, c.q.releaseWorker, workerID)
}

// recover puts the running jobs that the statement (recoverStatement) matches through arg
// back in the queue, or fails those that have used maxAttempts (below 1 is taken as 1).
// A requeued job looks as it did before its first lease, except that its attempt count
// stays. Attempts handed back do not count as used.
//
// Choosing and changing are one UPDATE, so the condition is checked on the row it changes
// (PostgreSQL rechecks an UPDATE's WHERE on the row it locked; SQLite has one writer), and
// the attempt it reports is the one it ended: of concurrent reapers exactly one recovers an
// attempt, and a job leased again in between no longer matches.
func (c *Core) recover(ctx context.Context, now time.Time, maxAttempts int, statement string, arg any) ([]store.Recovered, error) {
	maxAttempts = max(maxAttempts, 1)
	var out []store.Recovered
	err := c.db.Write(ctx, func(ctx context.Context, tx Querier, changed func(...string)) error {
		out = nil
		rows, err := tx.Query(ctx, statement, maxAttempts, arg, c.d.Time(now))
		if err != nil {
			return fmt.Errorf("%s: recovering: %w", c.d.Name, err)
		}
		var r store.Recovered
		err = each(rows, func() error {
			if err := rows.Scan(&r.ID, &r.Attempt, &r.Failed); err != nil {
				return err
			}
			out = append(out, r)
			return nil
		})
		if err != nil {
			return fmt.Errorf("%s: recovering: %w", c.d.Name, err)
		}
		// The error of a failed one names its attempts; it is set apart because the
		// message is composed in Go.
		requeued := false
		for _, r := range out {
			changed(r.ID)
			if !r.Failed {
				requeued = true
				continue
			}
			if _, err := tx.Exec(ctx, setError, store.WorkerLostError(r.Attempt), r.ID); err != nil {
				return err
			}
		}
		if requeued {
			changed("")
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// HandBack implements store.Queue. The attempts it ends are counted (Dialect.CountHandBack),
// and recover does not count them as used.
func (c *Core) HandBack(ctx context.Context, workerID string, now time.Time) ([]store.Recovered, error) {
	var out []store.Recovered
	err := c.db.Write(ctx, func(ctx context.Context, tx Querier, changed func(...string)) error {
		out = nil
		rows, err := tx.Query(ctx, handBack, workerID)
		if err != nil {
			return fmt.Errorf("%s: handing back: %w", c.d.Name, err)
		}
		var seqs []int64
		err = each(rows, func() error {
			var seq int64
			var r store.Recovered
			if err := rows.Scan(&seq, &r.ID, &r.Attempt); err != nil {
				return err
			}
			seqs, out = append(seqs, seq), append(out, r)
			return nil
		})
		if err != nil {
			return fmt.Errorf("%s: handing back: %w", c.d.Name, err)
		}
		for i, seq := range seqs {
			if _, err := tx.Exec(ctx, c.d.CountHandBack, seq); err != nil {
				return err
			}
			changed(out[i].ID)
		}
		if len(out) > 0 {
			changed("")
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// QueueDepth implements store.Queue.
func (c *Core) QueueDepth(ctx context.Context) (int, error) {
	var n int
	err := c.db.QueryRow(ctx, c.d.CountQueued).Scan(&n)
	return n, err
}

// OwnersAhead implements store.History, ordering as the lease statement does.
func (c *Core) OwnersAhead(ctx context.Context, id string) (int, error) {
	var status string
	var n int
	err := c.db.QueryRow(ctx, ownersAhead, id).Scan(&status, &n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, job.ErrNotFound
	}
	if err != nil {
		return 0, fmt.Errorf("%s: owners ahead: %w", c.d.Name, err)
	}
	if status != string(job.Queued) {
		return 0, nil
	}
	return n, nil
}

// MeasuredWalls implements store.History.
func (c *Core) MeasuredWalls(ctx context.Context) (map[string]int, error) {
	rows, err := c.db.Query(ctx, measuredWalls)
	if err != nil {
		return nil, fmt.Errorf("%s: measured walls: %w", c.d.Name, err)
	}
	walls := map[string]int{}
	var model string
	var n int
	err = each(rows, func() error {
		if err := rows.Scan(&model, &n); err != nil {
			return err
		}
		walls[model] = n
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: measured walls: %w", c.d.Name, err)
	}
	return walls, nil
}
