package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/store"
	"github.com/chaperone-bio/chaperone/store/internal/sqlstore"
)

// driver is the Store as its sqlstore.Core runs statements: reads on the query-only
// connections, every write through the writer goroutine (writer.go).
type driver struct {
	querier // the readers
	s       *Store
}

var _ sqlstore.Driver = driver{}

// Exec writes alone, as a write of its own in the next group, never on the readers.
func (d driver) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	var n int64
	err := d.s.write(ctx, func(ctx context.Context, tx *sql.Tx, _ func(...string)) error {
		var err error
		n, err = d.s.inTx(tx).Exec(ctx, query, args...)
		return err
	})
	return n, err
}

func (d driver) Write(ctx context.Context, fn sqlstore.WriteFunc) error {
	return d.s.write(ctx, func(ctx context.Context, tx *sql.Tx, changed func(...string)) error {
		return fn(ctx, d.s.inTx(tx), changed)
	})
}

// LockCreate has nothing to wait for: the one writer runs every create alone, so each sees
// every other whole, and the service-wide limits are always checked.
func (driver) LockCreate(context.Context, sqlstore.Querier, string, store.Limits) (bool, error) {
	return true, nil
}

// InsertJob writes the job's row, then its input beside it, and reads the job back.
func (driver) InsertJob(ctx context.Context, tx sqlstore.Querier, j sqlstore.NewJob) (*job.Job, error) {
	var seq int64
	err := tx.QueryRow(ctx, insertJob, j.ID, j.Owner, j.Kind, j.Name, j.Model, j.Protocol, j.RunModel,
		j.Params, j.Total, j.CreatedAt, j.IdemKey, j.RequestHash, j.Aligning).Scan(&seq)
	if err != nil {
		return nil, fmt.Errorf("sqlite: inserting job: %w", err)
	}
	if _, err := tx.Exec(ctx, insertInput, seq, j.Input, j.Searches); err != nil {
		return nil, fmt.Errorf("sqlite: inserting job input: %w", err)
	}
	created, err := dialect.ScanJob(tx.QueryRow(ctx, selectJob, j.ID))
	if err != nil {
		return nil, fmt.Errorf("sqlite: reading the new job: %w", err)
	}
	return created, nil
}

// querier runs statements on the readers or in a transaction of the writer, each through
// its prepared statement where stmts holds its text.
type querier struct {
	on interface {
		QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
		QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
		ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	}
	tx    *sql.Tx // nil on the readers
	stmts map[string]*sql.Stmt
}

func (s *Store) inTx(tx *sql.Tx) querier { return querier{on: tx, tx: tx, stmts: s.st.writes} }

// prepared returns the prepared statement of query, nil when there is none.
func (q querier) prepared(ctx context.Context, query string) *sql.Stmt {
	p := q.stmts[query]
	if p != nil && q.tx != nil {
		p = q.tx.StmtContext(ctx, p)
	}
	return p
}

func (q querier) QueryRow(ctx context.Context, query string, args ...any) sqlstore.Row {
	if p := q.prepared(ctx, query); p != nil {
		return p.QueryRowContext(ctx, args...)
	}
	return q.on.QueryRowContext(ctx, query, args...)
}

func (q querier) Query(ctx context.Context, query string, args ...any) (sqlstore.Rows, error) {
	if p := q.prepared(ctx, query); p != nil {
		return wrapRows(p.QueryContext(ctx, args...))
	}
	return wrapRows(q.on.QueryContext(ctx, query, args...))
}

func (q querier) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	if p := q.prepared(ctx, query); p != nil {
		return affected(p.ExecContext(ctx, args...))
	}
	return affected(q.on.ExecContext(ctx, query, args...))
}

func affected(r sql.Result, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	return r.RowsAffected()
}

// rows are *sql.Rows as sqlstore reads them. Close drops its error, as a deferred Close
// does: a read that failed shows in Err.
type rows struct{ *sql.Rows }

func (r rows) Close() { _ = r.Rows.Close() }

func wrapRows(r *sql.Rows, err error) (sqlstore.Rows, error) {
	if err != nil {
		return nil, err
	}
	return rows{r}, nil
}
