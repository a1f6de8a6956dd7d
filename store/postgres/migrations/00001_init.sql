-- The schema of store/sqlite's migrations 00001 to 00005, as PostgreSQL does it. Times are
-- timestamptz, NULL for "not yet"; JSON documents are json, kept as written. The input and
-- the results can be megabytes: PostgreSQL stores large values out of line (TOAST) and an
-- UPDATE that leaves them alone does not copy them, so they stay on the job row.

-- +goose Up
CREATE TABLE jobs (
    -- seq orders listings and the queue; an identity never hands a number out twice, which
    -- keeps listing cursors stable.
    seq              bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id               text    NOT NULL UNIQUE,
    owner            text    NOT NULL,
    kind             text    NOT NULL,
    name             text    NOT NULL DEFAULT '',
    model            text    NOT NULL DEFAULT '',
    protocol         text    NOT NULL DEFAULT '',
    run_model        text    NOT NULL,
    params           json    NOT NULL,
    input            json    NOT NULL,
    status           text    NOT NULL,
    stage            text    NOT NULL DEFAULT '',
    progress         double precision, -- NULL: indeterminate
    done             integer NOT NULL DEFAULT 0,
    total            integer NOT NULL DEFAULT 0,
    error            text    NOT NULL DEFAULT '',
    attempt          integer NOT NULL DEFAULT 0,
    worker_id        text    NOT NULL DEFAULT '',
    lease_expires_at timestamptz,
    last_activity_at timestamptz,
    created_at       timestamptz NOT NULL,
    started_at       timestamptz,
    finished_at      timestamptz,
    -- The idempotency entry lives on the row it created, so it goes when the job goes.
    idem_key         text,
    request_hash     text,
    results          json -- set on success
);

CREATE INDEX jobs_owner_seq ON jobs (owner, seq);                                   -- listing
CREATE INDEX jobs_owner_status ON jobs (owner, status);                             -- quotas, eviction
CREATE INDEX jobs_queue ON jobs (run_model, seq) WHERE status = 'queued';            -- leasing
CREATE INDEX jobs_running ON jobs (owner, started_at) WHERE status = 'running';      -- fair order, estimates
CREATE INDEX jobs_running_lease ON jobs (lease_expires_at) WHERE status = 'running'; -- recovery
CREATE INDEX jobs_runtimes ON jobs (run_model, finished_at) WHERE status = 'succeeded'; -- Retry-After
CREATE UNIQUE INDEX jobs_idempotency ON jobs (owner, idem_key) WHERE idem_key IS NOT NULL;

-- Successful creates per owner in the last minute. Kept apart from jobs so that deleting a
-- job does not refund the create.
CREATE TABLE creates (
    owner text        NOT NULL,
    at    timestamptz NOT NULL
);
CREATE INDEX creates_owner_at ON creates (owner, at);
CREATE INDEX creates_at ON creates (at);

CREATE TABLE workers (
    id      text        PRIMARY KEY,
    models  json        NOT NULL,
    missing json        NOT NULL,
    loaded  json        NOT NULL,
    slots   integer     NOT NULL,
    busy    integer     NOT NULL,
    seen_at timestamptz NOT NULL
);
CREATE INDEX workers_seen_at ON workers (seen_at);

CREATE TABLE api_keys (
    id         text        PRIMARY KEY,
    name       text        NOT NULL,
    hash       text        NOT NULL UNIQUE,
    prefix     text        NOT NULL,
    created_at timestamptz NOT NULL,
    revoked_at timestamptz
);
-- A live key's name is unique, so that "keys revoke NAME" means one key.
CREATE UNIQUE INDEX api_keys_live_name ON api_keys (name) WHERE revoked_at IS NULL;

-- +goose Down
DROP TABLE api_keys;
DROP TABLE workers;
DROP TABLE creates;
DROP TABLE jobs;
