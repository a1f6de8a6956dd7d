-- Times are INTEGER unix milliseconds (UTC), NULL for "not yet". JSON documents are TEXT.

-- +goose Up
CREATE TABLE jobs (
    -- seq orders listings and the queue. AUTOINCREMENT so that a deleted job's seq is never
    -- handed out again, which keeps listing cursors stable.
    seq              INTEGER PRIMARY KEY AUTOINCREMENT,
    id               TEXT    NOT NULL UNIQUE,
    owner            TEXT    NOT NULL,
    kind             TEXT    NOT NULL,
    name             TEXT    NOT NULL DEFAULT '',
    model            TEXT    NOT NULL DEFAULT '',
    protocol         TEXT    NOT NULL DEFAULT '',
    run_model        TEXT    NOT NULL,
    params           TEXT    NOT NULL, -- JSON object
    input            TEXT    NOT NULL, -- JSON object
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
    results          TEXT,             -- JSON, set on success
    -- The idempotency entry lives on the row it created, so it goes when the job goes
    -- (deleted or evicted), as the decisions require.
    idem_key         TEXT,
    request_hash     TEXT
);

CREATE INDEX jobs_owner_seq ON jobs (owner, seq);              -- listing
CREATE INDEX jobs_owner_status ON jobs (owner, status, seq);   -- quotas, eviction
CREATE INDEX jobs_status_model ON jobs (status, run_model, seq); -- leasing, queue depth, census
CREATE INDEX jobs_running_lease ON jobs (lease_expires_at) WHERE status = 'running'; -- recovery
CREATE UNIQUE INDEX jobs_idempotency ON jobs (owner, idem_key) WHERE idem_key IS NOT NULL;

-- Job counts kept by triggers, so that retention never counts the whole table on a create.
-- The row with owner '' holds the total (real owners are "kind:id", never empty).
CREATE TABLE job_counts (
    owner TEXT PRIMARY KEY,
    n     INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX job_counts_n ON job_counts (n);
INSERT INTO job_counts (owner, n) VALUES ('', 0);

-- +goose StatementBegin
CREATE TRIGGER jobs_count_insert AFTER INSERT ON jobs BEGIN
    UPDATE job_counts SET n = n + 1 WHERE owner = '';
    INSERT INTO job_counts (owner, n) VALUES (NEW.owner, 1)
        ON CONFLICT (owner) DO UPDATE SET n = n + 1;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER jobs_count_delete AFTER DELETE ON jobs BEGIN
    UPDATE job_counts SET n = n - 1 WHERE owner IN ('', OLD.owner);
    DELETE FROM job_counts WHERE owner = OLD.owner AND n <= 0;
END;
-- +goose StatementEnd

-- Successful creates per owner in the last minute. Kept apart from jobs so that deleting a
-- job does not refund the create.
CREATE TABLE creates (
    owner TEXT    NOT NULL,
    at    INTEGER NOT NULL
);
CREATE INDEX creates_owner_at ON creates (owner, at);
CREATE INDEX creates_at ON creates (at);

CREATE TABLE workers (
    id      TEXT    PRIMARY KEY,
    models  TEXT    NOT NULL, -- JSON array
    missing TEXT    NOT NULL, -- JSON object
    slots   INTEGER NOT NULL,
    busy    INTEGER NOT NULL,
    seen_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX workers_seen_at ON workers (seen_at);

CREATE TABLE api_keys (
    id         TEXT    PRIMARY KEY,
    name       TEXT    NOT NULL,
    hash       TEXT    NOT NULL UNIQUE,
    prefix     TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    revoked_at INTEGER
) WITHOUT ROWID;
-- A live key's name is unique, so that "keys revoke NAME" means one key.
CREATE UNIQUE INDEX api_keys_live_name ON api_keys (name) WHERE revoked_at IS NULL;

-- +goose Down
DROP TABLE api_keys;
DROP TABLE workers;
DROP TABLE creates;
DROP TRIGGER jobs_count_delete;
DROP TRIGGER jobs_count_insert;
DROP TABLE job_counts;
DROP TABLE jobs;
