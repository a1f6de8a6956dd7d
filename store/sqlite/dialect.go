package sqlite

import (
	"encoding/json"
	"time"

	"github.com/chaperone-bio/chaperone/store/internal/sqlstore"
)

// The SQL that SQLite speaks its own way, and how its columns hold values: times as unix
// milliseconds, booleans as 0 and 1, lists as JSON text.

// jobCols reads a whole job. The input and the searches live in a table of their own
// (migrations 00005, 00010); correlated subqueries read them, in SELECT and RETURNING alike.
const jobCols = sqlstore.SummaryColumns + `, lease_expires_at, last_activity_at, results,
	(SELECT i.input FROM job_inputs i WHERE i.seq = jobs.seq),
	(SELECT i.searches FROM job_inputs i WHERE i.seq = jobs.seq)`

// summaryCols reads a summary: without the input, and with only whether there are results.
// typeof() is answered from the record header without reading the value, and the results
// are the last column of the row, so a summary never reads the overflow pages that hold them.
const summaryCols = sqlstore.SummaryColumns + `, status = 'succeeded' AND typeof(results) <> 'null'`

const terminal = `('succeeded', 'failed', 'canceled')`

// Creates. A job goes in two rows, the job and its input beside it.
const (
	insertJob = `INSERT INTO jobs (id, owner, kind, name, model, protocol, run_model,
		params, total, status, created_at, idem_key, request_hash, aligning)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'queued', $10, $11, $12, $13)
		RETURNING seq`
	insertInput = `INSERT INTO job_inputs (seq, input, searches) VALUES ($1, $2, $3)`
	selectJob   = `SELECT ` + jobCols + ` FROM jobs WHERE id = $1`
)

// selectKeyEpoch reads the counter of changes to api_keys (migration 00004).
const selectKeyEpoch = `SELECT n FROM counters WHERE name = 'keys'`

var dialect = sqlstore.Dialect{
	Name:        "sqlite",
	Time:        func(t time.Time) any { return t.UnixMilli() },
	TimeOf:      fromMs,
	List:        jsonList,
	JobCols:     jobCols,
	SummaryCols: summaryCols,
	// The one writer runs every write alone: what a write read stays as it was.
	RowLock:      "",
	UsedAttempts: `(attempt - coalesce((SELECT h.n FROM handbacks h WHERE h.seq = jobs.seq), 0))`,

	// The creates of every owner at once ($1, the owner, is not needed): one writer, so
	// no other create waits on them.
	PruneCreates: `DELETE FROM creates WHERE at <= $2`,
	// Counters kept by triggers (migration 00005), so that a create never counts the
	// whole table.
	CountQueued: `SELECT n FROM counters WHERE name = 'queued'`,
	CountJobs:   `SELECT n FROM counters WHERE name = 'jobs'`,
	// The oldest finished job of the owner holding the most jobs, among owners that
	// have a finished job at all: an owner whose jobs are all active has nothing to give.
	// Ties between owners go to the smaller owner string, for determinism only.
	EvictOne: `DELETE FROM jobs WHERE seq = (
		SELECT j.seq FROM jobs j
		WHERE j.status IN ` + terminal + ` AND j.owner = (
			SELECT c.owner FROM owner_jobs c
			WHERE EXISTS (
				SELECT 1 FROM jobs f WHERE f.owner = c.owner AND f.status IN ` + terminal + `)
			ORDER BY c.n DESC, c.owner LIMIT 1)
		ORDER BY j.seq LIMIT 1)
		RETURNING id`,
	// Fair order: the owner with the fewest running jobs, then a model the worker has
	// loaded, then the oldest. The lists come as JSON arrays so the statement is fixed.
	// A job waiting for its alignment searches is passed over; aligning is in jobs_queue,
	// so the pick still reads the index alone.
	Lease: `WITH running AS (
			SELECT owner, count(*) AS n FROM jobs WHERE status = 'running' GROUP BY owner)
		UPDATE jobs SET status = 'running', attempt = attempt + 1,
		worker_id = $1, lease_expires_at = $2, started_at = $3, last_activity_at = $3,
		stage = 'starting'
		WHERE seq = (
			SELECT q.seq FROM jobs q LEFT JOIN running r ON r.owner = q.owner
			WHERE q.status = 'queued' AND q.aligning = 0
			AND q.run_model IN (SELECT value FROM json_each($4))
			ORDER BY coalesce(r.n, 0), q.run_model IN (SELECT value FROM json_each($5)) DESC, q.seq
			LIMIT 1)
		RETURNING ` + jobCols,
	RaiseMeasuredWall: `INSERT INTO measured_walls (run_model, residues)
		SELECT run_model, $2 FROM jobs WHERE id = $1
		ON CONFLICT (run_model) DO UPDATE SET residues = max(residues, excluded.residues)`,
	// Hand-backs are counted in a table of their own (migration 00008).
	CountHandBack: `INSERT INTO handbacks (seq, n) VALUES ($1, 1)
		ON CONFLICT (seq) DO UPDATE SET n = n + 1`,
	// Its terms on status and aligning are those of the partial index jobs_aligning, which
	// the planner uses only when they match.
	ClaimAlignment: `UPDATE jobs SET align_holder = $1, align_until = $2, stage = $3
		WHERE seq = (
			SELECT seq FROM jobs WHERE status = 'queued' AND aligning = 1
			AND (align_holder = '' OR align_until < $4)
			ORDER BY seq LIMIT 1)
		RETURNING ` + jobCols,
}

func fromMs(v any) time.Time {
	ms, ok := v.(int64)
	if !ok { // NULL
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// jsonList encodes a list of names for json_each; never "null", which json_each would
// read as one NULL element.
func jsonList(names []string) any {
	if names == nil {
		names = []string{}
	}
	b, _ := json.Marshal(names) // strings always encode
	return string(b)
}
