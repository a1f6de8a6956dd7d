-- The models each worker's warm sessions hold loaded, as the worker last announced them.

-- +goose Up
ALTER TABLE workers ADD COLUMN loaded TEXT NOT NULL DEFAULT '[]'; -- JSON array

-- +goose Down
ALTER TABLE workers DROP COLUMN loaded;
