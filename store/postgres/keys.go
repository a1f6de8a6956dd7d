package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/store"
	"github.com/chaperone-bio/chaperone/store/internal/sqlstore"
)

// CreateKey implements store.Keys. A live key's name must be unique (a *job.ConflictError
// otherwise), so that revoking by name means one key; the unique index decides races
// between replicas.
func (s *Store) CreateKey(ctx context.Context, k store.Key) error {
	_, err := s.pool.Exec(ctx, sqlstore.InsertKey, dialect.KeyArgs(k)...)
	if isUnique(err, "api_keys_live_name") {
		return &job.ConflictError{Reason: fmt.Sprintf("A live key named %q exists already.", k.Name)}
	}
	if err != nil {
		return fmt.Errorf("postgres: creating key: %w", err)
	}
	return nil
}

// isUnique reports whether err violates the unique constraint or index named constraint.
func isUnique(err error, constraint string) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505" && pe.ConstraintName == constraint
}
