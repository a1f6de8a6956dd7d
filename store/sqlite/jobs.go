package sqlite

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

type scanner interface{ Scan(dest ...any) error }

// summaryRow receives the columns of summaryCols.
type summaryRow struct {
	s                          store.JobSummary
	owner, kind, status        string
	params                     []byte
	progress                   sql.NullFloat64
	created, started, finished sql.NullInt64
}

func (r *summaryRow) dest() []any {
	return []any{&r.s.ID, &r.owner, &r.kind, &r.s.Name, &r.s.Model, &r.s.Protocol, &r.s.RunModel,
		&r.params, &r.status, &r.s.Stage, &r.progress, &r.s.Done, &r.s.Total, &r.s.Error, &r.s.Attempt,
		&r.created, &r.started, &r.finished, &r.s.WorkerID, &r.s.Aligning}
}

func (r *summaryRow) summary() (*store.JobSummary, error) {
	s := &r.s
	o, ok := job.ParseOwner(r.owner)
	if !ok {
		return nil, fmt.Errorf("sqlite: job %s has a malformed owner %q", s.ID, r.owner)
	}
	s.Owner, s.Kind, s.Status = o, job.Kind(r.kind), job.Status(r.status)
	if r.progress.Valid {
		s.Progress = &r.progress.Float64
	}
	s.CreatedAt, s.StartedAt, s.FinishedAt = fromMs(r.created), fromMs(r.started), fromMs(r.finished)
	if err := json.Unmarshal(r.params, &s.Params); err != nil {
		return nil, fmt.Errorf("sqlite: job %s params: %w", s.ID, err)
	}
	return s, nil
}

// scanSummary reads the columns of summaryCols and results_ready, then any extra columns
// into extra.
func scanSummary(sc scanner, extra ...any) (*store.JobSummary, error) {
	var r summaryRow
	if err := sc.Scan(append(append(r.dest(), &r.s.ResultsReady), extra...)...); err != nil {
		return nil, err
	}
	return r.summary()
}

// scanJob reads the columns of jobCols, then any extra columns into extra.
func scanJob(sc scanner, extra ...any) (*job.Job, error) {
	var (
		r                        summaryRow
		input, searches, results []byte
		lease, activity          sql.NullInt64
	)
	dest := append(r.dest(), &lease, &activity, &results, &input, &searches)
	if err := sc.Scan(append(dest, extra...)...); err != nil {
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
		LeaseExpiresAt: fromMs(lease), LastActivityAt: fromMs(activity),
		CreatedAt: s.CreatedAt, StartedAt: s.StartedAt, FinishedAt: s.FinishedAt}
	if err := json.Unmarshal(input, &j.Input); err != nil {
		return nil, fmt.Errorf("sqlite: job %s input: %w", j.ID, err)
	}
	if searches != nil {
		if err := json.Unmarshal(searches, &j.Searches); err != nil {
			return nil, fmt.Errorf("sqlite: job %s searches: %w", j.ID, err)
		}
	}
	if results != nil {
		j.Results = new(job.Results)
		if err := json.Unmarshal(results, j.Results); err != nil {
			return nil, fmt.Errorf("sqlite: job %s results: %w", j.ID, err)
		}
	}
	return j, nil
}

// CreateJob implements store.Jobs.
func (s *Store) CreateJob(ctx context.Context, j *job.Job, opts store.CreateOptions) (store.CreateResult, error) {
	if j.ID == "" || j.CreatedAt.IsZero() || j.Owner.Kind == "" || j.Owner.ID == "" {
		return store.CreateResult{}, errors.New("sqlite: CreateJob needs the job's ID, CreatedAt and Owner")
	}
	params, err := json.Marshal(j.Params)
	if err != nil {
		return store.CreateResult{}, fmt.Errorf("sqlite: params: %w", err)
	}
	input, err := json.Marshal(j.Input)
	if err != nil {
		return store.CreateResult{}, fmt.Errorf("sqlite: input: %w", err)
	}
	var searches any // NULL unless the job has searches to do
	if len(j.Searches) > 0 {
		b, err := json.Marshal(j.Searches)
		if err != nil {
			return store.CreateResult{}, fmt.Errorf("sqlite: searches: %w", err)
		}
		searches = string(b)
	}
	owner := j.Owner.String()
	var idemKey, reqHash any
	if opts.IdempotencyKey != "" {
		idemKey, reqHash = opts.IdempotencyKey, opts.RequestHash
	}

	var res store.CreateResult
	err = s.write(ctx, func(ctx context.Context, tx *sql.Tx, changed func(...string)) error {
		if opts.IdempotencyKey != "" {
			var hash string
			orig, err := scanJob(tx.StmtContext(ctx, s.st.idemLookup).QueryRowContext(ctx, owner, opts.IdempotencyKey), &hash)
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
		if err := s.checkQuotas(ctx, tx, owner, j.CreatedAt, opts.Limits); err != nil {
			return err
		}
		var seq int64
		err := tx.StmtContext(ctx, s.st.insertJob).QueryRowContext(ctx,
			j.ID, owner, string(j.Kind), j.Name, j.Model, j.Protocol, j.RunModel,
			string(params), j.Total, j.CreatedAt.UnixMilli(), idemKey, reqHash, boolInt(searches != nil)).Scan(&seq)
		if err != nil {
			return fmt.Errorf("sqlite: inserting job: %w", err)
		}
		if _, err := tx.StmtContext(ctx, s.st.insertInput).ExecContext(ctx, seq, string(input), searches); err != nil {
			return fmt.Errorf("sqlite: inserting job input: %w", err)
		}
		created, err := scanJob(tx.StmtContext(ctx, s.st.wGetJob).QueryRowContext(ctx, j.ID))
		if err != nil {
			return fmt.Errorf("sqlite: reading the new job: %w", err)
		}
		res.Job, res.Created = created, true
		changed(j.ID, "")
		if opts.Limits.CreatesPerMinute > 0 {
			if _, err := tx.StmtContext(ctx, s.st.logCreate).ExecContext(ctx, owner, j.CreatedAt.UnixMilli()); err != nil {
				return err
			}
		}
		if opts.Limits.Retained > 0 {
			res.Evicted, err = s.evict(ctx, tx, opts.Limits.Retained)
			if err != nil {
				return err
			}
			changed(res.Evicted...)
		}
		return nil
	})
	if err != nil {
		return store.CreateResult{}, err
	}
	return res, nil
}

// checkQuotas refuses a create over a per-owner quota or when the service's queue is full.
// "Now" is the job's CreatedAt, so that callers and tests control the clock.
func (s *Store) checkQuotas(ctx context.Context, tx *sql.Tx, owner string, now time.Time, l store.Limits) error {
	if l.ActivePerOwner > 0 {
		var n int
		if err := tx.StmtContext(ctx, s.st.countActive).QueryRowContext(ctx, owner).Scan(&n); err != nil {
			return err
		}
		if n >= l.ActivePerOwner {
			after, err := s.activeRetryAfter(ctx, tx, owner, now)
			if err != nil {
				return err
			}
			return &job.LimitError{RetryAfter: after, Reason: fmt.Sprintf(
				"You have %d active (queued or running) jobs, the most allowed; wait until one ends.", n)}
		}
	}
	if l.CreatesPerMinute > 0 {
		nowMs := now.UnixMilli()
		cutoff := nowMs - store.CreateWindow.Milliseconds() // the window is (cutoff, now]
		if _, err := tx.StmtContext(ctx, s.st.pruneCreates).ExecContext(ctx, cutoff); err != nil {
			return err
		}
		var n int
		if err := tx.StmtContext(ctx, s.st.countCreates).QueryRowContext(ctx, owner, cutoff).Scan(&n); err != nil {
			return err
		}
		if n >= l.CreatesPerMinute {
			// One more create fits when the window holds limit-1 of them: when the
			// (n-limit+1)-th oldest has left it.
			var at int64
			if err := tx.QueryRowContext(ctx, `SELECT at FROM creates WHERE owner = ? AND at > ?
				ORDER BY at LIMIT 1 OFFSET ?`, owner, cutoff, n-l.CreatesPerMinute).Scan(&at); err != nil {
				return err
			}
			after := time.Duration(at+store.CreateWindow.Milliseconds()-nowMs) * time.Millisecond
			return &job.LimitError{RetryAfter: max(after, store.MinRetryAfter), Reason: fmt.Sprintf(
				"You created %d jobs in the last minute, the most allowed.", n)}
		}
	}
	if l.QueuedServiceWide > 0 {
		var n int
		if err := tx.StmtContext(ctx, s.st.countQueued).QueryRowContext(ctx).Scan(&n); err != nil {
			return err
		}
		if n >= l.QueuedServiceWide {
			after, err := s.capacityRetryAfter(ctx, tx, now)
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
func (s *Store) activeRetryAfter(ctx context.Context, tx *sql.Tx, owner string, now time.Time) (time.Duration, error) {
	var model string
	var started sql.NullInt64
	err := tx.QueryRowContext(ctx, `SELECT run_model, started_at FROM jobs
		WHERE owner = ? AND status = 'running' ORDER BY started_at LIMIT 1`, owner).Scan(&model, &started)
	if errors.Is(err, sql.ErrNoRows) {
		err = tx.QueryRowContext(ctx, `SELECT run_model FROM jobs
			WHERE owner = ? AND status = 'queued' ORDER BY seq LIMIT 1`, owner).Scan(&model)
		if errors.Is(err, sql.ErrNoRows) {
			return store.DefaultRetryAfter, nil
		}
	}
	if err != nil {
		return 0, err
	}
	return s.estimate(ctx, tx, model, started, now)
}

// capacityRetryAfter estimates when the queue moves: when the longest-running job of all
// ends and its worker leases the next.
func (s *Store) capacityRetryAfter(ctx context.Context, tx *sql.Tx, now time.Time) (time.Duration, error) {
	var model string
	var started sql.NullInt64
	err := tx.QueryRowContext(ctx, `SELECT run_model, started_at FROM jobs
		WHERE status = 'running' ORDER BY started_at LIMIT 1`).Scan(&model, &started)
	if errors.Is(err, sql.ErrNoRows) {
		return store.DefaultRetryAfter, nil
	}
	if err != nil {
		return 0, err
	}
	return s.estimate(ctx, tx, model, started, now)
}

func (s *Store) estimate(ctx context.Context, tx *sql.Tx, model string, started sql.NullInt64, now time.Time) (time.Duration, error) {
	rows, err := tx.QueryContext(ctx, `SELECT finished_at - started_at FROM jobs
		WHERE run_model = ? AND status = 'succeeded' AND started_at IS NOT NULL AND finished_at IS NOT NULL
		ORDER BY finished_at DESC LIMIT ?`, model, store.RuntimeSamples)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var runtimes []time.Duration
	for rows.Next() {
		var ms int64
		if err := rows.Scan(&ms); err != nil {
			return 0, err
		}
		runtimes = append(runtimes, time.Duration(ms)*time.Millisecond)
	}
	if err := rows.Err(); err != nil {
		return 0, err
	}
	var elapsed time.Duration
	if started.Valid {
		elapsed = now.Sub(time.UnixMilli(started.Int64))
	}
	return store.EstimateRetryAfter(runtimes, elapsed), nil
}

// evict deletes finished jobs, one at a time, until at most retained jobs remain or none
// is left to evict. Active jobs are never evicted: when only they remain the total may
// stay over retained; refusing the create instead would turn a storage policy into a
// quota that no one asked for (and the active-jobs quota already bounds active jobs).
func (s *Store) evict(ctx context.Context, tx *sql.Tx, retained int) ([]string, error) {
	var total int
	if err := tx.StmtContext(ctx, s.st.totalJobs).QueryRowContext(ctx).Scan(&total); err != nil {
		return nil, err
	}
	if total <= retained {
		return nil, nil
	}
	var evicted []string
	evictOne := tx.StmtContext(ctx, s.st.evictOne)
	for range total - retained {
		var id string
		err := evictOne.QueryRowContext(ctx).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("sqlite: evicting: %w", err)
		}
		evicted = append(evicted, id)
	}
	return evicted, nil
}

// FindIdempotent implements store.Jobs.
func (s *Store) FindIdempotent(ctx context.Context, owner job.Owner, key string) (*job.Job, string, error) {
	var hash string
	j, err := scanJob(s.st.idemFind.QueryRowContext(ctx, owner.String(), key), &hash)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, "", job.ErrNotFound
	}
	return j, hash, err
}

// GetJob implements store.Jobs.
func (s *Store) GetJob(ctx context.Context, id string) (*job.Job, error) {
	j, err := scanJob(s.st.getJob.QueryRowContext(ctx, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, job.ErrNotFound
	}
	return j, err
}

// GetJobSummary implements store.Jobs.
func (s *Store) GetJobSummary(ctx context.Context, id string) (*store.JobSummary, error) {
	if j, ok := s.summaries.get(id); ok {
		return j, nil
	}
	epoch := s.summaries.begin()
	j, err := scanSummary(s.st.getSummary.QueryRowContext(ctx, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, job.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	s.summaries.put(j, epoch)
	return j, nil
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
	rows, err := s.st.listJobs.QueryContext(ctx, owner.String(), before, limit+1)
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

// ownedJob reads the summary of job id inside tx; another owner's job is as unknown as a
// missing one.
func (s *Store) ownedJob(ctx context.Context, tx *sql.Tx, id string, owner job.Owner) (*store.JobSummary, error) {
	j, err := scanSummary(tx.StmtContext(ctx, s.st.wGetSummary).QueryRowContext(ctx, id))
	if errors.Is(err, sql.ErrNoRows) || err == nil && j.Owner != owner {
		return nil, job.ErrNotFound
	}
	return j, err
}

// CancelJob implements store.Jobs.
func (s *Store) CancelJob(ctx context.Context, id string, owner job.Owner, now time.Time) (*store.JobSummary, error) {
	var out *store.JobSummary
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx, changed func(...string)) error {
		j, err := s.ownedJob(ctx, tx, id, owner)
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
		out, err = scanSummary(tx.QueryRowContext(ctx, `UPDATE jobs SET status = 'canceled', finished_at = ?
			WHERE id = ? RETURNING `+summaryRead, now.UnixMilli(), id))
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
	err := s.write(ctx, func(ctx context.Context, tx *sql.Tx, changed func(...string)) error {
		j, err := s.ownedJob(ctx, tx, id, owner)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM jobs WHERE id = ?`, id); err != nil {
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
	rows, err := s.r.QueryContext(ctx, `SELECT kind, run_model, status, count(*) FROM jobs
		GROUP BY kind, run_model, status ORDER BY kind, run_model, status`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.JobCount
	for rows.Next() {
		var c store.JobCount
		var kind, status string
		if err := rows.Scan(&kind, &c.RunModel, &status, &c.N); err != nil {
			return nil, err
		}
		c.Kind, c.Status = job.Kind(kind), job.Status(status)
		out = append(out, c)
	}
	return out, rows.Err()
}
