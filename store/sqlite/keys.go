package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/store"
	"github.com/chaperone-bio/chaperone/store/internal/sqlstore"
)

// CreateKey implements store.Keys. A live key's name must be unique (a *job.ConflictError
// otherwise), so that revoking by name means one key: the one writer finds it taken before
// it inserts.
func (s *Store) CreateKey(ctx context.Context, k store.Key) error {
	return s.write(ctx, func(ctx context.Context, tx *sql.Tx, _ func(...string)) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM api_keys
			WHERE name = $1 AND revoked_at IS NULL`, k.Name).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return &job.ConflictError{Reason: fmt.Sprintf("A live key named %q exists already.", k.Name)}
		}
		if _, err := tx.ExecContext(ctx, sqlstore.InsertKey, dialect.KeyArgs(k)...); err != nil {
			return fmt.Errorf("sqlite: creating key: %w", err)
		}
		return nil
	})
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
	k, err := s.Core.KeyByHash(ctx, hash)
	if err != nil {
		return nil, err
	}
	s.keys.put(gen, *k)
	return k, nil
}

// keyEpoch reads the counter of changes to api_keys.
func (s *Store) keyEpoch(ctx context.Context) (int64, error) {
	var n int64
	err := s.st.reads[selectKeyEpoch].QueryRowContext(ctx).Scan(&n)
	return n, err
}
