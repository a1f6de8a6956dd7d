-- The alignment stage ahead of the workers (store.Aligning), as store/sqlite's 00010. A job
-- created with searches is queued with aligning set, which LeaseJob passes over, until an
-- aligner claims it (align_holder, until align_until: a lease of its own, '' and NULL while
-- unclaimed) and finishes it. search_claims makes each search happen once across aligners
-- and replicas: the holder of a key searches, the others wait for its result. The searches
-- stay on the job row: like the input, PostgreSQL keeps a large value out of line, and an
-- UPDATE that leaves it alone does not copy it.
--
-- A partial index holds the jobs waiting for their searches, in seq order, so that a claim
-- looks at those alone however many jobs are queued; the lease keeps jobs_queue and drops
-- them on the rows it reads already.

-- +goose Up
ALTER TABLE jobs
    ADD COLUMN searches     json,                          -- []job.Search; NULL: none
    ADD COLUMN aligning     boolean NOT NULL DEFAULT false, -- searches still to be done
    ADD COLUMN align_holder text    NOT NULL DEFAULT '',    -- the claim's aligner; '' unclaimed
    ADD COLUMN align_until  timestamptz;                    -- the claim's end; NULL unclaimed

CREATE INDEX jobs_aligning ON jobs (seq) WHERE status = 'queued' AND aligning;

CREATE TABLE search_claims (
    key        text        PRIMARY KEY,
    holder     text        NOT NULL,
    expires_at timestamptz NOT NULL
);

-- +goose Down
-- Jobs still waiting for their searches become plain queued jobs, leasable as before.
DROP TABLE search_claims;
DROP INDEX jobs_aligning;
UPDATE jobs SET stage = '' WHERE status = 'queued' AND aligning;
ALTER TABLE jobs
    DROP COLUMN align_until,
    DROP COLUMN align_holder,
    DROP COLUMN aligning,
    DROP COLUMN searches;
