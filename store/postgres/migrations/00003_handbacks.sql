-- How many of a job's attempts were handed back by a worker shutting down cleanly: they do
-- not count against the attempt limit (store.Queue.HandBack). As store/sqlite's 00008.

-- +goose Up
ALTER TABLE jobs ADD COLUMN handbacks integer NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE jobs DROP COLUMN handbacks;
