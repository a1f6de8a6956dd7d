-- How many of a job's attempts a worker shutting down cleanly handed back: they do not
-- count against the attempt limit (store.Queue.HandBack). A table of its own, so that the
-- results stay the last column of jobs (see 00005); rows exist only for jobs handed back.

-- +goose Up
CREATE TABLE handbacks (
    seq INTEGER PRIMARY KEY, -- the job's
    n   INTEGER NOT NULL
);

-- +goose StatementBegin
CREATE TRIGGER jobs_handbacks_delete AFTER DELETE ON jobs BEGIN
    DELETE FROM handbacks WHERE seq = OLD.seq;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER jobs_handbacks_delete;
DROP TABLE handbacks;
