// Package postgres is chaperone's store for deployments of more than one process: the whole
// state in one PostgreSQL database, through pgx, shared by any number of serve replicas and
// reapers. It implements store.Store and passes store/storetest. What every SQL store does
// alike is store/internal/sqlstore's; this package holds how PostgreSQL is opened, written
// and listened to, and its dialect (dialect.go).
//
// What one SQLite writer serialised, the database decides here:
//   - creates take transaction-scoped advisory locks, one per owner (idempotency, the
//     per-owner quotas) and, when the queue cap or retention is within reach, one for the
//     service, always in that order, so that quotas hold under creates from many replicas
//     at once;
//   - leasing picks its row with FOR UPDATE SKIP LOCKED, so workers leasing at once never
//     wait on each other's row;
//   - completions, heartbeats and recoveries are single UPDATEs fenced by status and
//     attempt, which PostgreSQL rechecks on the row it locked.
//
// Change notifications are NOTIFY in the changing transaction (delivered at commit) and one
// LISTEN connection per store, so Watch wakes on every replica. Nothing read is cached:
// every replica reads what the database holds, summaries and keys included.
//
// It imports job, store, store/notify and store/internal/sqlstore.
package postgres

import (
	"context"
	"crypto/rand"
	"embed"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/chaperone-bio/chaperone/store"
	"github.com/chaperone-bio/chaperone/store/internal/sqlstore"
	"github.com/chaperone-bio/chaperone/store/notify"
)

//go:embed migrations/*.sql
var migrations embed.FS

// channel is the NOTIFY channel; the payload is the origin of the change, a slash, and a
// job id, or "" for the queue.
const channel = "chaperone_jobs"

// IsURL reports whether s names a PostgreSQL database rather than a file.
func IsURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// Store is a store.Store in a PostgreSQL database.
type Store struct {
	*sqlstore.Core

	pool *pgxpool.Pool
	hub  notify.Hub
	// origin tells this store's notifications, which write delivers itself, from others'.
	origin string
	// maxConns is the server's max_connections: no more transactions than that are open
	// at once (see needsServiceLock).
	maxConns int

	// session ends when the LISTEN connection it stands for is lost; watches end with it.
	mu      sync.Mutex
	session context.Context
	endIt   context.CancelFunc

	stopListening context.CancelFunc
	listenDone    chan struct{}
	closeOnce     sync.Once
}

var _ store.Store = (*Store)(nil)

// reconnectEvery is how long the listener waits between attempts to listen again.
const reconnectEvery = 500 * time.Millisecond

// Open connects to the database at url (a postgres:// URL; pgxpool's pool_* parameters
// are honoured), brings its schema up to date and starts listening for changes.
func Open(ctx context.Context, url string) (*Store, error) {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	if err := migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	s := &Store{pool: pool, origin: rand.Text(), listenDone: make(chan struct{})}
	s.Core = sqlstore.New(driver{querier{pool}, s}, dialect)
	if err := pool.QueryRow(ctx, `SELECT current_setting('max_connections')::int`).Scan(&s.maxConns); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: %w", err)
	}
	s.session, s.endIt = context.WithCancel(context.Background())
	conn, err := s.listen(ctx)
	if err != nil {
		pool.Close()
		return nil, err
	}
	lctx, stop := context.WithCancel(context.Background())
	s.stopListening = stop
	go s.relay(lctx, conn)
	return s, nil
}

// migrate applies the embedded migrations the database has not seen yet. A session lock
// keeps replicas that start together from migrating at once.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return err
	}
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return fmt.Errorf("postgres: migrations: %w", err)
	}
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	p, err := goose.NewProvider(goose.DialectPostgres, db, sub,
		goose.WithDisableGlobalRegistry(true), goose.WithSessionLocker(locker))
	if err != nil {
		return fmt.Errorf("postgres: migrations: %w", err)
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("postgres: migrating: %w", err)
	}
	return nil
}

// listen opens the connection that receives notifications. It is apart from the pool:
// a pooled connection would be handed to queries.
func (s *Store) listen(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return nil, fmt.Errorf("postgres: listening: %w", err)
	}
	if _, err := conn.Exec(ctx, "LISTEN "+channel); err != nil {
		conn.Close(ctx)
		return nil, fmt.Errorf("postgres: listening: %w", err)
	}
	return conn, nil
}

// relay publishes the notifications of conn to the hub until ctx ends, listening again
// whenever the connection is lost. Each loss ends the watch session, closing every watch
// channel, as store.Store.Watch requires: changes may have gone unseen. Watches made while
// no connection listens end when one does again, for the same reason.
func (s *Store) relay(ctx context.Context, conn *pgx.Conn) {
	defer close(s.listenDone)
	for {
		for {
			n, err := conn.WaitForNotification(ctx)
			if err != nil {
				break
			}
			if origin, id, ok := strings.Cut(n.Payload, "/"); ok && origin != s.origin {
				s.hub.Publish(id)
			}
		}
		conn.Close(context.Background())
		s.newSession()
		for conn = nil; conn == nil; {
			select {
			case <-ctx.Done():
				return
			case <-time.After(reconnectEvery):
			}
			conn, _ = s.listen(ctx)
		}
		s.newSession()
	}
}

// newSession ends the current watch session and starts the next.
func (s *Store) newSession() {
	s.mu.Lock()
	end := s.endIt
	s.session, s.endIt = context.WithCancel(context.Background())
	s.mu.Unlock()
	end()
}

// Watch implements store.Store.
func (s *Store) Watch(ctx context.Context, id string) <-chan struct{} {
	s.mu.Lock()
	session := s.session
	s.mu.Unlock()
	wctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(session, cancel)
	context.AfterFunc(wctx, func() { stop() })
	return s.hub.Watch(wctx, id)
}

// Close stops listening, which closes every watch channel, and closes the pool.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.stopListening()
		<-s.listenDone
		s.pool.Close()
	})
	return nil
}

// write runs fn in a transaction and commits it. The ids fn passes to changed are
// announced: to the other stores on the database by NOTIFY, delivered at commit, and to
// this store's watchers right after the commit, before write returns, so that a caller
// that watched before writing sees its own change at once.
func (s *Store) write(ctx context.Context, fn sqlstore.WriteFunc) error {
	var ids []string
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		ids = ids[:0]
		if err := fn(ctx, querier{tx}, func(id ...string) { ids = append(ids, id...) }); err != nil {
			return err
		}
		if len(ids) == 0 {
			return nil
		}
		_, err := tx.Exec(ctx, `SELECT pg_notify('`+channel+`', $1 || id) FROM unnest($2::text[]) AS id`,
			s.origin+"/", ids)
		return err
	})
	if err != nil {
		return err
	}
	for _, id := range ids {
		s.hub.Publish(id)
	}
	return nil
}
