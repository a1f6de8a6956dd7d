-- Worker tokens: keys that only the worker endpoints accept, and that every other endpoint
-- refuses (chaperone keys create --worker). As store/sqlite's migration 00006.

-- +goose Up
ALTER TABLE api_keys ADD COLUMN worker boolean NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE api_keys DROP COLUMN worker;
