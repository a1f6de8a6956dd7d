package postgres

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/store"
)

// summaryCols are the columns of a store.JobSummary, in the order of summaryRow.dest, then
// whether there are results (without reading them).
const summaryCols = `id, owner, kind, name, model, protocol, run_model, params, status,
	stage, progress, done, total, error, attempt, created_at, started_at, finished_at, worker_id,
	aligning, status = 'succeeded' AND results IS NOT NULL`

// jobCols is the column list that scanJob reads, in its order.
const jobCols = summaryCols + `, lease_expires_at, last_activity_at, results, input, searches`

const terminal = `('succeeded', 'failed', 'canceled')`

// Advisory lock keys of creates: per owner (the owner's hash) in one class, the service
// in another.
const (
	ownerLockClass   = 0x43480001
	serviceLockClass = 0x43480002
)

// summaryRow receives the columns of summaryCols.
type summaryRow struct {
	s                          store.JobSummary
	owner, kind, status        string
	params                     []byte
	created, started, finished *time.Time
}

func (r *summaryRow) dest() []any {
	return []any{&r.s.ID, &r.owner, &r.kind, &r.s.Name, &r.s.Model, &r.s.Protocol, &r.s.RunModel,
		&r.params, &r.status, &r.s.Stage, &r.s.Progress, &r.s.Done, &r.s.Total, &r.s.Error, &r.s.Attempt,
		&r.created, &r.started, &r.finished, &r.s.WorkerID, &r.s.Aligning, &r.s.ResultsReady}
}

func (r *summaryRow) summary() (*store.JobSummary, error) {
	s := &r.s
	o, ok := job.ParseOwner(r.owner)
	if !ok {
		return nil, fmt.Errorf("postgres: job %s has a malformed owner %q", s.ID, r.owner)
	}
	s.Owner, s.Kind, s.Status = o, job.Kind(r.kind), job.Status(r.status)
	s.CreatedAt, s.StartedAt, s.FinishedAt = utc(r.created), utc(r.started), utc(r.finished)
	if err := json.Unmarshal(r.params, &s.Params); err != nil {
		return nil, fmt.Errorf("postgres: job %s params: %w", s.ID, err)
	}
	return s, nil
}

// scanSummary reads the columns of summaryCols, then any extra columns into extra.
func scanSummary(row pgx.Row, extra ...any) (*store.JobSummary, error) {
	var r summaryRow
	if err := row.Scan(append(r.dest(), extra...)...); err != nil {
		return nil, err
	}
	return r.summary()
}

// scanJob reads the columns of jobCols, then any extra columns into extra.
func scanJob(row pgx.Row, extra ...any) (*job.Job, error) {
	var (
		r                        summaryRow
		input, searches, results []byte
		lease, activity          *time.Time
	)
	dest := append(r.dest(), &lease, &activity, &results, &input, &searches)
	if err := row.Scan(append(dest, extra...)...); err != nil {
		return nil, err
	}
	s, err := r.summary()
	if err != nil {
		return nil, err
	}
	j := &job.Job{ID: s.ID, Owner: s.Owner, Kind: s.Kind, Name: s.Name, Model: s.Model,
		Protocol: s.Protocol, RunModel: s.RunModel, Params: s.Params,
		Status: s.Status, Stage: s.Stage, Progress: s.Progress, Done: s.Done, Total: s.Total,
		Error: s.Error, Attempt: s.Attempt, WorkerID: s.WorkerID, Aligning: s.Aligning,
		LeaseExpiresAt: utc(lease), LastActivityAt: utc(activity),
		CreatedAt: s.CreatedAt, StartedAt: s.StartedAt, FinishedAt: s.FinishedAt}
	if err := json.Unmarshal(input, &j.Input); err != nil {
		return nil, fmt.Errorf("postgres: job %s input: %w", j.ID, err)
	}
	if searches != nil {
		if err := json.Unmarshal(searches, &j.Searches); err != nil {
			return nil, fmt.Errorf("postgres: job %s searches: %w", j.ID, err)
		}
	}
	if results != nil {
		j.Results = new(job.Results)
		if err := json.Unmarshal(results, j.Results); err != nil {
			return nil, fmt.Errorf("postgres: job %s results: %w", j.ID, err)
		}
	}
	return j, nil
}

// CreateJob implements store.Jobs.
func (s *Store) CreateJob(ctx context.Context, j *job.Job, opts store.CreateOptions) (store.CreateResult, error) {
	if j.ID == "" || j.CreatedAt.IsZero() || j.Owner.Kind == "" || j.Owner.ID == "" {
		return store.CreateResult{}, errors.New("postgres: CreateJob needs the job's ID, CreatedAt and Owner")
	}
	params, err := json.Marshal(j.Params)
	if err != nil {
		return store.CreateResult{}, fmt.Errorf("postgres: params: %w", err)
	}
	input, err := json.Marshal(j.Input)
	if err != nil {
		return store.CreateResult{}, fmt.Errorf("postgres: input: %w", err)
	}
	var searches *string // NULL unless the job has searches to do
	if len(j.Searches) > 0 {
		b, err := json.Marshal(j.Searches)
		if err != nil {
			return store.CreateResult{}, fmt.Errorf("postgres: searches: %w", err)
		}
		encoded := string(b)
		searches = &encoded
	}
	owner := j.Owner.String()
	var idemKey, reqHash any
	if opts.IdempotencyKey != "" {
		idemKey, reqHash = opts.IdempotencyKey, opts.RequestHash
	}

	var res store.CreateResult
	err = s.write(ctx, func(tx pgx.Tx, changed func(...string)) error {
		res = store.CreateResult{}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, ownerLockClass, owner); err != nil {
			return err
		}
		serviceWide, err := s.needsServiceLock(ctx, tx, opts.Limits)
		if err != nil {
			return err
		}
		if serviceWide {
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, 0)`, serviceLockClass); err != nil {
				return err
			}
		}
		if opts.IdempotencyKey != "" {
			var hash string
			orig, err := scanJob(tx.QueryRow(ctx, `SELECT `+jobCols+`, request_hash FROM jobs
				WHERE owner = $1 AND idem_key = $2`, owner, opts.IdempotencyKey), &hash)
			switch {
			case err == nil && hash != opts.RequestHash:
				return job.ErrIdempotencyReused
			case err == nil:
				res.Job = orig // a replay: quotas do not apply, nothing starts
				return nil
			case !errors.Is(err, pgx.ErrNoRows):
				return err
			}
		}
		if err := checkQuotas(ctx, tx, owner, j.CreatedAt, opts.Limits, serviceWide); err != nil {
			return err
		}
		created, err := scanJob(tx.QueryRow(ctx, `INSERT INTO jobs (id, owner, kind, name, model, protocol,
			run_model, params, input, total, status, created_at, idem_key, request_hash, searches, aligning)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 'queued', $11, $12, $13, $14::json, $15)
			RETURNING `+jobCols,
			j.ID, owner, string(j.Kind), j.Name, j.Model, j.Protocol, j.RunModel,
			string(params), string(input), j.Total, j.CreatedAt, idemKey, reqHash, searches, searches != nil))
		if err != nil {
			return fmt.Errorf("postgres: inserting job: %w", err)
		}
		res.Job, res.Created = created, true
		if opts.Limits.CreatesPerMinute > 0 {
			if _, err := tx.Exec(ctx, `INSERT INTO creates (owner, at) VALUES ($1, $2)`, owner, j.CreatedAt); err != nil {
				return err
			}
		}
		if opts.Limits.Retained > 0 && serviceWide {
			if res.Evicted, err = evict(ctx, tx, opts.Limits.Retained); err != nil {
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

// needsServiceLock reports whether a create must hold the service lock: when the queue cap
// or retention could come into play. Without the lock, a count misses at most the creates
// of transactions that have not committed yet, one per connection the server allows; so
// when the counts are further than that from the limits, no set of concurrent creates can
// cross them, and creates of different owners go on in parallel.
func (s *Store) needsServiceLock(ctx context.Context, tx pgx.Tx, l store.Limits) (bool, error) {
	if l.QueuedServiceWide <= 0 && l.Retained <= 0 {
		return false, nil
	}
	var queued, total int
	if err := tx.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status = 'queued'), count(*) FROM jobs`).
		Scan(&queued, &total); err != nil {
		return false, err
	}
	near := func(n, limit int) bool { return limit > 0 && n+s.maxConns >= limit }
	return near(queued, l.QueuedServiceWide) || near(total, l.Retained), nil
}

// checkQuotas refuses a create over a per-owner quota or when the service's queue is full.
// "Now" is the job's CreatedAt, so that callers and tests control the clock. The queue cap
// is checked under the service lock only (needsServiceLock says when it is needed).
func checkQuotas(ctx context.Context, tx pgx.Tx, owner string, now time.Time, l store.Limits, serviceWide bool) error {
	if l.ActivePerOwner > 0 {
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM jobs
			WHERE owner = $1 AND status IN ('queued', 'running')`, owner).Scan(&n); err != nil {
			return err
		}
		if n >= l.ActivePerOwner {
			after, err := activeRetryAfter(ctx, tx, owner, now)
			if err != nil {
				return err
			}
			return &job.LimitError{RetryAfter: after, Reason: fmt.Sprintf(
				"You have %d active (queued or running) jobs, the most allowed; wait until one ends.", n)}
		}
	}
	if l.CreatesPerMinute > 0 {
		cutoff := now.Add(-store.CreateWindow) // the window is (cutoff, now]
		if _, err := tx.Exec(ctx, `DELETE FROM creates WHERE owner = $1 AND at <= $2`, owner, cutoff); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM creates WHERE owner = $1 AND at > $2`,
			owner, cutoff).Scan(&n); err != nil {
			return err
		}
		if n >= l.CreatesPerMinute {
			// One more create fits when the window holds limit-1 of them: when the
			// (n-limit+1)-th oldest has left it.
			var at time.Time
			if err := tx.QueryRow(ctx, `SELECT at FROM creates WHERE owner = $1 AND at > $2
				ORDER BY at LIMIT 1 OFFSET $3`, owner, cutoff, n-l.CreatesPerMinute).Scan(&at); err != nil {
				return err
			}
			after := at.Add(store.CreateWindow).Sub(now).Truncate(time.Millisecond)
			return &job.LimitError{RetryAfter: max(after, store.MinRetryAfter), Reason: fmt.Sprintf(
				"You created %d jobs in the last minute, the most allowed.", n)}
		}
	}
	if l.QueuedServiceWide > 0 && serviceWide {
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM jobs WHERE status = 'queued'`).Scan(&n); err != nil {
			return err
		}
		if n >= l.QueuedServiceWide {
			after, err := capacityRetryAfter(ctx, tx, now)
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
func activeRetryAfter(ctx context.Context, tx pgx.Tx, owner string, now time.Time) (time.Duration, error) {
	var model string
	var started *time.Time
	err := tx.QueryRow(ctx, `SELECT run_model, started_at FROM jobs
		WHERE owner = $1 AND status = 'running' ORDER BY started_at LIMIT 1`, owner).Scan(&model, &started)
	if errors.Is(err, pgx.ErrNoRows) {
		err = tx.QueryRow(ctx, `SELECT run_model FROM jobs
			WHERE owner = $1 AND status = 'queued' ORDER BY seq LIMIT 1`, owner).Scan(&model)
		if errors.Is(err, pgx.ErrNoRows) {
			return store.DefaultRetryAfter, nil
		}
	}
	if err != nil {
		return 0, err
	}
	return estimate(ctx, tx, model, started, now)
}

// capacityRetryAfter estimates when the queue moves: when the longest-running job of all
// ends and its worker leases the next.
func capacityRetryAfter(ctx context.Context, tx pgx.Tx, now time.Time) (time.Duration, error) {
	var model string
	var started *time.Time
	err := tx.QueryRow(ctx, `SELECT run_model, started_at FROM jobs
		WHERE status = 'running' ORDER BY started_at LIMIT 1`).Scan(&model, &started)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.DefaultRetryAfter, nil
	}
	if err != nil {
		return 0, err
	}
	return estimate(ctx, tx, model, started, now)
}

func estimate(ctx context.Context, tx pgx.Tx, model string, started *time.Time, now time.Time) (time.Duration, error) {
	rows, err := tx.Query(ctx, `SELECT started_at, finished_at FROM jobs
		WHERE run_model = $1 AND status = 'succeeded' AND started_at IS NOT NULL AND finished_at IS NOT NULL
		ORDER BY finished_at DESC LIMIT $2`, model, store.RuntimeSamples)
	if err != nil {
		return 0, err
	}
	var runtimes []time.Duration
	var from, to time.Time
	_, err = pgx.ForEachRow(rows, []any{&from, &to}, func() error {
		runtimes = append(runtimes, to.Sub(from).Truncate(time.Millisecond))
		return nil
	})
	if err != nil {
		return 0, err
	}
	var elapsed time.Duration
	if started != nil {
		elapsed = now.Sub(*started)
	}
	return store.EstimateRetryAfter(runtimes, elapsed), nil
}

// evict deletes finished jobs, one at a time, until at most retained jobs remain or none
// is left to evict: the oldest finished job of the owner holding the most jobs, among
// owners that have a finished job at all. Active jobs are never evicted, as in store/sqlite.
// It runs under the service lock, so evictions of concurrent creates never overlap.
func evict(ctx context.Context, tx pgx.Tx, retained int) ([]string, error) {
	var total int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM jobs`).Scan(&total); err != nil {
		return nil, err
	}
	var evicted []string
	for range total - retained {
		var id string
		err := tx.QueryRow(ctx, `DELETE FROM jobs WHERE seq = (
			SELECT j.seq FROM jobs j
			WHERE j.status IN `+terminal+` AND j.owner = (
				SELECT c.owner FROM jobs c GROUP BY c.owner
				HAVING bool_or(c.status IN `+terminal+`)
				ORDER BY count(*) DESC, c.owner LIMIT 1)
			ORDER BY j.seq LIMIT 1)
			RETURNING id`).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("postgres: evicting: %w", err)
		}
		evicted = append(evicted, id)
	}
	return evicted, nil
}

// FindIdempotent implements store.Jobs.
func (s *Store) FindIdempotent(ctx context.Context, owner job.Owner, key string) (*job.Job, string, error) {
	var hash string
	j, err := scanJob(s.pool.QueryRow(ctx, `SELECT `+jobCols+`, request_hash FROM jobs
		WHERE owner = $1 AND idem_key = $2`, owner.String(), key), &hash)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, "", job.ErrNotFound
	}
	return j, hash, err
}

// GetJob implements store.Jobs.
func (s *Store) GetJob(ctx context.Context, id string) (*job.Job, error) {
	j, err := scanJob(s.pool.QueryRow(ctx, `SELECT `+jobCols+` FROM jobs WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, job.ErrNotFound
	}
	return j, err
}

// GetJobSummary implements store.Jobs. It reads the database every time: another replica
// may have changed the job a moment ago.
func (s *Store) GetJobSummary(ctx context.Context, id string) (*store.JobSummary, error) {
	j, err := scanSummary(s.pool.QueryRow(ctx, `SELECT `+summaryCols+` FROM jobs WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
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
func (s *Store) ListJobs(ctx context.Context, owner job.Owner, cursor string, limit int) (store.JobPage, error) {
	limit = max(limit, 1)
	before := int64(math.MaxInt64)
	if cursor != "" {
		var err error
		if before, err = decodeCursor(cursor); err != nil {
			return store.JobPage{}, err
		}
	}
	rows, err := s.pool.Query(ctx, `SELECT `+summaryCols+`, seq FROM jobs WHERE owner = $1 AND seq < $2
		ORDER BY seq DESC LIMIT $3`, owner.String(), before, limit+1)
	if err != nil {
		return store.JobPage{}, err
	}
	defer rows.Close()
	var page store.JobPage
	var seq, last int64
	for rows.Next() {
		j, err := scanSummary(rows, &seq)
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

// ownedJob locks job id inside tx and reads its summary; another owner's job is as unknown
// as a missing one.
func ownedJob(ctx context.Context, tx pgx.Tx, id string, owner job.Owner) (*store.JobSummary, error) {
	j, err := scanSummary(tx.QueryRow(ctx, `SELECT `+summaryCols+` FROM jobs WHERE id = $1 FOR UPDATE`, id))
	if errors.Is(err, pgx.ErrNoRows) || err == nil && j.Owner != owner {
		return nil, job.ErrNotFound
	}
	return j, err
}

// CancelJob implements store.Jobs.
func (s *Store) CancelJob(ctx context.Context, id string, owner job.Owner, now time.Time) (*store.JobSummary, error) {
	var out *store.JobSummary
	err := s.write(ctx, func(tx pgx.Tx, changed func(...string)) error {
		j, err := ownedJob(ctx, tx, id, owner)
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
		out, err = scanSummary(tx.QueryRow(ctx, `UPDATE jobs SET status = 'canceled', finished_at = $1
			WHERE id = $2 RETURNING `+summaryCols, now, id))
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
func (s *Store) DeleteJob(ctx context.Context, id string, owner job.Owner) (*store.JobSummary, error) {
	var out *store.JobSummary
	err := s.write(ctx, func(tx pgx.Tx, changed func(...string)) error {
		j, err := ownedJob(ctx, tx, id, owner)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM jobs WHERE id = $1`, id); err != nil {
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
func (s *Store) CountJobs(ctx context.Context) ([]store.JobCount, error) {
	rows, err := s.pool.Query(ctx, `SELECT kind, run_model, status, count(*) FROM jobs
		GROUP BY kind, run_model, status ORDER BY kind, run_model, status`)
	if err != nil {
		return nil, err
	}
	var out []store.JobCount
	var c store.JobCount
	var kind, status string
	_, err = pgx.ForEachRow(rows, []any{&kind, &c.RunModel, &status, &c.N}, func() error {
		c.Kind, c.Status = job.Kind(kind), job.Status(status)
		out = append(out, c)
		return nil
	})
	return out, err
}
