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
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx, changed func(...string)) error {
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
	return s.write(ctx, func(ctx context.Context, tx *sql.Tx, changed func(...string)) error {
		// Watchers care about progress, not about the lease: only a heartbeat that moves
		// what a job view shows wakes them.
		moved := false
		if hb.Progress != nil {
			var (
				stage       string
				done, total int
				value       sql.NullFloat64
			)
			err := tx.StmtContext(ctx, s.st.progressOf).QueryRowContext(ctx, hb.ID, hb.Attempt).
				Scan(&stage, &done, &total, &value)
			if errors.Is(err, sql.ErrNoRows) {
				return job.ErrLeaseLost
			}
			if err != nil {
				return fmt.Errorf("sqlite: heartbeat: %w", err)
			}
			v := p.Value()
			moved = p.Stage != "" && p.Stage != stage || p.Done != done || p.Total != total ||
				(v != nil) != value.Valid || v != nil && *v != value.Float64
		}
		r, err := tx.StmtContext(ctx, s.st.heartbeat).ExecContext(ctx,
			msOrNull(hb.LeaseUntil), boolInt(hb.Progress != nil), p.Stage, p.Done, p.Total, p.Value(),
			boolInt(hb.Activity), hb.Now.UnixMilli(), hb.ID, hb.Attempt)
		if err != nil {
			return fmt.Errorf("sqlite: heartbeat: %w", err)
		}
		if n, err := r.RowsAffected(); err != nil || n == 0 {
			return errors.Join(job.ErrLeaseLost, err)
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
	return s.write(ctx, func(ctx context.Context, tx *sql.Tx, changed func(...string)) error {
		r, err := tx.StmtContext(ctx, s.st.complete).ExecContext(ctx,
			string(out.Status), errText, results, out.Now.UnixMilli(), out.Progress.Stage,
			out.Progress.Total, out.Progress.Done, boolInt(setProgress), progress, id, attempt)
		if err != nil {
			return fmt.Errorf("sqlite: completing: %w", err)
		}
		if n, err := r.RowsAffected(); err != nil || n == 0 {
			return errors.Join(job.ErrLeaseLost, err)
		}
		if out.Status == job.Succeeded && out.Results != nil {
			if n := out.Results.LargestInput(); n > 0 {
				if _, err := tx.ExecContext(ctx, `INSERT INTO measured_walls (run_model, residues)
					SELECT run_model, ?2 FROM jobs WHERE id = ?1
					ON CONFLICT (run_model) DO UPDATE SET residues = max(residues, excluded.residues)`, id, n); err != nil {
					return fmt.Errorf("sqlite: measured wall: %w", err)
				}
			}
		}
		changed(id)
		return nil
	})
}

// RecoverExpired implements store.Queue.
func (s *Store) RecoverExpired(ctx context.Context, now time.Time, maxAttempts int) ([]store.Recovered, error) {
	return s.recover(ctx, now, maxAttempts, `lease_expires_at < ?2`, now.UnixMilli())
}

// ReleaseWorker implements store.Queue.
func (s *Store) ReleaseWorker(ctx context.Context, workerID string, now time.Time, maxAttempts int) ([]store.Recovered, error) {
	return s.recover(ctx, now, maxAttempts, `worker_id = ?2`, workerID)
}

// HandBack implements store.Queue. The attempts it ends are counted in the table
// handbacks (migration 00008), which recover subtracts.
func (s *Store) HandBack(ctx context.Context, workerID string, now time.Time) ([]store.Recovered, error) {
	var out []store.Recovered
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx, changed func(...string)) error {
		out = nil
		rows, err := tx.QueryContext(ctx, `UPDATE jobs SET status = 'queued', stage = '', progress = NULL,
			done = 0, total = 0, worker_id = '', lease_expires_at = NULL, started_at = NULL,
			last_activity_at = NULL
			WHERE status = 'running' AND worker_id = ?
			RETURNING seq, id, attempt`, workerID)
		if err != nil {
			return fmt.Errorf("sqlite: handing back: %w", err)
		}
		var seqs []int64
		for rows.Next() {
			var seq int64
			var r store.Recovered
			if err := rows.Scan(&seq, &r.ID, &r.Attempt); err != nil {
				rows.Close()
				return err
			}
			seqs, out = append(seqs, seq), append(out, r)
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return err
		}
		for i, seq := range seqs {
			if _, err := tx.ExecContext(ctx, `INSERT INTO handbacks (seq, n) VALUES (?, 1)
				ON CONFLICT (seq) DO UPDATE SET n = n + 1`, seq); err != nil {
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

// usedAttempts is how many attempts of a job count against the limit: those handed back
// (HandBack) do not.
const usedAttempts = `(attempt - coalesce((SELECT h.n FROM handbacks h WHERE h.seq = jobs.seq), 0))`

// recover puts the running jobs that match back in the queue, or fails those that have
// used maxAttempts (below 1 is taken as 1). A requeued job looks as it did before its first
// lease, except that its attempt count stays. Attempts handed back do not count as used.
//
// Choosing and changing are one UPDATE, so the condition is checked on the row it changes
// (on any database: PostgreSQL rechecks an UPDATE's WHERE on the row it locked), and the
// attempt it reports is the one it ended.
func (s *Store) recover(ctx context.Context, now time.Time, maxAttempts int, match string, arg any) ([]store.Recovered, error) {
	maxAttempts = max(maxAttempts, 1)
	var out []store.Recovered
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx, changed func(...string)) error {
		rows, err := tx.QueryContext(ctx, `UPDATE jobs SET
			status = CASE WHEN `+usedAttempts+` >= ?1 THEN 'failed' ELSE 'queued' END,
			finished_at = CASE WHEN `+usedAttempts+` >= ?1 THEN ?3 ELSE finished_at END,
			stage = CASE WHEN `+usedAttempts+` >= ?1 THEN stage ELSE '' END,
			progress = CASE WHEN `+usedAttempts+` >= ?1 THEN progress END,
			done = CASE WHEN `+usedAttempts+` >= ?1 THEN done ELSE 0 END,
			total = CASE WHEN `+usedAttempts+` >= ?1 THEN total ELSE 0 END,
			worker_id = CASE WHEN `+usedAttempts+` >= ?1 THEN worker_id ELSE '' END,
			lease_expires_at = CASE WHEN `+usedAttempts+` >= ?1 THEN lease_expires_at END,
			started_at = CASE WHEN `+usedAttempts+` >= ?1 THEN started_at END,
			last_activity_at = CASE WHEN `+usedAttempts+` >= ?1 THEN last_activity_at END
			WHERE status = 'running' AND `+match+`
			RETURNING id, attempt, status = 'failed'`, maxAttempts, arg, now.UnixMilli())
		if err != nil {
			return fmt.Errorf("sqlite: recovering: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var r store.Recovered
			if err := rows.Scan(&r.ID, &r.Attempt, &r.Failed); err != nil {
				return err
			}
			out = append(out, r)
		}
		if err := rows.Err(); err != nil {
			return err
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
			if _, err := tx.ExecContext(ctx, `UPDATE jobs SET error = ? WHERE id = ?`,
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
	err := s.r.QueryRowContext(ctx, `SELECT n FROM counters WHERE name = 'queued'`).Scan(&n)
	return n, err
}

// OwnersAhead implements store.History, ordering as the lease statement does.
func (s *Store) OwnersAhead(ctx context.Context, id string) (int, error) {
	var status string
	var n int
	err := s.r.QueryRowContext(ctx, `WITH running AS (
			SELECT owner, count(*) AS n FROM jobs WHERE status = 'running' GROUP BY owner),
		me AS (
			SELECT j.owner, j.run_model, j.seq, j.status, coalesce(r.n, 0) AS n
			FROM jobs j LEFT JOIN running r ON r.owner = j.owner WHERE j.id = ?1)
		SELECT me.status, (SELECT count(DISTINCT q.owner) FROM jobs q LEFT JOIN running r ON r.owner = q.owner
			WHERE q.status = 'queued' AND q.run_model = me.run_model AND q.owner <> me.owner
			AND (coalesce(r.n, 0) < me.n OR (coalesce(r.n, 0) = me.n AND q.seq < me.seq)))
		FROM me`, id).Scan(&status, &n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, job.ErrNotFound
	}
	if err != nil {
		return 0, fmt.Errorf("sqlite: owners ahead: %w", err)
	}
	if status != string(job.Queued) {
		return 0, nil
	}
	return n, nil
}

// MeasuredWalls implements store.History.
func (s *Store) MeasuredWalls(ctx context.Context) (map[string]int, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT run_model, residues FROM measured_walls`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: measured walls: %w", err)
	}
	defer rows.Close()
	walls := map[string]int{}
	for rows.Next() {
		var model string
		var n int
		if err := rows.Scan(&model, &n); err != nil {
			return nil, fmt.Errorf("sqlite: measured walls: %w", err)
		}
		walls[model] = n
	}
	return walls, rows.Err()
}
