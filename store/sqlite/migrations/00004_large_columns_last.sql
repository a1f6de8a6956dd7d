-- Moves input and results, the two columns that can be megabytes, to the end of the jobs
-- row. SQLite stores a row's columns in order and spills what does not fit a page into a
-- chain of overflow pages; a column after a large one can only be reached by walking that
-- chain. With input and results last, job views, listings, quotas and leases read a page or
-- two whatever the size of the input. SQLite cannot reorder columns, so the table is rebuilt,
-- with its indexes and triggers as 00002 left them.

-- +goose Up
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
    -- Last, so that reading any other column never walks the overflow pages of these two.
    input            TEXT    NOT NULL, -- JSON object
    results          TEXT              -- JSON, set on success
);
INSERT INTO jobs_new (seq, id, owner, kind, name, model, protocol, run_model, params, status, stage, progress, done, total, error, attempt, worker_id, lease_expires_at, last_activity_at, created_at, started_at, finished_at, idem_key, request_hash, input, results)
    SELECT seq, id, owner, kind, name, model, protocol, run_model, params, status, stage, progress, done, total, error, attempt, worker_id, lease_expires_at, last_activity_at, created_at, started_at, finished_at, idem_key, request_hash, input, results FROM jobs;
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
CREATE TRIGGER jobs_counts_delete AFTER DELETE ON jobs BEGIN
    UPDATE counters SET n = n - 1
        WHERE name = 'jobs' OR (name = 'queued' AND OLD.status = 'queued');
    UPDATE owner_jobs SET n = n - 1 WHERE owner = OLD.owner;
    DELETE FROM owner_jobs WHERE owner = OLD.owner AND n <= 0;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER jobs_counts_status AFTER UPDATE OF status ON jobs
    WHEN (OLD.status = 'queued') != (NEW.status = 'queued') BEGIN
    UPDATE counters SET n = n + CASE WHEN NEW.status = 'queued' THEN 1 ELSE -1 END
        WHERE name = 'queued';
END;
-- +goose StatementEnd

-- +goose Down
-- The order of 00001 is not restored: no statement depends on it.
