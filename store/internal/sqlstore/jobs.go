package sqlstore

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/store"
)

// CreateJob implements store.Jobs.
func (c *Core) CreateJob(ctx context.Context, j *job.Job, opts store.CreateOptions) (store.CreateResult, error) {
	if j.ID == "" || j.CreatedAt.IsZero() || j.Owner.Kind == "" || j.Owner.ID == "" {
		return store.CreateResult{}, fmt.Errorf("%s: CreateJob needs the job's ID, CreatedAt and Owner", c.d.Name)
	}
	row, err := c.newJob(j, opts)
	if err != nil {
		return store.CreateResult{}, err
	}
	var res store.CreateResult
	err = c.db.Write(ctx, func(ctx context.Context, tx Querier, changed func(...string)) error {
		res = store.CreateResult{}
		serviceWide, err := c.db.LockCreate(ctx, tx, row.Owner, opts.Limits)
		if err != nil {
			return err
		}
		if opts.IdempotencyKey != "" {
			var hash string
			orig, err := c.d.ScanJob(tx.QueryRow(ctx, c.q.idempotent, row.Owner, opts.IdempotencyKey), &hash)
			switch {
			case err == nil && hash != opts.RequestHash:
				return job.ErrIdempotencyReused
			case err == nil:
				res.Job = orig // a replay: quotas do not apply, nothing starts
				return nil
			case !errors.Is(err, sql.ErrNoRows):
				return err
			}
		}
		if err := c.checkQuotas(ctx, tx, row.Owner, j.CreatedAt, opts.Limits, serviceWide); err != nil {
			return err
		}
		created, err := c.db.InsertJob(ctx, tx, row)
		if err != nil {
			return err
		}
		res.Job, res.Created = created, true
		if opts.Limits.CreatesPerMinute > 0 {
			if _, err := tx.Exec(ctx, logCreate, row.Owner, row.CreatedAt); err != nil {
				return err
			}
		}
		if opts.Limits.Retained > 0 && serviceWide {
			if res.Evicted, err = c.evict(ctx, tx, opts.Limits.Retained); err != nil {
				return err
			}
		}
		changed(append([]string{j.ID, ""}, res.Evicted...)...)
		return nil
	})
	if err != nil {
		return store.CreateResult{}, err
	}
	return res, nil
}

// newJob encodes j for InsertJob.
func (c *Core) newJob(j *job.Job, opts store.CreateOptions) (NewJob, error) {
	params, err := json.Marshal(j.Params)
	if err != nil {
		return NewJob{}, fmt.Errorf("%s: params: %w", c.d.Name, err)
	}
	input, err := json.Marshal(j.Input)
	if err != nil {
		return NewJob{}, fmt.Errorf("%s: input: %w", c.d.Name, err)
	}
	row := NewJob{ID: j.ID, Owner: j.Owner.String(), Kind: string(j.Kind), Name: j.Name, Model: j.Model,
		Protocol: j.Protocol, RunModel: j.RunModel, Params: string(params), Input: string(input),
		Total: j.Total, CreatedAt: c.d.Time(j.CreatedAt)}
	if opts.IdempotencyKey != "" {
		row.IdemKey, row.RequestHash = opts.IdempotencyKey, opts.RequestHash
	}
	if len(j.Searches) > 0 {
		b, err := json.Marshal(j.Searches)
		if err != nil {
			return NewJob{}, fmt.Errorf("%s: searches: %w", c.d.Name, err)
		}
		row.Searches, row.Aligning = string(b), true
	}
	return row, nil
}

// checkQuotas refuses a create over a per-owner quota or when the service's queue is full.
// "Now" is the job's CreatedAt, so that callers and tests control the clock. The queue cap
// is checked when the service-wide limits are in reach (Driver.LockCreate).
func (c *Core) checkQuotas(ctx context.Context, tx Querier, owner string, now time.Time, l store.Limits, serviceWide bool) error {
	if l.ActivePerOwner > 0 {
		var n int
		if err := tx.QueryRow(ctx, countActive, owner).Scan(&n); err != nil {
			return err
		}
		if n >= l.ActivePerOwner {
			after, err := c.activeRetryAfter(ctx, tx, owner, now)
			if err != nil {
				return err
			}
			return &job.LimitError{RetryAfter: after, Reason: fmt.Sprintf(
				"You have %d active (queued or running) jobs, the most allowed; wait until one ends.", n)}
		}
	}
	if l.CreatesPerMinute > 0 {
		cutoff := c.d.Time(now.Add(-store.CreateWindow)) // the window is (cutoff, now]
		if _, err := tx.Exec(ctx, c.d.PruneCreates, owner, cutoff); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, countCreates, owner, cutoff).Scan(&n); err != nil {
			return err
		}
		if n >= l.CreatesPerMinute {
			// One more create fits when the window holds limit-1 of them: when the
			// (n-limit+1)-th oldest has left it.
			var at any
			if err := tx.QueryRow(ctx, nthCreate, owner, cutoff, n-l.CreatesPerMinute).Scan(&at); err != nil {
				return err
			}
			after := c.d.TimeOf(at).Add(store.CreateWindow).Sub(now).Truncate(time.Millisecond)
			return &job.LimitError{RetryAfter: max(after, store.MinRetryAfter), Reason: fmt.Sprintf(
				"You created %d jobs in the last minute, the most allowed.", n)}
		}
	}
	if l.QueuedServiceWide > 0 && serviceWide {
		var n int
		if err := tx.QueryRow(ctx, c.d.CountQueued).Scan(&n); err != nil {
			return err
		}
		if n >= l.QueuedServiceWide {
			after, err := c.capacityRetryAfter(ctx, tx, now)
			if err != nil {
				return err
			}
			return &job.LimitError{Capacity: true, RetryAfter: after, Reason: fmt.Sprintf(
				"The service has %d jobs waiting, as many as it queues; try again later.", n)}
		}
	}
	return nil
}

// activeRetryAfter estimates when the owner's first active job ends (store.EstimateRetryAfter):
// the longest-running one, or with none running the oldest queued one.
func (c *Core) activeRetryAfter(ctx context.Context, tx Querier, owner string, now time.Time) (time.Duration, error) {
	var model string
	var started any
	err := tx.QueryRow(ctx, longestRunningOf, owner).Scan(&model, &started)
	if errors.Is(err, sql.ErrNoRows) {
		err = tx.QueryRow(ctx, oldestQueuedOf, owner).Scan(&model)
		if errors.Is(err, sql.ErrNoRows) {
			return store.DefaultRetryAfter, nil
		}
	}
	if err != nil {
		return 0, err
	}
	return c.estimate(ctx, tx, model, c.d.TimeOf(started), now)
}

// capacityRetryAfter estimates when the queue moves: when the longest-running job of all
// ends and its worker leases the next.
func (c *Core) capacityRetryAfter(ctx context.Context, tx Querier, now time.Time) (time.Duration, error) {
	var model string
	var started any
	err := tx.QueryRow(ctx, longestRunning).Scan(&model, &started)
	if errors.Is(err, sql.ErrNoRows) {
		return store.DefaultRetryAfter, nil
	}
	if err != nil {
		return 0, err
	}
	return c.estimate(ctx, tx, model, c.d.TimeOf(started), now)
}

// estimate is store.EstimateRetryAfter for a job of model started at started (zero: not
// started), from the model's recent runtimes.
func (c *Core) estimate(ctx context.Context, tx Querier, model string, started, now time.Time) (time.Duration, error) {
	rows, err := tx.Query(ctx, runtimes, model, store.RuntimeSamples)
	if err != nil {
		return 0, err
	}
	var runtimes []time.Duration
	var from, to any
	err = each(rows, func() error {
		if err := rows.Scan(&from, &to); err != nil {
			return err
		}
		runtimes = append(runtimes, c.d.TimeOf(to).Sub(c.d.TimeOf(from)).Truncate(time.Millisecond))
		return nil
	})
	if err != nil {
		return 0, err
	}
	var elapsed time.Duration
	if !started.IsZero() {
		elapsed = now.Sub(started)
	}
	return store.EstimateRetryAfter(runtimes, elapsed), nil
}

// evict deletes finished jobs, one at a time, until at most retained jobs remain or none
// is left to evict. Active jobs are never evicted: when only they remain the total may
// stay over retained; refusing the create instead would turn a storage policy into a
// quota that no one asked for (and the active-jobs quota already bounds active jobs).
func (c *Core) evict(ctx context.Context, tx Querier, retained int) ([]string, error) {
	var total int
	if err := tx.QueryRow(ctx, c.d.CountJobs).Scan(&total); err != nil {
		return nil, err
	}
	var evicted []string
	for range total - retained {
		var id string
		err := tx.QueryRow(ctx, c.d.EvictOne).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: evicting: %w", c.d.Name, err)
		}
		evicted = append(evicted, id)
	}
	return evicted, nil
}

// FindIdempotent implements store.Jobs.
func (c *Core) FindIdempotent(ctx context.Context, owner job.Owner, key string) (*job.Job, string, error) {
	var hash string
	j, err := c.d.ScanJob(c.db.QueryRow(ctx, c.q.idempotent, owner.String(), key), &hash)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, "", job.ErrNotFound
	}
	return j, hash, err
}

// GetJob implements store.Jobs.
func (c *Core) GetJob(ctx context.Context, id string) (*job.Job, error) {
	j, err := c.d.ScanJob(c.db.QueryRow(ctx, c.q.getJob, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, job.ErrNotFound
	}
	return j, err
}

// GetJobSummary implements store.Jobs. It reads the database every time.
func (c *Core) GetJobSummary(ctx context.Context, id string) (*store.JobSummary, error) {
	j, err := c.d.scanSummary(c.db.QueryRow(ctx, c.q.getSummary, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, job.ErrNotFound
	}
	return j, err
}

// The cursor is the seq of the last job on the page, base64 so that callers treat it as
// opaque and it is safe in a query string.
func encodeCursor(seq int64) string {
	return base64.RawURLEncoding.EncodeToString(strconv.AppendInt(nil, seq, 10))
}

func decodeCursor(c string) (int64, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err == nil {
		var seq int64
		if seq, err = strconv.ParseInt(string(b), 10, 64); err == nil && seq > 0 {
			return seq, nil
		}
	}
	return 0, &job.InvalidError{Field: "cursor", Reason: "not a cursor this server issued"}
}

// ListJobs implements store.Jobs. A limit below 1 is taken as 1.
func (c *Core) ListJobs(ctx context.Context, owner job.Owner, cursor string, limit int) (store.JobPage, error) {
	limit = max(limit, 1)
	before := int64(math.MaxInt64)
	if cursor != "" {
		var err error
		if before, err = decodeCursor(cursor); err != nil {
			return store.JobPage{}, err
		}
	}
	rows, err := c.db.Query(ctx, c.q.listJobs, owner.String(), before, limit+1)
	if err != nil {
		return store.JobPage{}, err
	}
	defer rows.Close()
	var page store.JobPage
	var seq, last int64
	for rows.Next() {
		j, err := c.d.scanSummary(rows, &seq)
		if err != nil {
			return store.JobPage{}, err
		}
		if len(page.Jobs) == limit {
			page.NextCursor = encodeCursor(last)
			break
		}
		page.Jobs = append(page.Jobs, j)
		last = seq
	}
	return page, rows.Err()
}

// ownedJob reads the summary of job id inside tx, locking its row where writes run
// concurrently; another owner's job is as unknown as a missing one.
func (c *Core) ownedJob(ctx context.Context, tx Querier, id string, owner job.Owner) (*store.JobSummary, error) {
	j, err := c.d.scanSummary(tx.QueryRow(ctx, c.q.ownedJob, id))
	if errors.Is(err, sql.ErrNoRows) || err == nil && j.Owner != owner {
		return nil, job.ErrNotFound
	}
	return j, err
}

// CancelJob implements store.Jobs.
func (c *Core) CancelJob(ctx context.Context, id string, owner job.Owner, now time.Time) (*store.JobSummary, error) {
	var out *store.JobSummary
	err := c.db.Write(ctx, func(ctx context.Context, tx Querier, changed func(...string)) error {
		j, err := c.ownedJob(ctx, tx, id, owner)
		if err != nil {
			return err
		}
		switch j.Status {
		case job.Canceled:
			out = j
			return nil
		case job.Succeeded, job.Failed:
			return &job.ConflictError{Reason: fmt.Sprintf(
				"The job has %s; only a queued or running job can be canceled.", j.Status)}
		}
		// The worker of a running job learns of it at its next heartbeat (ErrLeaseLost).
		out, err = c.d.scanSummary(tx.QueryRow(ctx, c.q.cancel, c.d.Time(now), id))
		if err != nil {
			return err
		}
		changed(id)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteJob implements store.Jobs. The idempotency entry lives on the row, so it goes too.
func (c *Core) DeleteJob(ctx context.Context, id string, owner job.Owner) (*store.JobSummary, error) {
	var out *store.JobSummary
	err := c.db.Write(ctx, func(ctx context.Context, tx Querier, changed func(...string)) error {
		j, err := c.ownedJob(ctx, tx, id, owner)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, deleteJob, id); err != nil {
			return err
		}
		out = j
		changed(id)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// CountJobs implements store.Jobs.
func (c *Core) CountJobs(ctx context.Context) ([]store.JobCount, error) {
	rows, err := c.db.Query(ctx, census)
	if err != nil {
		return nil, err
	}
	var out []store.JobCount
	var n store.JobCount
	var kind, status string
	err = each(rows, func() error {
		if err := rows.Scan(&kind, &n.RunModel, &status, &n.N); err != nil {
			return err
		}
		n.Kind, n.Status = job.Kind(kind), job.Status(status)
		out = append(out, n)
		return nil
	})
	return out, err
}
