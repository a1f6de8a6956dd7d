package sqlite

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
func (s *Store) LeaseJob(ctx context.Context, req store.LeaseRequest) (*job.Job, error) {
	if len(req.Models) == 0 {
		return nil, nil
	}
	models, loaded := jsonList(req.Models), jsonList(req.Loaded)
	var out *job.Job
	err := s.write(ctx, func(tx *sql.Tx, changed func(...string)) error {
		j, err := scanJob(tx.StmtContext(ctx, s.st.lease).QueryRowContext(ctx,
			req.WorkerID, msOrNull(req.LeaseUntil), req.Now.UnixMilli(), models, loaded))
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("sqlite: leasing: %w", err)
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

// jsonList encodes a list of names for json_each; never "null", which json_each would
// read as one NULL element.
func jsonList(names []string) string {
	if names == nil {
		names = []string{}
	}
	b, _ := json.Marshal(names) // strings always encode
	return string(b)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Heartbeat implements store.Queue.
func (s *Store) Heartbeat(ctx context.Context, hb store.Heartbeat) error {
	var p job.Progress
	if hb.Progress != nil {
		p = *hb.Progress
	}
	return s.write(ctx, func(tx *sql.Tx, changed func(...string)) error {
		r, err := tx.StmtContext(ctx, s.st.heartbeat).ExecContext(ctx,
			msOrNull(hb.LeaseUntil), boolInt(hb.Progress != nil), p.Stage, p.Done, p.Total, p.Value(),
			boolInt(hb.Activity), hb.Now.UnixMilli(), hb.ID, hb.Attempt)
		if err != nil {
			return fmt.Errorf("sqlite: heartbeat: %w", err)
		}
		if n, err := r.RowsAffected(); err != nil || n == 0 {
			return errors.Join(job.ErrLeaseLost, err)
		}
		changed(hb.ID)
		return nil
	})
}

// CompleteJob implements store.Queue. Stage, done and total keep their last reported values
// unless out reports new ones, so a failure shows where it failed; progress becomes 1 on
// success, and on failure keeps its last value unless out gives one.
func (s *Store) CompleteJob(ctx context.Context, id string, attempt int, out store.Outcome) error {
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
				return fmt.Errorf("sqlite: results: %w", err)
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
		return fmt.Errorf("sqlite: a job cannot complete as %q", out.Status)
	}
	return s.write(ctx, func(tx *sql.Tx, changed func(...string)) error {
		r, err := tx.StmtContext(ctx, s.st.complete).ExecContext(ctx,
			string(out.Status), errText, results, out.Now.UnixMilli(), out.Progress.Stage,
			out.Progress.Total, out.Progress.Done, boolInt(setProgress), progress, id, attempt)
		if err != nil {
			return fmt.Errorf("sqlite: completing: %w", err)
		}
		if n, err := r.RowsAffected(); err != nil || n == 0 {
			return errors.Join(job.ErrLeaseLost, err)
		}
		changed(id)
		return nil
	})
}

// RecoverExpired implements store.Queue.
func (s *Store) RecoverExpired(ctx context.Context, now time.Time, maxAttempts int) ([]string, error) {
	return s.recover(ctx, now, maxAttempts,
		`SELECT id, attempt FROM jobs WHERE status = 'running' AND lease_expires_at < ?`, now.UnixMilli())
}

// ReleaseWorker implements store.Queue.
func (s *Store) ReleaseWorker(ctx context.Context, workerID string, now time.Time, maxAttempts int) ([]string, error) {
	return s.recover(ctx, now, maxAttempts,
		`SELECT id, attempt FROM jobs WHERE status = 'running' AND worker_id = ?`, workerID)
}

// recover puts the running jobs that query selects back in the queue, or fails those that
// have used maxAttempts (below 1 is taken as 1). A requeued job looks as it did before its
// first lease, except that its attempt count stays.
func (s *Store) recover(ctx context.Context, now time.Time, maxAttempts int, query string, arg any) ([]string, error) {
	maxAttempts = max(maxAttempts, 1)
	var ids []string
	err := s.write(ctx, func(tx *sql.Tx, changed func(...string)) error {
		type lost struct {
			id      string
			attempt int
		}
		var found []lost
		rows, err := tx.QueryContext(ctx, query, arg)
		if err != nil {
			return err
		}
		for rows.Next() {
			var l lost
			if err := rows.Scan(&l.id, &l.attempt); err != nil {
				rows.Close()
				return err
			}
			found = append(found, l)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		requeued := false
		for _, l := range found {
			if l.attempt >= maxAttempts {
				_, err = tx.ExecContext(ctx, `UPDATE jobs SET status = 'failed', error = ?, finished_at = ?
					WHERE id = ?`, store.WorkerLostError(l.attempt), now.UnixMilli(), l.id)
			} else {
				requeued = true
				_, err = tx.ExecContext(ctx, `UPDATE jobs SET status = 'queued', stage = '',
					progress = NULL, done = 0, total = 0, worker_id = '', lease_expires_at = NULL,
					started_at = NULL, last_activity_at = NULL
					WHERE id = ?`, l.id)
			}
			if err != nil {
				return err
			}
			ids = append(ids, l.id)
			changed(l.id)
		}
		if requeued {
			changed("")
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
}

// QueueDepth implements store.Queue.
func (s *Store) QueueDepth(ctx context.Context) (int, error) {
	var n int
	err := s.r.QueryRowContext(ctx, `SELECT n FROM counters WHERE name = 'queued'`).Scan(&n)
	return n, err
}
