package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/store"
)

// jsonOf encodes v for a json column; a nil list is [] and a nil map {}, never null.
func jsonOf[T any](v T, empty string) (string, error) {
	b, err := json.Marshal(v)
	if err != nil || string(b) == "null" {
		return empty, err
	}
	return string(b), nil
}

// PutWorker implements store.Workers.
func (s *Store) PutWorker(ctx context.Context, w store.Worker) error {
	models, err := jsonOf(w.Models, "[]")
	if err != nil {
		return err
	}
	missing, err := jsonOf(w.Missing, "{}")
	if err != nil {
		return err
	}
	loaded, err := jsonOf(w.Loaded, "[]")
	if err != nil {
		return err
	}
	_, err = s.pool.Exec(ctx, `INSERT INTO workers (id, models, missing, loaded, slots, seen_at)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (id) DO UPDATE SET models = excluded.models, missing = excluded.missing,
			loaded = excluded.loaded, slots = excluded.slots, seen_at = excluded.seen_at`,
		w.ID, models, missing, loaded, w.Slots, w.SeenAt)
	return err
}

// LiveWorkers implements store.Workers, ordered by id. Busy counts the running jobs each
// holds (few: one per slot), through the partial index of running jobs.
func (s *Store) LiveWorkers(ctx context.Context, since time.Time) ([]store.Worker, error) {
	rows, err := s.pool.Query(ctx, `SELECT w.id, w.models, w.missing, w.loaded, w.slots,
			(SELECT count(*)::integer FROM jobs j WHERE j.status = 'running' AND j.worker_id = w.id),
			w.seen_at
		FROM workers w WHERE w.seen_at >= $1 ORDER BY w.id`, since)
	if err != nil {
		return nil, err
	}
	var out []store.Worker
	var w store.Worker
	var models, missing, loaded []byte
	_, err = pgx.ForEachRow(rows, []any{&w.ID, &models, &missing, &loaded, &w.Slots, &w.Busy, &w.SeenAt}, func() error {
		w.Models, w.Missing, w.Loaded = nil, nil, nil
		if err := json.Unmarshal(models, &w.Models); err != nil {
			return fmt.Errorf("postgres: worker %s models: %w", w.ID, err)
		}
		if err := json.Unmarshal(missing, &w.Missing); err != nil {
			return fmt.Errorf("postgres: worker %s missing: %w", w.ID, err)
		}
		if err := json.Unmarshal(loaded, &w.Loaded); err != nil {
			return fmt.Errorf("postgres: worker %s loaded: %w", w.ID, err)
		}
		w.SeenAt = w.SeenAt.UTC()
		out = append(out, w)
		return nil
	})
	return out, err
}

// RemoveWorker implements store.Workers; an unknown id is not an error.
func (s *Store) RemoveWorker(ctx context.Context, id string) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM workers WHERE id = $1`, id)
	return err
}

// CreateKey implements store.Keys. A live key's name must be unique (a *job.ConflictError
// otherwise), so that revoking by name means one key; the unique index decides races.
func (s *Store) CreateKey(ctx context.Context, k store.Key) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO api_keys (id, name, hash, prefix, created_at, revoked_at, worker)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		k.ID, k.Name, k.Hash, k.Prefix, k.CreatedAt, tsOrNull(k.RevokedAt), k.Worker)
	if isUnique(err, "api_keys_live_name") {
		return &job.ConflictError{Reason: fmt.Sprintf("A live key named %q exists already.", k.Name)}
	}
	if err != nil {
		return fmt.Errorf("postgres: creating key: %w", err)
	}
	return nil
}

const keyCols = `id, name, hash, prefix, created_at, revoked_at, worker`

func scanKey(row pgx.Row) (store.Key, error) {
	var k store.Key
	var revoked *time.Time
	if err := row.Scan(&k.ID, &k.Name, &k.Hash, &k.Prefix, &k.CreatedAt, &revoked, &k.Worker); err != nil {
		return store.Key{}, err
	}
	k.CreatedAt, k.RevokedAt = k.CreatedAt.UTC(), utc(revoked)
	return k, nil
}

// KeyByHash implements store.Keys. It reads the database every time, so that a revocation
// through any replica takes effect on all of them at once.
func (s *Store) KeyByHash(ctx context.Context, hash string) (*store.Key, error) {
	k, err := scanKey(s.pool.QueryRow(ctx, `SELECT `+keyCols+` FROM api_keys
		WHERE hash = $1 AND revoked_at IS NULL`, hash))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, job.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return &k, nil
}

// ListKeys implements store.Keys: every key, revoked ones too, oldest first.
func (s *Store) ListKeys(ctx context.Context) ([]store.Key, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+keyCols+` FROM api_keys ORDER BY created_at, id`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Key, error) { return scanKey(r) })
}

// RevokeKey implements store.Keys. Revoking a key that is already revoked changes nothing
// and is not an error.
func (s *Store) RevokeKey(ctx context.Context, idOrName string, now time.Time) error {
	var known bool
	err := s.pool.QueryRow(ctx, `WITH revoked AS (
			UPDATE api_keys SET revoked_at = $2 WHERE (id = $1 OR name = $1) AND revoked_at IS NULL)
		SELECT EXISTS (SELECT 1 FROM api_keys WHERE id = $1 OR name = $1)`, idOrName, now).Scan(&known)
	if err != nil {
		return err
	}
	if !known {
		return job.ErrNotFound
	}
	return nil
}
