-- Keeps the two columns that can be megabytes away from the rest of a job. SQLite stores a
-- row's columns in order and spills what does not fit a page into a chain of overflow pages;
-- reading a column after a large one walks that chain, and any UPDATE of a row rebuilds the
-- whole record, large columns included. So the input, which never changes, moves to a table
-- of its own: heartbeats, leases and completions no longer copy it, and job views, listings
-- and quotas never read it. The results, written once when the job ends, become the last
-- column. SQLite cannot drop or reorder columns in place, so jobs is rebuilt, with the
-- indexes and triggers of 00002.

-- +goose Up
CREATE TABLE job_inputs (
    seq   INTEGER PRIMARY KEY, -- the job's; the row goes with the job (jobs_counts_delete)
    input TEXT    NOT NULL     -- JSON object
);
INSERT INTO job_inputs (seq, input) SELECT seq, input FROM jobs;

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
    SELECT seq, id, owner, kind, name, model, protocol, run_model, params, status, stage, progress, done, total, error, attempt, worker_id, lease_expires_at, last_activity_at, created_at, started_at, finished_at, idem_key, request_hash, results FROM jobs;
-- AUTOINCREMENT: a deleted job's seq is never handed out again, so the counter moves over.
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

-- +goose Down
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
    results          TEXT,
    input            TEXT    NOT NULL
);
INSERT INTO jobs_new (seq, id, owner, kind, name, model, protocol, run_model, params, status, stage, progress, done, total, error, attempt, worker_id, lease_expires_at, last_activity_at, created_at, started_at, finished_at, idem_key, request_hash, results, input)
    SELECT seq, id, owner, kind, name, model, protocol, run_model, params, status, stage, progress, done, total, error, attempt, worker_id, lease_expires_at, last_activity_at, created_at, started_at, finished_at, idem_key, request_hash, results, (SELECT i.input FROM job_inputs i WHERE i.seq = jobs.seq) FROM jobs;
-- AUTOINCREMENT: a deleted job's seq is never handed out again, so the counter moves over.
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
END;
-- +goose StatementEnd

DROP TABLE job_inputs;
