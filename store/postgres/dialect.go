package postgres

import (
	"time"

	"github.com/chaperone-bio/chaperone/store/internal/sqlstore"
)

// The SQL that PostgreSQL speaks its own way: row locks that let concurrent writers pass
// each other (FOR UPDATE SKIP LOCKED), and columns of its own types (timestamptz, boolean,
// json, text[] arguments).

// jobCols reads a whole job.
const jobCols = sqlstore.SummaryColumns + `, lease_expires_at, last_activity_at, results, input, searches`

// summaryCols reads a summary: without the input, and with only whether there are results.
const summaryCols = sqlstore.SummaryColumns + `, status = 'succeeded' AND results IS NOT NULL`

const terminal = `('succeeded', 'failed', 'canceled')`

// insertJob stores a job whole and returns it.
const insertJob = `INSERT INTO jobs (id, owner, kind, name, model, protocol,
	run_model, params, input, total, status, created_at, idem_key, request_hash, searches, aligning)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 'queued', $11, $12, $13, $14::json, $15)
	RETURNING ` + jobCols

var dialect = sqlstore.Dialect{
	Name:        "postgres",
	Time:        func(t time.Time) any { return t },
	TimeOf:      utc,
	List:        textArray,
	JobCols:     jobCols,
	SummaryCols: summaryCols,
	// A write that goes on to change what it read locks it first: another replica's write
	// of the same job waits, and then reads what this one wrote.
	RowLock:      ` FOR UPDATE`,
	UsedAttempts: `(attempt - handbacks)`,

	// The creates of the owner alone, whose lock the create holds.
	PruneCreates: `DELETE FROM creates WHERE owner = $1 AND at <= $2`,
	CountQueued:  `SELECT count(*) FROM jobs WHERE status = 'queued'`,
	CountJobs:    `SELECT count(*) FROM jobs`,
	// The oldest finished job of the owner holding the most jobs, among owners that have a
	// finished job at all. It runs under the service lock, so evictions of concurrent
	// creates never overlap.
	EvictOne: `DELETE FROM jobs WHERE seq = (
		SELECT j.seq FROM jobs j
		WHERE j.status IN ` + terminal + ` AND j.owner = (
			SELECT c.owner FROM jobs c GROUP BY c.owner
			HAVING bool_or(c.status IN ` + terminal + `)
			ORDER BY count(*) DESC, c.owner LIMIT 1)
		ORDER BY j.seq LIMIT 1)
		RETURNING id`,
	// Fair order: the owner with the fewest running jobs, then a model the worker has
	// loaded, then the oldest. The pick skips rows other leases hold (FOR UPDATE SKIP
	// LOCKED): workers leasing at once take different jobs instead of queueing on one. A
	// job waiting for its alignment searches is passed over; the UPDATE checks the status
	// and that again on the row it locked.
	Lease: `WITH running AS (
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
		RETURNING ` + jobCols,
	RaiseMeasuredWall: `INSERT INTO measured_walls (run_model, residues)
		SELECT run_model, $2 FROM jobs WHERE id = $1
		ON CONFLICT (run_model) DO UPDATE SET residues = greatest(measured_walls.residues, excluded.residues)`,
	// Hand-backs are counted on the job's row (migration 00003).
	CountHandBack: `UPDATE jobs SET handbacks = handbacks + 1 WHERE seq = $1`,
	// The pick skips jobs other claims are taking (FOR UPDATE SKIP LOCKED), so aligners
	// claiming at once take different jobs; its terms on status and aligning are those of
	// the partial index jobs_aligning.
	ClaimAlignment: `WITH pick AS (
			SELECT seq FROM jobs
			WHERE status = 'queued' AND aligning AND (align_holder = '' OR align_until < $4)
			ORDER BY seq LIMIT 1
			FOR UPDATE SKIP LOCKED)
		UPDATE jobs SET align_holder = $1, align_until = $2, stage = $3
		FROM pick WHERE jobs.seq = pick.seq
		RETURNING ` + jobCols,
}

// Times are timestamptz, read back in UTC.
func utc(v any) time.Time {
	t, ok := v.(time.Time)
	if !ok { // NULL
		return time.Time{}
	}
	return t.UTC()
}

// textArray is a list of names as a text[] argument; never NULL.
func textArray(names []string) any {
	if names == nil {
		return []string{}
	}
	return names
}
