package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/store"
	"github.com/chaperone-bio/chaperone/store/internal/sqlstore"
)

// driver is the Store as its sqlstore.Core runs statements: on the pool, or in a
// transaction of write. pgx prepares and caches every statement it runs by itself.
type driver struct {
	querier
	s *Store
}

var _ sqlstore.Driver = driver{}

func (d driver) Write(ctx context.Context, fn sqlstore.WriteFunc) error { return d.s.write(ctx, fn) }

// Advisory lock keys of creates: per owner (the owner's hash) in one class, the service
// in another.
const (
	ownerLockClass   = 0x43480001
	serviceLockClass = 0x43480002
)

// LockCreate takes the owner's lock (idempotency, the per-owner quotas) and, when the
// queue cap or retention is in reach, the service's, always in that order.
func (d driver) LockCreate(ctx context.Context, tx sqlstore.Querier, owner string, l store.Limits) (bool, error) {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, ownerLockClass, owner); err != nil {
		return false, err
	}
	serviceWide, err := d.s.needsServiceLock(ctx, tx, l)
	if err != nil || !serviceWide {
		return false, err
	}
	_, err = tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, 0)`, serviceLockClass)
	return err == nil, err
}

// needsServiceLock reports whether a create must hold the service lock: when the queue cap
// or retention could come into play. Without the lock, a count misses at most the creates
// of transactions that have not committed yet, one per connection the server allows; so
// when the counts are further than that from the limits, no set of concurrent creates can
// cross them, and creates of different owners go on in parallel.
func (s *Store) needsServiceLock(ctx context.Context, tx sqlstore.Querier, l store.Limits) (bool, error) {
	if l.QueuedServiceWide <= 0 && l.Retained <= 0 {
		return false, nil
	}
	var queued, total int
	if err := tx.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status = 'queued'), count(*) FROM jobs`).
		Scan(&queued, &total); err != nil {
		return false, err
	}
	near := func(n, limit int) bool { return limit > 0 && n+s.maxConns >= limit }
	return near(queued, l.QueuedServiceWide) || near(total, l.Retained), nil
}

// InsertJob stores the job in one row and returns it.
func (driver) InsertJob(ctx context.Context, tx sqlstore.Querier, j sqlstore.NewJob) (*job.Job, error) {
	created, err := dialect.ScanJob(tx.QueryRow(ctx, insertJob, j.ID, j.Owner, j.Kind, j.Name, j.Model,
		j.Protocol, j.RunModel, j.Params, j.Input, j.Total, j.CreatedAt, j.IdemKey, j.RequestHash,
		j.Searches, j.Aligning))
	if err != nil {
		return nil, fmt.Errorf("postgres: inserting job: %w", err)
	}
	return created, nil
}

// querier runs statements on the pool or in a transaction.
type querier struct {
	q interface {
		Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
		Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
		QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	}
}

func (q querier) QueryRow(ctx context.Context, query string, args ...any) sqlstore.Row {
	return q.q.QueryRow(ctx, query, args...)
}

func (q querier) Query(ctx context.Context, query string, args ...any) (sqlstore.Rows, error) {
	rows, err := q.q.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return rows, nil
}

func (q querier) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := q.q.Exec(ctx, query, args...)
	return tag.RowsAffected(), err
}
