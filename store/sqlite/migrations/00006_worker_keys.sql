-- Worker tokens: keys that only the worker endpoints accept, and that every other endpoint
-- refuses (chaperone keys create --worker).

-- +goose Up
ALTER TABLE api_keys ADD COLUMN worker INTEGER NOT NULL DEFAULT 0; -- boolean

-- +goose Down
ALTER TABLE api_keys DROP COLUMN worker;
