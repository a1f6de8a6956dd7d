-- The alignment stage ahead of the workers (store.Aligning). A job created with searches
-- is queued with aligning set, which LeaseJob passes over, until an aligner claims it
-- (align_holder, until align_until: a lease of its own, '' and NULL while unclaimed) and
-- finishes it. search_claims makes each search happen once across aligners: the holder of
-- a key searches, the others wait for its result.
--
-- The searches, like the input, never change after the create and can be kilobytes, so they
-- go beside the input in job_inputs (see 00005): heartbeats, leases and completions do not
-- copy them. The claim's columns go on jobs, ahead of the results, which must stay the last
-- column so that a summary never walks their overflow pages; SQLite only appends columns,
-- so jobs is rebuilt once more, with the indexes and triggers of 00005 and 00008.
--
-- The lease index gains aligning, so that leasing still reads the index alone; a partial
-- index holds the jobs waiting for their searches, in seq order, so that a claim looks at
-- those alone however many jobs are queued.

-- +goose Up
ALTER TABLE job_inputs ADD COLUMN searches TEXT; -- JSON array of job.Search; NULL: none

CREATE TABLE search_claims (
    key        TEXT    PRIMARY KEY,
    holder     TEXT    NOT NULL,
    expires_at INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE jobs_new (
    seq              INTEGER PRIMARY KEY AUTOINCREMENT,
    id               TEXT    NOT NULL UNIQUE,
    owner            TEXT    NOT NULL,
    kind             TEXT    NOT NULL,
    name             TEXT    NOT NULL DEFAULT '',
    model            TEXT    NOT NULL DEFAULT '',
    protocol         TEXT    NOT NULL DEFAULT '',
    run_model        TEXT    NOT NULL,
    params           TEXT    NOT NULL, -- JSON object
    status           TEXT    NOT NULL,
    stage            TEXT    NOT NULL DEFAULT '',
    progress         REAL,             -- NULL: indeterminate
    done             INTEGER NOT NULL DEFAULT 0,
    total            INTEGER NOT NULL DEFAULT 0,
    error            TEXT    NOT NULL DEFAULT '',
    attempt          INTEGER NOT NULL DEFAULT 0,
    worker_id        TEXT    NOT NULL DEFAULT '',
    lease_expires_at INTEGER,
    last_activity_at INTEGER,
    created_at       INTEGER NOT NULL,
    started_at       INTEGER,
    finished_at      INTEGER,
    idem_key         TEXT,
    request_hash     TEXT,
    aligning         INTEGER NOT NULL DEFAULT 0,  -- boolean: searches still to be done
    align_holder     TEXT    NOT NULL DEFAULT '', -- the aligner holding the claim; '' unclaimed
    align_until      INTEGER,                     -- when the claim runs out; NULL unclaimed
    -- Last, so that reading any other column never walks the overflow pages of the results.
    results          TEXT              -- JSON, set on success
);
INSERT INTO jobs_new (seq, id, owner, kind, name, model, protocol, run_model, params, status, stage, progress, done, total, error, attempt, worker_id, lease_expires_at, last_activity_at, created_at, started_at, finished_at, idem_key, request_hash, results)
    SELECT seq, id, owner, kind, name, model, protocol, run_model, params, status, stage, progress, done, total, error, attempt, worker_id, lease_expires_at, last_activity_at, created_at, started_at, finished_at, idem_key, request_hash, results FROM jobs;
-- AUTOINCREMENT: a deleted job's seq is never handed out again, so the counter moves over.
DELETE FROM sqlite_sequence WHERE name = 'jobs_new';
INSERT INTO sqlite_sequence (name, seq) SELECT 'jobs_new', seq FROM sqlite_sequence WHERE name = 'jobs';
DROP TABLE jobs;
ALTER TABLE jobs_new RENAME TO jobs;

CREATE INDEX jobs_owner_seq ON jobs (owner, seq);
CREATE INDEX jobs_owner_status ON jobs (owner, status);
CREATE INDEX jobs_queue ON jobs (status, run_model, owner, aligning);
CREATE INDEX jobs_running_lease ON jobs (lease_expires_at) WHERE status = 'running';
CREATE UNIQUE INDEX jobs_idempotency ON jobs (owner, idem_key) WHERE idem_key IS NOT NULL;
-- Both terms are equalities on the index's columns, so the planner picks it without
-- statistics, and its entries come in rowid (seq) order.
CREATE INDEX jobs_aligning ON jobs (status, aligning) WHERE status = 'queued' AND aligning = 1;

-- +goose StatementBegin
CREATE TRIGGER jobs_counts_insert AFTER INSERT ON jobs BEGIN
    UPDATE counters SET n = n + 1
        WHERE name = 'jobs' OR (name = 'queued' AND NEW.status = 'queued');
    INSERT INTO owner_jobs (owner, n) VALUES (NEW.owner, 1)
        ON CONFLICT (owner) DO UPDATE SET n = n + 1;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER jobs_counts_status AFTER UPDATE OF status ON jobs
    WHEN (OLD.status = 'queued') != (NEW.status = 'queued') BEGIN
    UPDATE counters SET n = n + CASE WHEN NEW.status = 'queued' THEN 1 ELSE -1 END
        WHERE name = 'queued';
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER jobs_counts_delete AFTER DELETE ON jobs BEGIN
    UPDATE counters SET n = n - 1
        WHERE name = 'jobs' OR (name = 'queued' AND OLD.status = 'queued');
    UPDATE owner_jobs SET n = n - 1 WHERE owner = OLD.owner;
    DELETE FROM owner_jobs WHERE owner = OLD.owner AND n <= 0;
    DELETE FROM job_inputs WHERE seq = OLD.seq;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER jobs_handbacks_delete AFTER DELETE ON jobs BEGIN
    DELETE FROM handbacks WHERE seq = OLD.seq;
END;
-- +goose StatementEnd

-- +goose Down
-- Jobs still waiting for their searches become plain queued jobs, leasable as before.
CREATE TABLE jobs_new (
    seq              INTEGER PRIMARY KEY AUTOINCREMENT,
    id               TEXT    NOT NULL UNIQUE,
    owner            TEXT    NOT NULL,
    kind             TEXT    NOT NULL,
    name             TEXT    NOT NULL DEFAULT '',
    model            TEXT    NOT NULL DEFAULT '',
    protocol         TEXT    NOT NULL DEFAULT '',
    run_model        TEXT    NOT NULL,
    params           TEXT    NOT NULL, -- JSON object
    status           TEXT    NOT NULL,
    stage            TEXT    NOT NULL DEFAULT '',
    progress         REAL,             -- NULL: indeterminate
    done             INTEGER NOT NULL DEFAULT 0,
    total            INTEGER NOT NULL DEFAULT 0,
    error            TEXT    NOT NULL DEFAULT '',
    attempt          INTEGER NOT NULL DEFAULT 0,
    worker_id        TEXT    NOT NULL DEFAULT '',
    lease_expires_at INTEGER,
    last_activity_at INTEGER,
    created_at       INTEGER NOT NULL,
    started_at       INTEGER,
    finished_at      INTEGER,
    idem_key         TEXT,
    request_hash     TEXT,
    -- Last, so that reading any other column never walks the overflow pages of the results.
    results          TEXT              -- JSON, set on success
);
INSERT INTO jobs_new (seq, id, owner, kind, name, model, protocol, run_model, params, status, stage, progress, done, total, error, attempt, worker_id, lease_expires_at, last_activity_at, created_at, started_at, finished_at, idem_key, request_hash, results)
    SELECT seq, id, owner, kind, name, model, protocol, run_model, params, status,
        CASE WHEN status = 'queued' AND aligning = 1 THEN '' ELSE stage END,
        progress, done, total, error, attempt, worker_id, lease_expires_at, last_activity_at, created_at, started_at, finished_at, idem_key, request_hash, results FROM jobs;
DELETE FROM sqlite_sequence WHERE name = 'jobs_new';
INSERT INTO sqlite_sequence (name, seq) SELECT 'jobs_new', seq FROM sqlite_sequence WHERE name = 'jobs';
DROP TABLE jobs;
ALTER TABLE jobs_new RENAME TO jobs;

CREATE INDEX jobs_owner_seq ON jobs (owner, seq);
CREATE INDEX jobs_owner_status ON jobs (owner, status);
CREATE INDEX jobs_queue ON jobs (status, run_model, owner);
CREATE INDEX jobs_running_lease ON jobs (lease_expires_at) WHERE status = 'running';
CREATE UNIQUE INDEX jobs_idempotency ON jobs (owner, idem_key) WHERE idem_key IS NOT NULL;

-- +goose StatementBegin
CREATE TRIGGER jobs_counts_insert AFTER INSERT ON jobs BEGIN
    UPDATE counters SET n = n + 1
        WHERE name = 'jobs' OR (name = 'queued' AND NEW.status = 'queued');
    INSERT INTO owner_jobs (owner, n) VALUES (NEW.owner, 1)
        ON CONFLICT (owner) DO UPDATE SET n = n + 1;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER jobs_counts_status AFTER UPDATE OF status ON jobs
    WHEN (OLD.status = 'queued') != (NEW.status = 'queued') BEGIN
    UPDATE counters SET n = n + CASE WHEN NEW.status = 'queued' THEN 1 ELSE -1 END
        WHERE name = 'queued';
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER jobs_counts_delete AFTER DELETE ON jobs BEGIN
    UPDATE counters SET n = n - 1
        WHERE name = 'jobs' OR (name = 'queued' AND OLD.status = 'queued');
    UPDATE owner_jobs SET n = n - 1 WHERE owner = OLD.owner;
    DELETE FROM owner_jobs WHERE owner = OLD.owner AND n <= 0;
    DELETE FROM job_inputs WHERE seq = OLD.seq;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER jobs_handbacks_delete AFTER DELETE ON jobs BEGIN
    DELETE FROM handbacks WHERE seq = OLD.seq;
END;
-- +goose StatementEnd

DROP TABLE search_claims;
ALTER TABLE job_inputs DROP COLUMN searches;
