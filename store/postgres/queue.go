package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/store"
)

// LeaseJob implements store.Queue. The pick skips rows other leases hold (FOR UPDATE SKIP
// LOCKED): workers leasing at once take different jobs instead of queueing on one. The
// UPDATE checks the status again on the row it locked. StartedAt is set at every lease: it
// is when the current attempt started.
func (s *Store) LeaseJob(ctx context.Context, req store.LeaseRequest) (*job.Job, error) {
	if len(req.Models) == 0 {
		return nil, nil
	}
	loaded := req.Loaded
	if loaded == nil {
		loaded = []string{}
	}
	var out *job.Job
	err := s.write(ctx, func(tx pgx.Tx, changed func(...string)) error {
		out = nil
		// Fair order: the owner with the fewest running jobs, then a model the worker has
		// loaded, then the oldest. A job waiting for its alignment searches is passed over;
		// the UPDATE checks that again on the row it locked.
		j, err := scanJob(tx.QueryRow(ctx, `WITH running AS (
				SELECT owner, count(*) AS n FROM jobs WHERE status = 'running' GROUP BY owner),
			pick AS (
				SELECT q.seq FROM jobs q LEFT JOIN running r ON r.owner = q.owner
				WHERE q.status = 'queued' AND NOT q.aligning AND q.run_model = ANY($4::text[])
				ORDER BY coalesce(r.n, 0), q.run_model = ANY($5::text[]) DESC, q.seq
				LIMIT 1
				FOR UPDATE OF q SKIP LOCKED)
			UPDATE jobs SET status = 'running', attempt = attempt + 1,
				worker_id = $1, lease_expires_at = $2, started_at = $3, last_activity_at = $3,
				stage = 'starting'
			FROM pick WHERE jobs.seq = pick.seq AND jobs.status = 'queued' AND NOT jobs.aligning
			RETURNING `+jobCols,
			req.WorkerID, tsOrNull(req.LeaseUntil), req.Now, req.Models, loaded))
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("postgres: leasing: %w", err)
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
func (s *Store) Heartbeat(ctx context.Context, hb store.Heartbeat) error {
	var p job.Progress
	if hb.Progress != nil {
		p = *hb.Progress
	}
	return s.write(ctx, func(tx pgx.Tx, changed func(...string)) error {
		// Watchers care about progress, not about the lease: only a heartbeat that moves
		// what a job view shows wakes them.
		moved := false
		if hb.Progress != nil {
			var (
				stage       string
				done, total int
				value       *float64
			)
			err := tx.QueryRow(ctx, `SELECT stage, done, total, progress FROM jobs
				WHERE id = $1 AND status = 'running' AND attempt = $2 FOR UPDATE`, hb.ID, hb.Attempt).
				Scan(&stage, &done, &total, &value)
			if errors.Is(err, pgx.ErrNoRows) {
				return job.ErrLeaseLost
			}
			if err != nil {
				return fmt.Errorf("postgres: heartbeat: %w", err)
			}
			v := p.Value()
			moved = p.Stage != "" && p.Stage != stage || p.Done != done || p.Total != total ||
				(v != nil) != (value != nil) || v != nil && *v != *value
		}
		tag, err := tx.Exec(ctx, `UPDATE jobs SET lease_expires_at = $1,
			stage = CASE WHEN $2 THEN coalesce(nullif($3, ''), stage) ELSE stage END,
			done = CASE WHEN $2 THEN $4 ELSE done END,
			total = CASE WHEN $2 THEN $5 ELSE total END,
			progress = CASE WHEN $2 THEN $6 ELSE progress END,
			last_activity_at = CASE WHEN $7 THEN $8 ELSE last_activity_at END
			WHERE id = $9 AND status = 'running' AND attempt = $10`,
			tsOrNull(hb.LeaseUntil), hb.Progress != nil, p.Stage, p.Done, p.Total, p.Value(),
			hb.Activity, hb.Now, hb.ID, hb.Attempt)
		if err != nil {
			return fmt.Errorf("postgres: heartbeat: %w", err)
		}
		if tag.RowsAffected() == 0 {
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
func (s *Store) CompleteJob(ctx context.Context, id string, attempt int, out store.Outcome) error {
	var (
		results     *string // NULL unless there are results
		errText     string
		setProgress bool
		progress    *float64
	)
	switch out.Status {
	case job.Succeeded:
		if out.Results != nil {
			b, err := json.Marshal(out.Results)
			if err != nil {
				return fmt.Errorf("postgres: results: %w", err)
			}
			r := string(b)
			results = &r
		}
		one := 1.0
		setProgress, progress = true, &one
	case job.Failed:
		errText = out.Error
		progress = out.Progress.Value()
		setProgress = progress != nil
	default:
		return fmt.Errorf("postgres: a job cannot complete as %q", out.Status)
	}
	return s.write(ctx, func(tx pgx.Tx, changed func(...string)) error {
		// One write fenced by the attempt: a late or duplicate completion matches no row.
		tag, err := tx.Exec(ctx, `UPDATE jobs SET status = $1, error = $2, results = $3::json, finished_at = $4,
			stage = coalesce(nullif($5, ''), stage),
			done = CASE WHEN $6 > 0 THEN $7 ELSE done END,
			total = CASE WHEN $6 > 0 THEN $6 ELSE total END,
			progress = CASE WHEN $8 THEN $9 ELSE progress END
			WHERE id = $10 AND status = 'running' AND attempt = $11`,
			string(out.Status), errText, results, out.Now, out.Progress.Stage,
			out.Progress.Total, out.Progress.Done, setProgress, progress, id, attempt)
		if err != nil {
			return fmt.Errorf("postgres: completing: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return job.ErrLeaseLost
		}
		if out.Status == job.Succeeded && out.Results != nil {
			if n := out.Results.LargestInput(); n > 0 {
				if _, err := tx.Exec(ctx, `INSERT INTO measured_walls (run_model, residues)
					SELECT run_model, $2 FROM jobs WHERE id = $1
					ON CONFLICT (run_model) DO UPDATE SET residues = greatest(measured_walls.residues, excluded.residues)`,
					id, n); err != nil {
					return fmt.Errorf("postgres: measured wall: %w", err)
				}
			}
		}
		changed(id)
		return nil
	})
}

// OwnersAhead implements store.History, ordering as the lease statement does.
func (s *Store) OwnersAhead(ctx context.Context, id string) (int, error) {
	var status string
	var n int
	err := s.pool.QueryRow(ctx, `WITH running AS (
			SELECT owner, count(*) AS n FROM jobs WHERE status = 'running' GROUP BY owner),
		me AS (
			SELECT j.owner, j.run_model, j.seq, j.status, coalesce(r.n, 0) AS n
			FROM jobs j LEFT JOIN running r ON r.owner = j.owner WHERE j.id = $1)
		SELECT me.status, (SELECT count(DISTINCT q.owner) FROM jobs q LEFT JOIN running r ON r.owner = q.owner
			WHERE q.status = 'queued' AND q.run_model = me.run_model AND q.owner <> me.owner
			AND (coalesce(r.n, 0) < me.n OR (coalesce(r.n, 0) = me.n AND q.seq < me.seq)))
		FROM me`, id).Scan(&status, &n)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, job.ErrNotFound
	}
	if err != nil {
		return 0, fmt.Errorf("postgres: owners ahead: %w", err)
	}
	if status != string(job.Queued) {
		return 0, nil
	}
	return n, nil
}

// MeasuredWalls implements store.History.
func (s *Store) MeasuredWalls(ctx context.Context) (map[string]int, error) {
	rows, err := s.pool.Query(ctx, `SELECT run_model, residues FROM measured_walls`)
	if err != nil {
		return nil, fmt.Errorf("postgres: measured walls: %w", err)
	}
	defer rows.Close()
	walls := map[string]int{}
	for rows.Next() {
		var model string
		var n int
		if err := rows.Scan(&model, &n); err != nil {
			return nil, fmt.Errorf("postgres: measured walls: %w", err)
		}
		walls[model] = n
	}
	return walls, rows.Err()
}

// RecoverExpired implements store.Queue.
func (s *Store) RecoverExpired(ctx context.Context, now time.Time, maxAttempts int) ([]store.Recovered, error) {
	return s.recover(ctx, now, maxAttempts, `lease_expires_at < $2`, now)
}

// ReleaseWorker implements store.Queue.
func (s *Store) ReleaseWorker(ctx context.Context, workerID string, now time.Time, maxAttempts int) ([]store.Recovered, error) {
	return s.recover(ctx, now, maxAttempts, `worker_id = $2`, workerID)
}

// HandBack implements store.Queue. The attempts it ends are counted in handbacks, which
// recover subtracts.
func (s *Store) HandBack(ctx context.Context, workerID string, now time.Time) ([]store.Recovered, error) {
	var out []store.Recovered
	err := s.write(ctx, func(tx pgx.Tx, changed func(...string)) error {
		rows, err := tx.Query(ctx, `UPDATE jobs SET status = 'queued', handbacks = handbacks + 1,
			stage = '', progress = NULL, done = 0, total = 0, worker_id = '', lease_expires_at = NULL,
			started_at = NULL, last_activity_at = NULL
			WHERE status = 'running' AND worker_id = $1
			RETURNING id, attempt, false`, workerID)
		if err != nil {
			return fmt.Errorf("postgres: handing back: %w", err)
		}
		out, err = pgx.CollectRows(rows, pgx.RowToStructByPos[store.Recovered])
		if err != nil {
			return fmt.Errorf("postgres: handing back: %w", err)
		}
		for _, r := range out {
			changed(r.ID)
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

// recover puts the running jobs that match back in the queue, or fails those that have
// used maxAttempts (below 1 is taken as 1). A requeued job looks as it did before its first
// lease, except that its attempt count stays; attempts handed back do not count as used.
// Choosing and changing are one UPDATE, which
// PostgreSQL rechecks on each row it locked: of concurrent reapers exactly one recovers an
// attempt, and a job leased again in between no longer matches.
func (s *Store) recover(ctx context.Context, now time.Time, maxAttempts int, match string, arg any) ([]store.Recovered, error) {
	maxAttempts = max(maxAttempts, 1)
	var out []store.Recovered
	err := s.write(ctx, func(tx pgx.Tx, changed func(...string)) error {
		out = nil
		rows, err := tx.Query(ctx, `UPDATE jobs SET
			status = CASE WHEN attempt - handbacks >= $1 THEN 'failed' ELSE 'queued' END,
			finished_at = CASE WHEN attempt - handbacks >= $1 THEN $3 ELSE finished_at END,
			stage = CASE WHEN attempt - handbacks >= $1 THEN stage ELSE '' END,
			progress = CASE WHEN attempt - handbacks >= $1 THEN progress END,
			done = CASE WHEN attempt - handbacks >= $1 THEN done ELSE 0 END,
			total = CASE WHEN attempt - handbacks >= $1 THEN total ELSE 0 END,
			worker_id = CASE WHEN attempt - handbacks >= $1 THEN worker_id ELSE '' END,
			lease_expires_at = CASE WHEN attempt - handbacks >= $1 THEN lease_expires_at END,
			started_at = CASE WHEN attempt - handbacks >= $1 THEN started_at END,
			last_activity_at = CASE WHEN attempt - handbacks >= $1 THEN last_activity_at END
			WHERE status = 'running' AND `+match+`
			RETURNING id, attempt, status = 'failed'`, maxAttempts, arg, now)
		if err != nil {
			return fmt.Errorf("postgres: recovering: %w", err)
		}
		var r store.Recovered
		if _, err := pgx.ForEachRow(rows, []any{&r.ID, &r.Attempt, &r.Failed}, func() error {
			out = append(out, r)
			return nil
		}); err != nil {
			return fmt.Errorf("postgres: recovering: %w", err)
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
			if _, err := tx.Exec(ctx, `UPDATE jobs SET error = $1 WHERE id = $2`,
				store.WorkerLostError(r.Attempt), r.ID); err != nil {
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

// QueueDepth implements store.Queue.
func (s *Store) QueueDepth(ctx context.Context) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM jobs WHERE status = 'queued'`).Scan(&n)
	return n, err
}
