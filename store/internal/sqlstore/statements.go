package sqlstore

// The statements every database reads alike. They name the columns of the schema both
// drivers' migrations build; where a type differs (a time, a boolean, a JSON document) the
// Dialect converts the values, not the SQL.

// SummaryColumns are the columns of a store.JobSummary held as they are, in the order the
// scanners read them; Dialect.JobCols and Dialect.SummaryCols begin with them.
const SummaryColumns = `id, owner, kind, name, model, protocol, run_model, params, status,
	stage, progress, done, total, error, attempt, created_at, started_at, finished_at, worker_id,
	aligning`

// Quotas and retry estimates.
const (
	countActive = `SELECT count(*) FROM jobs WHERE owner = $1 AND status IN ('queued', 'running')`
	// The creates of $1 in the window after $2.
	countCreates = `SELECT count(*) FROM creates WHERE owner = $1 AND at > $2`
	nthCreate    = `SELECT at FROM creates WHERE owner = $1 AND at > $2 ORDER BY at LIMIT 1 OFFSET $3`
	logCreate    = `INSERT INTO creates (owner, at) VALUES ($1, $2)`

	longestRunningOf = `SELECT run_model, started_at FROM jobs
		WHERE owner = $1 AND status = 'running' ORDER BY started_at LIMIT 1`
	oldestQueuedOf = `SELECT run_model FROM jobs
		WHERE owner = $1 AND status = 'queued' ORDER BY seq LIMIT 1`
	longestRunning = `SELECT run_model, started_at FROM jobs
		WHERE status = 'running' ORDER BY started_at LIMIT 1`
	// The runs of model $1 that succeeded, most recent first, $2 of them.
	runtimes = `SELECT started_at, finished_at FROM jobs
		WHERE run_model = $1 AND status = 'succeeded' AND started_at IS NOT NULL AND finished_at IS NOT NULL
		ORDER BY finished_at DESC LIMIT $2`
)

// Jobs.
const (
	deleteJob = `DELETE FROM jobs WHERE id = $1`
	census    = `SELECT kind, run_model, status, count(*) FROM jobs
		GROUP BY kind, run_model, status ORDER BY kind, run_model, status`
)

// The queue.
const (
	heartbeat = `UPDATE jobs SET lease_expires_at = $1,
		stage = CASE WHEN $2 THEN coalesce(nullif($3, ''), stage) ELSE stage END,
		done = CASE WHEN $2 THEN $4 ELSE done END,
		total = CASE WHEN $2 THEN $5 ELSE total END,
		progress = CASE WHEN $2 THEN $6 ELSE progress END,
		last_activity_at = CASE WHEN $7 THEN $8 ELSE last_activity_at END
		WHERE id = $9 AND status = 'running' AND attempt = $10`
	// One write fenced by the attempt: a late or duplicate completion matches no row.
	complete = `UPDATE jobs SET status = $1, error = $2, results = $3, finished_at = $4,
		stage = coalesce(nullif($5, ''), stage),
		done = CASE WHEN $6 > 0 THEN $7 ELSE done END,
		total = CASE WHEN $6 > 0 THEN $6 ELSE total END,
		progress = CASE WHEN $8 THEN $9 ELSE progress END
		WHERE id = $10 AND status = 'running' AND attempt = $11`
	setError = `UPDATE jobs SET error = $1 WHERE id = $2`

	// requeue puts a job back in the queue as it was before its first lease, but for its
	// attempt count.
	requeue = `status = 'queued', stage = '', progress = NULL, done = 0, total = 0, worker_id = '',
		lease_expires_at = NULL, started_at = NULL, last_activity_at = NULL`
	handBack = `UPDATE jobs SET ` + requeue + `
		WHERE status = 'running' AND worker_id = $1
		RETURNING seq, id, attempt`

	// The owners with a queued job of the job $1's run model that the lease statement
	// picks before it, ordering as it does and passing over jobs still aligning.
	ownersAhead = `WITH running AS (
			SELECT owner, count(*) AS n FROM jobs WHERE status = 'running' GROUP BY owner),
		me AS (
			SELECT j.owner, j.run_model, j.seq, j.status, coalesce(r.n, 0) AS n
			FROM jobs j LEFT JOIN running r ON r.owner = j.owner WHERE j.id = $1)
		SELECT me.status, (SELECT count(DISTINCT q.owner) FROM jobs q LEFT JOIN running r ON r.owner = q.owner
			WHERE q.status = 'queued' AND NOT q.aligning AND q.run_model = me.run_model AND q.owner <> me.owner
			AND (coalesce(r.n, 0) < me.n OR (coalesce(r.n, 0) = me.n AND q.seq < me.seq)))
		FROM me`
	measuredWalls = `SELECT run_model, residues FROM measured_walls`
)

// The alignment stage. A claim on a job lives in align_holder and align_until; a job
// waiting for its searches is one that is queued with aligning set.
const (
	// aligningJob matches the job $1 still waiting for its searches under holder $2's
	// claim: what RenewAlignment and FinishAlignment are fenced by.
	aligningJob     = `id = $1 AND status = 'queued' AND aligning AND align_holder = $2`
	renewAlignment  = `UPDATE jobs SET align_until = $3 WHERE ` + aligningJob
	finishAlignment = `UPDATE jobs SET aligning = false, align_holder = '', align_until = NULL,
		stage = '' WHERE ` + aligningJob
	failAlignment = `UPDATE jobs SET status = 'failed', error = $3, finished_at = $4,
		align_holder = '', align_until = NULL WHERE ` + aligningJob
	returnForAlignment = `UPDATE jobs SET aligning = true, align_holder = '', align_until = NULL,
		` + requeue + `
		WHERE id = $1 AND status = 'running' AND attempt = $2
		RETURNING seq`
	// An upsert that takes the key over only from its holder or from a claim that ran out.
	claimSearch = `INSERT INTO search_claims (key, holder, expires_at) VALUES ($1, $2, $3)
		ON CONFLICT (key) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
		WHERE search_claims.holder = excluded.holder OR search_claims.expires_at < $4`
	releaseSearch = `DELETE FROM search_claims WHERE key = $1 AND holder = $2`
	// releaseAligner frees the jobs claimed by holder $1; releaseAlignerSearches drops its
	// search claims, under its name or a name of one of its searches ($2: holder + "/%").
	releaseAligner = `UPDATE jobs SET align_holder = '', align_until = NULL, stage = ''
		WHERE status = 'queued' AND aligning AND align_holder = $1 RETURNING id`
	releaseAlignerSearches = `DELETE FROM search_claims WHERE holder = $1 OR holder LIKE $2 ESCAPE '\'`
)

// Workers and keys.
const (
	putWorker = `INSERT INTO workers (id, models, missing, loaded, slots, seen_at)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (id) DO UPDATE SET models = excluded.models, missing = excluded.missing,
			loaded = excluded.loaded, slots = excluded.slots, seen_at = excluded.seen_at`
	// Busy counts the running jobs each worker holds (few: one per slot), through the
	// partial index of running jobs.
	liveWorkers = `SELECT w.id, w.models, w.missing, w.loaded, w.slots,
			(SELECT count(*) FROM jobs j WHERE j.status = 'running' AND j.worker_id = w.id),
			w.seen_at
		FROM workers w WHERE w.seen_at >= $1 ORDER BY w.id`
	removeWorker = `DELETE FROM workers WHERE id = $1`

	// keyColumns are the columns of a store.Key, in the order scanKey reads them.
	keyColumns = `id, name, hash, prefix, created_at, revoked_at, worker`
	// InsertKey stores a key: $1 to $7 as keyColumns.
	InsertKey  = `INSERT INTO api_keys (` + keyColumns + `) VALUES ($1, $2, $3, $4, $5, $6, $7)`
	keyByHash  = `SELECT ` + keyColumns + ` FROM api_keys WHERE hash = $1 AND revoked_at IS NULL`
	listKeys   = `SELECT ` + keyColumns + ` FROM api_keys ORDER BY created_at, id`
	countKeys  = `SELECT count(*) FROM api_keys WHERE id = $1 OR name = $1`
	revokeKeys = `UPDATE api_keys SET revoked_at = $2 WHERE (id = $1 OR name = $1) AND revoked_at IS NULL`
)

// statements are those built from a Dialect's column lists and expressions.
type statements struct {
	getJob, getSummary, listJobs, idempotent string
	ownedJob, cancel, progressOf             string
	recoverExpired, releaseWorker            string
}

func (d *Dialect) statements() statements {
	return statements{
		getJob:     `SELECT ` + d.JobCols + ` FROM jobs WHERE id = $1`,
		getSummary: `SELECT ` + d.SummaryCols + ` FROM jobs WHERE id = $1`,
		// seq < $2 makes the first page (MaxInt64) and later ones one statement; jobs created
		// after a page was read have larger seqs and so never show up on the next page.
		listJobs: `SELECT ` + d.SummaryCols + `, seq FROM jobs WHERE owner = $1 AND seq < $2
			ORDER BY seq DESC LIMIT $3`,
		idempotent: `SELECT ` + d.JobCols + `, request_hash FROM jobs WHERE owner = $1 AND idem_key = $2`,

		ownedJob: `SELECT ` + d.SummaryCols + ` FROM jobs WHERE id = $1` + d.RowLock,
		cancel: `UPDATE jobs SET status = 'canceled', finished_at = $1
			WHERE id = $2 RETURNING ` + d.SummaryCols,
		progressOf: `SELECT stage, done, total, progress FROM jobs
			WHERE id = $1 AND status = 'running' AND attempt = $2` + d.RowLock,

		recoverExpired: d.recoverStatement(`lease_expires_at < $2`),
		releaseWorker:  d.recoverStatement(`worker_id = $2`),
	}
}

// recoverStatement chooses and changes in one UPDATE the running jobs that match: $1 is
// the attempt limit, $2 the argument of match, $3 now. Those that have used the limit
// fail, keeping the rest; the others are requeued. It returns id, attempt and whether the
// job failed.
func (d *Dialect) recoverStatement(match string) string {
	spent := d.UsedAttempts + ` >= $1`
	return `UPDATE jobs SET
		status = CASE WHEN ` + spent + ` THEN 'failed' ELSE 'queued' END,
		finished_at = CASE WHEN ` + spent + ` THEN $3 ELSE finished_at END,
		stage = CASE WHEN ` + spent + ` THEN stage ELSE '' END,
		progress = CASE WHEN ` + spent + ` THEN progress END,
		done = CASE WHEN ` + spent + ` THEN done ELSE 0 END,
		total = CASE WHEN ` + spent + ` THEN total ELSE 0 END,
		worker_id = CASE WHEN ` + spent + ` THEN worker_id ELSE '' END,
		lease_expires_at = CASE WHEN ` + spent + ` THEN lease_expires_at END,
		started_at = CASE WHEN ` + spent + ` THEN started_at END,
		last_activity_at = CASE WHEN ` + spent + ` THEN last_activity_at END
		WHERE status = 'running' AND ` + match + `
		RETURNING id, attempt, status = 'failed'`
}

// HotStatements are the statements of the hot paths (create, read, list, lease, heartbeat,
// complete, key lookup), for a driver that prepares statements ahead: reads run outside
// writes, writes inside them.
func (d *Dialect) HotStatements() (reads, writes []string) {
	q := d.statements()
	reads = []string{q.getJob, q.getSummary, q.listJobs, q.idempotent, keyByHash}
	writes = []string{q.idempotent, countActive, d.PruneCreates, countCreates, logCreate,
		d.CountQueued, d.CountJobs, d.EvictOne, d.Lease, q.progressOf, heartbeat, complete, q.ownedJob}
	return reads, writes
}
