package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/chaperone-bio/chaperone/job"
)

// The alignment stage (store.Aligning). A claim on a job lives in align_holder and
// align_until (migration 00006); a job waiting for its searches is one that is queued with
// aligning set, and the jobs_aligning index holds exactly those. Every change is one
// statement fenced by the claim or the attempt, which PostgreSQL rechecks on the row it
// locked, so that aligners on any number of replicas never hold one job at once.

// aligningJob matches the job $1 still waiting for its searches under holder $2's claim:
// what RenewAlignment and FinishAlignment are fenced by.
const aligningJob = `id = $1 AND status = 'queued' AND aligning AND align_holder = $2`

var errNoHolder = errors.New("postgres: a claim needs a holder")

// ClaimAlignment implements store.Aligning. The pick skips jobs other claims are taking
// (FOR UPDATE SKIP LOCKED), so aligners claiming at once take different jobs; its terms on
// status and aligning are those of the partial index jobs_aligning.
func (s *Store) ClaimAlignment(ctx context.Context, holder string, now, until time.Time) (*job.Job, error) {
	if holder == "" {
		return nil, errNoHolder
	}
	var out *job.Job
	err := s.write(ctx, func(tx pgx.Tx, changed func(...string)) error {
		out = nil
		j, err := scanJob(tx.QueryRow(ctx, `WITH pick AS (
				SELECT seq FROM jobs
				WHERE status = 'queued' AND aligning AND (align_holder = '' OR align_until < $4)
				ORDER BY seq LIMIT 1
				FOR UPDATE SKIP LOCKED)
			UPDATE jobs SET align_holder = $1, align_until = $2, stage = $3
			FROM pick WHERE jobs.seq = pick.seq
			RETURNING `+jobCols, holder, until, job.StageMSA, now))
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("postgres: claiming an alignment: %w", err)
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
	return s.write(ctx, func(tx pgx.Tx, changed func(...string)) error {
		tag, err := tx.Exec(ctx, `UPDATE jobs SET align_until = $3 WHERE `+aligningJob, id, holder, until)
		return leaseKept(tag, err, "renewing an alignment")
	})
}

// FinishAlignment implements store.Aligning. Aligning stays set on a failed job, as on a
// job canceled while aligning: its searches were never done.
func (s *Store) FinishAlignment(ctx context.Context, id, holder string, now time.Time, failure string) error {
	return s.write(ctx, func(tx pgx.Tx, changed func(...string)) error {
		if failure == "" {
			tag, err := tx.Exec(ctx, `UPDATE jobs SET aligning = false, align_holder = '', align_until = NULL,
				stage = '' WHERE `+aligningJob, id, holder)
			if err := leaseKept(tag, err, "finishing an alignment"); err != nil {
				return err
			}
			changed(id, "") // leasable now
			return nil
		}
		tag, err := tx.Exec(ctx, `UPDATE jobs SET status = 'failed', error = $3, finished_at = $4,
			align_holder = '', align_until = NULL WHERE `+aligningJob, id, holder, failure, now)
		if err := leaseKept(tag, err, "failing an alignment"); err != nil {
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
	return s.write(ctx, func(tx pgx.Tx, changed func(...string)) error {
		tag, err := tx.Exec(ctx, `UPDATE jobs SET status = 'queued', aligning = true, handbacks = handbacks + 1,
			align_holder = '', align_until = NULL, stage = '', progress = NULL, done = 0, total = 0,
			worker_id = '', lease_expires_at = NULL, started_at = NULL, last_activity_at = NULL
			WHERE id = $1 AND status = 'running' AND attempt = $2`, id, attempt)
		if err := leaseKept(tag, err, "returning a job for alignment"); err != nil {
			return err
		}
		changed(id, "") // queued again: the aligners' watch of the queue wakes
		return nil
	})
}

// ClaimSearch implements store.Aligning: one upsert. Of concurrent inserts of one key, one
// inserts and the others wait for it to commit and then take the conflict's path, whose
// condition they evaluate on the row it committed: a key is never held twice.
func (s *Store) ClaimSearch(ctx context.Context, key, holder string, now, until time.Time) (bool, error) {
	if holder == "" {
		return false, errNoHolder
	}
	tag, err := s.pool.Exec(ctx, `INSERT INTO search_claims (key, holder, expires_at) VALUES ($1, $2, $3)
		ON CONFLICT (key) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
		WHERE search_claims.holder = excluded.holder OR search_claims.expires_at < $4`,
		key, holder, until, now)
	if err != nil {
		return false, fmt.Errorf("postgres: claiming a search: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

// ReleaseSearch implements store.Aligning.
func (s *Store) ReleaseSearch(ctx context.Context, key, holder string) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM search_claims WHERE key = $1 AND holder = $2`, key, holder)
	return err
}

// leaseKept turns an UPDATE that matched no row into job.ErrLeaseLost.
func leaseKept(tag pgconn.CommandTag, err error, doing string) error {
	if err != nil {
		return fmt.Errorf("postgres: %s: %w", doing, err)
	}
	if tag.RowsAffected() == 0 {
		return job.ErrLeaseLost
	}
	return nil
}
