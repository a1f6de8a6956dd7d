package sqlstore

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

// jsonOf encodes v for a JSON column; a nil list is [] and a nil map {}, never null.
func jsonOf[T any](v T, empty string) (string, error) {
	b, err := json.Marshal(v)
	if err != nil || string(b) == "null" {
		return empty, err
	}
	return string(b), nil
}

// PutWorker implements store.Workers.
func (c *Core) PutWorker(ctx context.Context, w store.Worker) error {
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
	_, err = c.db.Exec(ctx, putWorker, w.ID, models, missing, loaded, w.Slots, c.d.Time(w.SeenAt))
	return err
}

// LiveWorkers implements store.Workers, ordered by id.
func (c *Core) LiveWorkers(ctx context.Context, since time.Time) ([]store.Worker, error) {
	rows, err := c.db.Query(ctx, liveWorkers, c.d.Time(since))
	if err != nil {
		return nil, err
	}
	var out []store.Worker
	err = each(rows, func() error {
		var w store.Worker
		var models, missing, loaded []byte
		var seen any
		if err := rows.Scan(&w.ID, &models, &missing, &loaded, &w.Slots, &w.Busy, &seen); err != nil {
			return err
		}
		if err := json.Unmarshal(models, &w.Models); err != nil {
			return fmt.Errorf("%s: worker %s models: %w", c.d.Name, w.ID, err)
		}
		if err := json.Unmarshal(missing, &w.Missing); err != nil {
			return fmt.Errorf("%s: worker %s missing: %w", c.d.Name, w.ID, err)
		}
		if err := json.Unmarshal(loaded, &w.Loaded); err != nil {
			return fmt.Errorf("%s: worker %s loaded: %w", c.d.Name, w.ID, err)
		}
		w.SeenAt = c.d.TimeOf(seen)
		out = append(out, w)
		return nil
	})
	return out, err
}

// RemoveWorker implements store.Workers; an unknown id is not an error.
func (c *Core) RemoveWorker(ctx context.Context, id string) error {
	_, err := c.db.Exec(ctx, removeWorker, id)
	return err
}

// KeyArgs are the arguments of InsertKey for k.
func (d *Dialect) KeyArgs(k store.Key) []any {
	return []any{k.ID, k.Name, k.Hash, k.Prefix, d.Time(k.CreatedAt), d.NullTime(k.RevokedAt), k.Worker}
}

// KeyByHash implements store.Keys. It reads the database every time.
func (c *Core) KeyByHash(ctx context.Context, hash string) (*store.Key, error) {
	k, err := c.d.scanKey(c.db.QueryRow(ctx, keyByHash, hash))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, job.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return &k, nil
}

// ListKeys implements store.Keys: every key, revoked ones too, oldest first.
func (c *Core) ListKeys(ctx context.Context) ([]store.Key, error) {
	rows, err := c.db.Query(ctx, listKeys)
	if err != nil {
		return nil, err
	}
	var out []store.Key
	err = each(rows, func() error {
		k, err := c.d.scanKey(rows)
		if err != nil {
			return err
		}
		out = append(out, k)
		return nil
	})
	return out, err
}

// RevokeKey implements store.Keys. Revoking a key that is already revoked changes nothing
// and is not an error.
func (c *Core) RevokeKey(ctx context.Context, idOrName string, now time.Time) error {
	return c.db.Write(ctx, func(ctx context.Context, tx Querier, _ func(...string)) error {
		var n int
		if err := tx.QueryRow(ctx, countKeys, idOrName).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return job.ErrNotFound
		}
		_, err := tx.Exec(ctx, revokeKeys, idOrName, c.d.Time(now))
		return err
	})
}
