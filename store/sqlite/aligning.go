package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/chaperone-bio/chaperone/job"
)

// The alignment stage (store.Aligning). A claim on a job lives in align_holder and
// align_until (migration 00010); a job waiting for its searches is one that is queued with
// aligning set, and the jobs_aligning index holds exactly those.

// aligningJob matches the job ?id still waiting for its searches under holder ?holder's
// claim: what RenewAlignment and FinishAlignment are fenced by.
const aligningJob = `id = :id AND status = 'queued' AND aligning = 1 AND align_holder = :holder`

var errNoHolder = errors.New("sqlite: a claim needs a holder")

// ClaimAlignment implements store.Aligning. Its terms on status and aligning are those of
// the partial index jobs_aligning, which the planner uses only when they match.
func (s *Store) ClaimAlignment(ctx context.Context, holder string, now, until time.Time) (*job.Job, error) {
	if holder == "" {
		return nil, errNoHolder
	}
	var out *job.Job
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx, changed func(...string)) error {
		out = nil
		j, err := scanJob(tx.QueryRowContext(ctx, `UPDATE jobs SET align_holder = ?1, align_until = ?2, stage = ?3
			WHERE seq = (
				SELECT seq FROM jobs WHERE status = 'queued' AND aligning = 1
				AND (align_holder = '' OR align_until < ?4)
				ORDER BY seq LIMIT 1)
			RETURNING `+jobCols, holder, until.UnixMilli(), job.StageMSA, now.UnixMilli()))
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("sqlite: claiming an alignment: %w", err)
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

// RenewAlignment implements store.Aligning. Only the claim's end changes, which no summary
// shows: watchers are not woken.
func (s *Store) RenewAlignment(ctx context.Context, id, holder string, now, until time.Time) error {
	return s.write(ctx, func(ctx context.Context, tx *sql.Tx, changed func(...string)) error {
		r, err := tx.ExecContext(ctx, `UPDATE jobs SET align_until = :until WHERE `+aligningJob,
			sql.Named("until", until.UnixMilli()), sql.Named("id", id), sql.Named("holder", holder))
		return leaseKept(r, err, "renewing an alignment")
	})
}

// FinishAlignment implements store.Aligning. A failure moves the job out of the queue, which
// the trigger jobs_counts_status counts, as it does for a cancel. Aligning stays set on a
// failed job, as on a job canceled while aligning: its searches were never done.
func (s *Store) FinishAlignment(ctx context.Context, id, holder string, now time.Time, failure string) error {
	return s.write(ctx, func(ctx context.Context, tx *sql.Tx, changed func(...string)) error {
		if failure == "" {
			r, err := tx.ExecContext(ctx, `UPDATE jobs SET aligning = 0, align_holder = '', align_until = NULL,
				stage = '' WHERE `+aligningJob, sql.Named("id", id), sql.Named("holder", holder))
			if err := leaseKept(r, err, "finishing an alignment"); err != nil {
				return err
			}
			changed(id, "") // leasable now
			return nil
		}
		r, err := tx.ExecContext(ctx, `UPDATE jobs SET status = 'failed', error = :failure, finished_at = :now,
			align_holder = '', align_until = NULL WHERE `+aligningJob,
			sql.Named("failure", failure), sql.Named("now", now.UnixMilli()),
			sql.Named("id", id), sql.Named("holder", holder))
		if err := leaseKept(r, err, "failing an alignment"); err != nil {
			return err
		}
		changed(id)
		return nil
	})
}

// ReturnForAlignment implements store.Aligning. The job is requeued as HandBack requeues
// one, and its attempt is counted in handbacks likewise, so it is not held against the
// attempt limit.
func (s *Store) ReturnForAlignment(ctx context.Context, id string, attempt int, now time.Time) error {
	return s.write(ctx, func(ctx context.Context, tx *sql.Tx, changed func(...string)) error {
		var seq int64
		err := tx.QueryRowContext(ctx, `UPDATE jobs SET status = 'queued', aligning = 1,
			align_holder = '', align_until = NULL, stage = '', progress = NULL, done = 0, total = 0,
			worker_id = '', lease_expires_at = NULL, started_at = NULL, last_activity_at = NULL
			WHERE id = ? AND status = 'running' AND attempt = ?
			RETURNING seq`, id, attempt).Scan(&seq)
		if errors.Is(err, sql.ErrNoRows) {
			return job.ErrLeaseLost
		}
		if err != nil {
			return fmt.Errorf("sqlite: returning a job for alignment: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO handbacks (seq, n) VALUES (?, 1)
			ON CONFLICT (seq) DO UPDATE SET n = n + 1`, seq); err != nil {
			return err
		}
		changed(id, "") // queued again: the aligners' watch of the queue wakes
		return nil
	})
}

// ClaimSearch implements store.Aligning: one upsert, which takes the key over only from
// its holder or from a claim that ran out, run by the one writer.
func (s *Store) ClaimSearch(ctx context.Context, key, holder string, now, until time.Time) (bool, error) {
	if holder == "" {
		return false, errNoHolder
	}
	var won bool
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx, changed func(...string)) error {
		r, err := tx.ExecContext(ctx, `INSERT INTO search_claims (key, holder, expires_at) VALUES (?1, ?2, ?3)
			ON CONFLICT (key) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
			WHERE search_claims.holder = excluded.holder OR search_claims.expires_at < ?4`,
			key, holder, until.UnixMilli(), now.UnixMilli())
		if err != nil {
			return fmt.Errorf("sqlite: claiming a search: %w", err)
		}
		n, err := r.RowsAffected()
		won = n == 1
		return err
	})
	return won, err
}

// ReleaseSearch implements store.Aligning.
func (s *Store) ReleaseSearch(ctx context.Context, key, holder string) error {
	return s.write(ctx, func(ctx context.Context, tx *sql.Tx, changed func(...string)) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM search_claims WHERE key = ? AND holder = ?`, key, holder)
		return err
	})
}

// leaseKept turns an UPDATE that matched no row into job.ErrLeaseLost.
func leaseKept(r sql.Result, err error, doing string) error {
	if err != nil {
		return fmt.Errorf("sqlite: %s: %w", doing, err)
	}
	if n, err := r.RowsAffected(); err != nil || n == 0 {
		return errors.Join(job.ErrLeaseLost, err)
	}
	return nil
}
