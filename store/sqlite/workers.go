package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/store"
)

// PutWorker implements store.Workers.
func (s *Store) PutWorker(ctx context.Context, w store.Worker) error {
	models, err := json.Marshal(w.Models)
	if err != nil {
		return err
	}
	missing, err := json.Marshal(w.Missing)
	if err != nil {
		return err
	}
	return s.write(ctx, func(ctx context.Context, tx *sql.Tx, _ func(...string)) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO workers (id, models, missing, loaded, slots, seen_at)
			VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET models = excluded.models, missing = excluded.missing,
				loaded = excluded.loaded, slots = excluded.slots, seen_at = excluded.seen_at`,
			w.ID, string(models), string(missing), jsonList(w.Loaded), w.Slots, w.SeenAt.UnixMilli())
		return err
	})
}

// LiveWorkers implements store.Workers, ordered by id. Busy counts the running jobs each
// holds (few: one per slot), through the partial index of running jobs.
func (s *Store) LiveWorkers(ctx context.Context, since time.Time) ([]store.Worker, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT w.id, w.models, w.missing, w.loaded, w.slots,
			(SELECT count(*) FROM jobs j WHERE j.status = 'running' AND j.worker_id = w.id),
			w.seen_at
		FROM workers w WHERE w.seen_at >= ? ORDER BY w.id`, since.UnixMilli())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.Worker
	for rows.Next() {
		var w store.Worker
		var models, missing, loaded []byte
		var seen sql.NullInt64
		if err := rows.Scan(&w.ID, &models, &missing, &loaded, &w.Slots, &w.Busy, &seen); err != nil {
			return nil, err
		}
		if err := json.Unmarshal(models, &w.Models); err != nil {
			return nil, fmt.Errorf("sqlite: worker %s models: %w", w.ID, err)
		}
		if err := json.Unmarshal(missing, &w.Missing); err != nil {
			return nil, fmt.Errorf("sqlite: worker %s missing: %w", w.ID, err)
		}
		if err := json.Unmarshal(loaded, &w.Loaded); err != nil {
			return nil, fmt.Errorf("sqlite: worker %s loaded: %w", w.ID, err)
		}
		w.SeenAt = fromMs(seen)
		out = append(out, w)
	}
	return out, rows.Err()
}

// RemoveWorker implements store.Workers; an unknown id is not an error.
func (s *Store) RemoveWorker(ctx context.Context, id string) error {
	return s.write(ctx, func(ctx context.Context, tx *sql.Tx, _ func(...string)) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM workers WHERE id = ?`, id)
		return err
	})
}

// CreateKey implements store.Keys. A live key's name must be unique (a *job.ConflictError
// otherwise), so that revoking by name means one key.
func (s *Store) CreateKey(ctx context.Context, k store.Key) error {
	return s.write(ctx, func(ctx context.Context, tx *sql.Tx, _ func(...string)) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM api_keys
			WHERE name = ? AND revoked_at IS NULL`, k.Name).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return &job.ConflictError{Reason: fmt.Sprintf("A live key named %q exists already.", k.Name)}
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO api_keys (id, name, hash, prefix, created_at, revoked_at, worker)
			VALUES (?, ?, ?, ?, ?, ?, ?)`,
			k.ID, k.Name, k.Hash, k.Prefix, k.CreatedAt.UnixMilli(), msOrNull(k.RevokedAt), boolInt(k.Worker))
		if err != nil {
			return fmt.Errorf("sqlite: creating key: %w", err)
		}
		return nil
	})
}

// keyCols are the columns scanKey reads.
const keyCols = `id, name, hash, prefix, created_at, revoked_at, worker`

func scanKey(sc scanner) (store.Key, error) {
	var k store.Key
	var created, revoked sql.NullInt64
	if err := sc.Scan(&k.ID, &k.Name, &k.Hash, &k.Prefix, &created, &revoked, &k.Worker); err != nil {
		return store.Key{}, err
	}
	k.CreatedAt, k.RevokedAt = fromMs(created), fromMs(revoked)
	return k, nil
}

// KeyByHash implements store.Keys, through the cache of live keys (keycache.go).
func (s *Store) KeyByHash(ctx context.Context, hash string) (*store.Key, error) {
	gen, err := s.keys.check(ctx, s.keyEpoch)
	if err != nil {
		return nil, err
	}
	if k, ok := s.keys.get(hash); ok {
		return &k, nil
	}
	k, err := scanKey(s.st.keyByHash.QueryRowContext(ctx, hash))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, job.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	s.keys.put(gen, k)
	return &k, nil
}

// keyEpoch reads the counter of changes to api_keys.
func (s *Store) keyEpoch(ctx context.Context) (int64, error) {
	var n int64
	err := s.st.keyEpoch.QueryRowContext(ctx).Scan(&n)
	return n, err
}

// ListKeys implements store.Keys: every key, revoked ones too, oldest first.
func (s *Store) ListKeys(ctx context.Context) ([]store.Key, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+keyCols+` FROM api_keys ORDER BY created_at, id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.Key
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, rows.Err()
}

// RevokeKey implements store.Keys. Revoking a key that is already revoked changes nothing
// and is not an error.
func (s *Store) RevokeKey(ctx context.Context, idOrName string, now time.Time) error {
	return s.write(ctx, func(ctx context.Context, tx *sql.Tx, _ func(...string)) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM api_keys WHERE id = ?1 OR name = ?1`,
			idOrName).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return job.ErrNotFound
		}
		_, err := tx.ExecContext(ctx, `UPDATE api_keys SET revoked_at = ?2
			WHERE (id = ?1 OR name = ?1) AND revoked_at IS NULL`, idOrName, now.UnixMilli())
		return err
	})
}
