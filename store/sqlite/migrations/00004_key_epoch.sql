-- A counter of changes to api_keys, kept by triggers, so that a cache of key lookups can
-- tell with one cheap read whether any key was created, revoked or removed, by this process
-- or another one on the same file (chaperone keys revoke).

-- +goose Up
INSERT INTO counters (name, n) VALUES ('keys', 0);

-- +goose StatementBegin
CREATE TRIGGER api_keys_epoch_insert AFTER INSERT ON api_keys BEGIN
    UPDATE counters SET n = n + 1 WHERE name = 'keys';
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER api_keys_epoch_update AFTER UPDATE ON api_keys BEGIN
    UPDATE counters SET n = n + 1 WHERE name = 'keys';
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER api_keys_epoch_delete AFTER DELETE ON api_keys BEGIN
    UPDATE counters SET n = n + 1 WHERE name = 'keys';
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER api_keys_epoch_delete;
DROP TRIGGER api_keys_epoch_update;
DROP TRIGGER api_keys_epoch_insert;
DELETE FROM counters WHERE name = 'keys';
