-- A worker's busy slots are counted from the jobs it holds (store.Workers.LiveWorkers), at
-- the moment it leases one, rather than taken from what it last announced, which lagged a
-- third of a lease behind. As store/sqlite's 00009.

-- +goose Up
ALTER TABLE workers DROP COLUMN busy;

-- +goose Down
ALTER TABLE workers ADD COLUMN busy integer NOT NULL DEFAULT 0;
