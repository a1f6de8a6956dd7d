package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/chaperone-bio/chaperone/job"
)

// The alignment stage (store.Aligning). Every change is one statement fenced by the claim
// or the attempt, so that aligners on any number of replicas never hold one job at once.

// ClaimAlignment implements store.Aligning.
func (c *Core) ClaimAlignment(ctx context.Context, holder string, now, until time.Time) (*job.Job, error) {
	if holder == "" {
		return nil, c.errNoHolder()
	}
	return c.takeJob(ctx, "claiming an alignment", c.d.ClaimAlignment,
		holder, c.d.Time(until), job.StageMSA, c.d.Time(now))
}

// RenewAlignment implements store.Aligning. Only the claim's end changes, which no summary
// shows: watchers are not woken.
func (c *Core) RenewAlignment(ctx context.Context, id, holder string, until time.Time) error {
	return c.db.Write(ctx, func(ctx context.Context, tx Querier, changed func(...string)) error {
		n, err := tx.Exec(ctx, renewAlignment, id, holder, c.d.Time(until))
		return c.leaseKept(n, err, "renewing an alignment")
	})
}

// FinishAlignment implements store.Aligning. Aligning stays set on a failed job, as on a
// job canceled while aligning: its searches were never done.
func (c *Core) FinishAlignment(ctx context.Context, id, holder string, now time.Time, failure string) error {
	return c.db.Write(ctx, func(ctx context.Context, tx Querier, changed func(...string)) error {
		if failure == "" {
			n, err := tx.Exec(ctx, finishAlignment, id, holder)
			if err := c.leaseKept(n, err, "finishing an alignment"); err != nil {
				return err
			}
			changed(id, "") // leasable now
			return nil
		}
		n, err := tx.Exec(ctx, failAlignment, id, holder, failure, c.d.Time(now))
		if err := c.leaseKept(n, err, "failing an alignment"); err != nil {
			return err
		}
		changed(id)
		return nil
	})
}

// ReturnForAlignment implements store.Aligning. The job is requeued as HandBack requeues
// one, and its attempt is counted likewise, so it is not held against the attempt limit.
func (c *Core) ReturnForAlignment(ctx context.Context, id string, attempt int) error {
	return c.db.Write(ctx, func(ctx context.Context, tx Querier, changed func(...string)) error {
		var seq int64
		err := tx.QueryRow(ctx, returnForAlignment, id, attempt).Scan(&seq)
		if errors.Is(err, sql.ErrNoRows) {
			return job.ErrLeaseLost
		}
		if err != nil {
			return fmt.Errorf("%s: returning a job for alignment: %w", c.d.Name, err)
		}
		if _, err := tx.Exec(ctx, c.d.CountHandBack, seq); err != nil {
			return err
		}
		changed(id, "") // queued again: the aligners' watch of the queue wakes
		return nil
	})
}

// ClaimSearch implements store.Aligning: one upsert. Of concurrent inserts of one key, one
// inserts and the others wait for it to commit and then take the conflict's path, whose
// condition they evaluate on the row it committed: a key is never held twice.
func (c *Core) ClaimSearch(ctx context.Context, key, holder string, now, until time.Time) (bool, error) {
	if holder == "" {
		return false, c.errNoHolder()
	}
	n, err := c.db.Exec(ctx, claimSearch, key, holder, c.d.Time(until), c.d.Time(now))
	if err != nil {
		return false, fmt.Errorf("%s: claiming a search: %w", c.d.Name, err)
	}
	return n == 1, nil
}

// ReleaseSearch implements store.Aligning.
func (c *Core) ReleaseSearch(ctx context.Context, key, holder string) error {
	_, err := c.db.Exec(ctx, releaseSearch, key, holder)
	return err
}

// ReleaseAligner implements store.Aligning. A holder's name is escaped for LIKE, so that
// one name's '_' or '%' matches no other's.
func (c *Core) ReleaseAligner(ctx context.Context, holder string) ([]string, error) {
	if holder == "" {
		return nil, c.errNoHolder()
	}
	var freed []string
	err := c.db.Write(ctx, func(ctx context.Context, tx Querier, changed func(...string)) error {
		freed = nil
		rows, err := tx.Query(ctx, releaseAligner, holder)
		if err != nil {
			return fmt.Errorf("%s: releasing an aligner: %w", c.d.Name, err)
		}
		err = each(rows, func() error {
			var id string
			if err := rows.Scan(&id); err != nil {
				return err
			}
			freed = append(freed, id)
			return nil
		})
		if err != nil {
			return fmt.Errorf("%s: releasing an aligner: %w", c.d.Name, err)
		}
		if _, err := tx.Exec(ctx, releaseAlignerSearches, holder, likePrefix(holder)+"/%"); err != nil {
			return fmt.Errorf("%s: releasing an aligner's searches: %w", c.d.Name, err)
		}
		if len(freed) > 0 {
			changed(append(freed, "")...)
		}
		return nil
	})
	return freed, err
}

// likePrefix escapes s for a LIKE pattern whose escape character is a backslash (named in
// releaseAlignerSearches: SQLite's LIKE has none unless told).
func likePrefix(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

func (c *Core) errNoHolder() error {
	return fmt.Errorf("%s: a claim needs a holder", c.d.Name)
}

// leaseKept turns an UPDATE that matched no row into job.ErrLeaseLost.
func (c *Core) leaseKept(n int64, err error, doing string) error {
	if err != nil {
		return fmt.Errorf("%s: %s: %w", c.d.Name, doing, err)
	}
	if n == 0 {
		return job.ErrLeaseLost
	}
	return nil
}
