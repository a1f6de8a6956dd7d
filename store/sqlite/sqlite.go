// Package sqlite is chaperone's embedded store: the whole state of a one-machine
// deployment in one SQLite file, through the pure-Go modernc.org/sqlite driver. It
// implements store.Store and passes store/storetest. What every SQL store does alike is
// store/internal/sqlstore's; this package holds how SQLite is opened and written, its
// dialect (dialect.go) and its caches of summaries and keys.
//
// Concurrency follows the usual recipe for SQLite in WAL mode: one writer connection whose
// transactions take the write lock at BEGIN (_txlock=immediate, so a transaction never
// fails on upgrading a read lock), and a separate pool of query-only connections that read
// concurrently with it. Writes are grouped: see writer.go. Change notifications go through
// an in-process notify.Hub, published after each commit, so Watch works within one process
// only (the case SQLite serves).
//
// Durability: synchronous=FULL in WAL mode, so a create that was answered survives a power
// loss or OS crash, not only a crash of the process. The fsync that FULL adds to a commit is
// shared by every write of a group, which keeps durable creates cheap under load.
//
// It imports job, store, store/notify and store/internal/sqlstore.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/pressly/goose/v3"
	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/chaperone-bio/chaperone/store"
	"github.com/chaperone-bio/chaperone/store/internal/sqlstore"
	"github.com/chaperone-bio/chaperone/store/notify"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Store is a store.Store in one SQLite file.
type Store struct {
	*sqlstore.Core

	w    *sql.DB // the one writer connection, used by the writer goroutine only
	r    *sql.DB // query-only readers
	hub  notify.Hub
	st   stmts
	keys keyCache
	// summaries caches job summaries until the writer reports their job changed.
	summaries summaryCache

	ops        chan *writeOp // to the writer goroutine; unbuffered
	closing    chan struct{} // closed by Close
	closeOnce  sync.Once
	closeErr   error
	writerDone chan struct{} // closed when the writer goroutine returned
}

var _ store.Store = (*Store)(nil)

const busyTimeout = 5 * time.Second // another process (chaperone keys ...) may hold the lock

// Open opens, or creates, the database at path, creating its folder, and brings its schema
// up to date.
func Open(ctx context.Context, path string) (*Store, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	common := url.Values{
		"_busy_timeout": {fmt.Sprint(busyTimeout.Milliseconds())},
		"_foreign_keys": {"1"},
		"_pragma":       {"temp_store(memory)", "cache_size(-16000)", "mmap_size(268435456)"}, // 16 MB page cache
	}
	wq := cloneValues(common)
	wq.Set("_journal_mode", "WAL")
	wq.Set("_synchronous", "FULL")
	wq.Set("_txlock", "immediate")
	w, err := sql.Open("sqlite", path+"?"+wq.Encode())
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxIdleTime(0)
	w.SetConnMaxLifetime(0)
	if err := migrate(ctx, w); err != nil {
		w.Close()
		return nil, err
	}

	// Readers open after the writer has put the file in WAL mode (a property of the file).
	rq := cloneValues(common)
	rq.Set("_query_only", "1")
	r, err := sql.Open("sqlite", path+"?"+rq.Encode())
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	n := max(4, 2*runtime.GOMAXPROCS(0))
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)
	r.SetConnMaxIdleTime(0)
	r.SetConnMaxLifetime(0)

	s := &Store{w: w, r: r, ops: make(chan *writeOp), closing: make(chan struct{}), writerDone: make(chan struct{})}
	go s.runWriter()
	if err := s.st.prepare(ctx, w, r); err != nil {
		s.Close()
		return nil, err
	}
	s.Core = sqlstore.New(driver{querier{on: r, stmts: s.st.reads}, s}, dialect)
	s.keys.changes = openChangeDetector(path)
	return s, nil
}

func cloneValues(v url.Values) url.Values {
	c := make(url.Values, len(v))
	for k, vs := range v {
		c[k] = append([]string(nil), vs...)
	}
	return c
}

// migrate applies the embedded migrations that the file has not seen yet.
func migrate(ctx context.Context, db *sql.DB) error {
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return err
	}
	p, err := goose.NewProvider(goose.DialectSQLite3, db, sub, goose.WithDisableGlobalRegistry(true))
	if err != nil {
		return fmt.Errorf("sqlite: migrations: %w", err)
	}
	// Not p.Close: it would close db.
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("sqlite: migrating: %w", err)
	}
	return nil
}

// Close waits for the write in progress, refuses later ones, and releases the database;
// closing again returns the first outcome. Watchers are not woken.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		close(s.closing)
		<-s.writerDone
		s.st.close()
		s.closeErr = errors.Join(s.keys.changes.close(), s.r.Close(), s.w.Close())
	})
	return s.closeErr
}

// Watch implements store.Store.
func (s *Store) Watch(ctx context.Context, id string) <-chan struct{} { return s.hub.Watch(ctx, id) }
