-- Counts kept by triggers, so that a create never counts the whole table: the number of
-- jobs (retention), of queued jobs (the service-wide queue cap) and of each owner's jobs
-- (whom retention takes from). Replaces job_counts of 00001, which had no queued count.
-- Also narrows the queue index so that leasing reads only the index.

-- +goose Up
DROP TRIGGER jobs_count_insert;
DROP TRIGGER jobs_count_delete;
DROP TABLE job_counts;

CREATE TABLE counters (
    name TEXT PRIMARY KEY,
    n    INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO counters (name, n) VALUES
    ('jobs', (SELECT count(*) FROM jobs)),
    ('queued', (SELECT count(*) FROM jobs WHERE status = 'queued'));

CREATE TABLE owner_jobs (
    owner TEXT PRIMARY KEY,
    n     INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX owner_jobs_n ON owner_jobs (n);
INSERT INTO owner_jobs (owner, n) SELECT owner, count(*) FROM jobs GROUP BY owner;

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

-- Leasing; covering, since every index also holds seq (the rowid).
DROP INDEX jobs_status_model;
CREATE INDEX jobs_queue ON jobs (status, run_model, owner);
DROP INDEX jobs_owner_status;
CREATE INDEX jobs_owner_status ON jobs (owner, status); -- quotas, eviction

-- +goose Down
DROP INDEX jobs_owner_status;
CREATE INDEX jobs_owner_status ON jobs (owner, status, seq);
DROP INDEX jobs_queue;
CREATE INDEX jobs_status_model ON jobs (status, run_model, seq);

DROP TRIGGER jobs_counts_status;
DROP TRIGGER jobs_counts_delete;
DROP TRIGGER jobs_counts_insert;
DROP TABLE owner_jobs;
DROP TABLE counters;

CREATE TABLE job_counts (
    owner TEXT PRIMARY KEY,
    n     INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX job_counts_n ON job_counts (n);
INSERT INTO job_counts (owner, n) VALUES ('', (SELECT count(*) FROM jobs));
INSERT INTO job_counts (owner, n) SELECT owner, count(*) FROM jobs GROUP BY owner;

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
