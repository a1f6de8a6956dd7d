package sqlite

import (
	"context"
	"database/sql"
	"fmt"
)

// summaryCols are the columns of a store.JobSummary, in the order of summaryRow.dest.
const summaryCols = `id, owner, kind, name, model, protocol, run_model, params, status,
	stage, progress, done, total, error, attempt, created_at, started_at, finished_at, worker_id,
	aligning`

// jobCols is the column list that scanJob reads, in its order. The input and the searches
// live in a table of their own (migrations 00005, 00010); correlated subqueries read them,
// in SELECT and RETURNING alike.
const jobCols = summaryCols + `, lease_expires_at, last_activity_at, results,
	(SELECT i.input FROM job_inputs i WHERE i.seq = jobs.seq),
	(SELECT i.searches FROM job_inputs i WHERE i.seq = jobs.seq)`

// summaryRead is the column list that scanSummary reads: without the input, and with only
// whether there are results. typeof() is answered from the record header without reading
// the value, and the results are the last column of the row, so a summary never reads the
// overflow pages that hold them.
const summaryRead = summaryCols + `, status = 'succeeded' AND typeof(results) <> 'null'`

const terminal = `('succeeded', 'failed', 'canceled')`

// stmts are the statements of the hot paths (create, read, list, lease, heartbeat,
// complete, key lookup), prepared once. The rest run as plain queries: they are rare
// enough that parsing them each time costs nothing that matters.
type stmts struct {
	all []*sql.Stmt

	// Readers.
	getJob     *sql.Stmt
	getSummary *sql.Stmt
	listJobs   *sql.Stmt
	keyByHash  *sql.Stmt
	keyEpoch   *sql.Stmt

	// Writer; used inside transactions through tx.StmtContext.
	wGetJob      *sql.Stmt
	wGetSummary  *sql.Stmt
	idemLookup   *sql.Stmt
	idemFind     *sql.Stmt
	countActive  *sql.Stmt
	pruneCreates *sql.Stmt
	countCreates *sql.Stmt
	logCreate    *sql.Stmt
	countQueued  *sql.Stmt
	insertJob    *sql.Stmt
	insertInput  *sql.Stmt
	totalJobs    *sql.Stmt
	evictOne     *sql.Stmt
	lease        *sql.Stmt
	heartbeat    *sql.Stmt
	progressOf   *sql.Stmt
	complete     *sql.Stmt
}

func (st *stmts) prepare(ctx context.Context, w, r *sql.DB) error {
	for _, p := range []struct {
		dst **sql.Stmt
		db  *sql.DB
		sql string
	}{
		{&st.getJob, r, `SELECT ` + jobCols + ` FROM jobs WHERE id = ?`},
		// seq < ?2 makes the first page (MaxInt64) and later ones one statement; jobs created
		// after a page was read have larger seqs and so never show up on the next page.
		{&st.getSummary, r, `SELECT ` + summaryRead + ` FROM jobs WHERE id = ?`},
		{&st.listJobs, r, `SELECT ` + summaryRead + `, seq FROM jobs WHERE owner = ?1 AND seq < ?2
			ORDER BY seq DESC LIMIT ?3`},
		{&st.keyByHash, r, `SELECT ` + keyCols + ` FROM api_keys
			WHERE hash = ? AND revoked_at IS NULL`},
		{&st.keyEpoch, r, `SELECT n FROM counters WHERE name = 'keys'`},

		{&st.wGetJob, w, `SELECT ` + jobCols + ` FROM jobs WHERE id = ?`},
		{&st.wGetSummary, w, `SELECT ` + summaryRead + ` FROM jobs WHERE id = ?`},
		{&st.idemLookup, w, `SELECT ` + jobCols + `, request_hash FROM jobs
			WHERE owner = ? AND idem_key = ?`},
		{&st.idemFind, r, `SELECT ` + jobCols + `, request_hash FROM jobs
			WHERE owner = ? AND idem_key = ?`},
		{&st.countActive, w, `SELECT count(*) FROM jobs
			WHERE owner = ? AND status IN ('queued', 'running')`},
		{&st.pruneCreates, w, `DELETE FROM creates WHERE at <= ?`},
		{&st.countCreates, w, `SELECT count(*) FROM creates WHERE owner = ? AND at > ?`},
		{&st.logCreate, w, `INSERT INTO creates (owner, at) VALUES (?, ?)`},
		{&st.countQueued, w, `SELECT n FROM counters WHERE name = 'queued'`},
		{&st.insertJob, w, `INSERT INTO jobs (id, owner, kind, name, model, protocol, run_model,
			params, total, status, created_at, idem_key, request_hash, aligning)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'queued', ?, ?, ?, ?)
			RETURNING seq`},
		{&st.insertInput, w, `INSERT INTO job_inputs (seq, input, searches) VALUES (?, ?, ?)`},
		{&st.totalJobs, w, `SELECT n FROM counters WHERE name = 'jobs'`},
		// The oldest finished job of the owner holding the most jobs, among owners that
		// have a finished job at all: an owner whose jobs are all active has nothing to give.
		// Ties between owners go to the smaller owner string, for determinism only.
		{&st.evictOne, w, `DELETE FROM jobs WHERE seq = (
			SELECT j.seq FROM jobs j
			WHERE j.status IN ` + terminal + ` AND j.owner = (
				SELECT c.owner FROM owner_jobs c
				WHERE EXISTS (
					SELECT 1 FROM jobs f WHERE f.owner = c.owner AND f.status IN ` + terminal + `)
				ORDER BY c.n DESC, c.owner LIMIT 1)
			ORDER BY j.seq LIMIT 1)
			RETURNING id`},
		// Fair order: the owner with the fewest running jobs, then a model the worker has
		// loaded, then the oldest. The lists come as JSON arrays so the statement is fixed.
		// A job waiting for its alignment searches is passed over; aligning is in jobs_queue,
		// so the pick still reads the index alone.
		{&st.lease, w, `WITH running AS (
				SELECT owner, count(*) AS n FROM jobs WHERE status = 'running' GROUP BY owner)
			UPDATE jobs SET status = 'running', attempt = attempt + 1,
			worker_id = ?1, lease_expires_at = ?2, started_at = ?3, last_activity_at = ?3,
			stage = 'starting'
			WHERE seq = (
				SELECT q.seq FROM jobs q LEFT JOIN running r ON r.owner = q.owner
				WHERE q.status = 'queued' AND q.aligning = 0
				AND q.run_model IN (SELECT value FROM json_each(?4))
				ORDER BY coalesce(r.n, 0), q.run_model IN (SELECT value FROM json_each(?5)) DESC, q.seq
				LIMIT 1)
			RETURNING ` + jobCols},
		{&st.heartbeat, w, `UPDATE jobs SET lease_expires_at = ?1,
			stage = CASE WHEN ?2 THEN coalesce(nullif(?3, ''), stage) ELSE stage END,
			done = CASE WHEN ?2 THEN ?4 ELSE done END,
			total = CASE WHEN ?2 THEN ?5 ELSE total END,
			progress = CASE WHEN ?2 THEN ?6 ELSE progress END,
			last_activity_at = CASE WHEN ?7 THEN ?8 ELSE last_activity_at END
			WHERE id = ?9 AND status = 'running' AND attempt = ?10`},
		{&st.progressOf, w, `SELECT stage, done, total, progress FROM jobs
			WHERE id = ? AND status = 'running' AND attempt = ?`},
		// One write fenced by the attempt: a late or duplicate completion matches no row.
		{&st.complete, w, `UPDATE jobs SET status = ?1, error = ?2, results = ?3, finished_at = ?4,
			stage = coalesce(nullif(?5, ''), stage),
			done = CASE WHEN ?6 > 0 THEN ?7 ELSE done END,
			total = CASE WHEN ?6 > 0 THEN ?6 ELSE total END,
			progress = CASE WHEN ?8 THEN ?9 ELSE progress END
			WHERE id = ?10 AND status = 'running' AND attempt = ?11`},
	} {
		s, err := p.db.PrepareContext(ctx, p.sql)
		if err != nil {
			return fmt.Errorf("sqlite: preparing %q: %w", p.sql, err)
		}
		*p.dst = s
		st.all = append(st.all, s)
	}
	return nil
}

func (st *stmts) close() {
	for _, s := range st.all {
		s.Close()
	}
}
