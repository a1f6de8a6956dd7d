// Package sqlstore is what chaperone's two SQL stores share: everything of a store.Store
// that does not depend on the database. It maps jobs, workers and keys to rows and back,
// holds the flow of every method (idempotency, quotas, retention, leases, recovery,
// alignment claims, notifications of what changed) and the statements that every database
// reads alike. A driver (store/sqlite, store/postgres) embeds a Core, runs its statements
// through a Driver, gives it a Dialect holding the SQL that only its database speaks, and
// adds what only it has: Watch and Close, its caches, its way of making creates wait for
// each other.
//
// Statements are written with PostgreSQL's numbered placeholders ($1, $2, …). SQLite reads
// $N as a named parameter, which modernc.org/sqlite binds to the Nth argument, so one text
// serves both. Booleans are written true and false, which SQLite stores as 1 and 0.
//
// It imports job and store; only the drivers under store import it.
package sqlstore

import (
	"context"
	"time"

	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/store"
)

// Row is one row of a result: a *sql.Row or *sql.Rows, a pgx.Row or pgx.Rows.
type Row interface {
	Scan(dest ...any) error
}

// Rows is a result of any number of rows.
type Rows interface {
	Row
	Next() bool
	Err() error
	Close()
}

// Querier runs statements: in a transaction, or on the database itself. A query that finds
// no row reports an error that errors.Is takes for sql.ErrNoRows (pgx.ErrNoRows is one).
type Querier interface {
	QueryRow(ctx context.Context, query string, args ...any) Row
	Query(ctx context.Context, query string, args ...any) (Rows, error)
	// Exec runs a statement and returns how many rows it changed.
	Exec(ctx context.Context, query string, args ...any) (int64, error)
}

// WriteFunc is one write: it runs its statements in tx, with ctx, and reports through
// changed the jobs it changed in a way a watcher sees ("" for the queue).
type WriteFunc func(ctx context.Context, tx Querier, changed func(ids ...string)) error

// Driver is a database as the Core uses it. Its QueryRow and Query read outside any
// write; its Exec writes one statement alone, for changes no watcher waits for (workers,
// search claims).
type Driver interface {
	Querier
	// Write runs fn in a transaction and, once it committed, wakes the watchers of what fn
	// reported changed. A nil error means the write is committed.
	Write(ctx context.Context, fn WriteFunc) error
	// LockCreate makes the create of a job by owner, which runs in tx, wait for the creates
	// its checks depend on, and reports whether the service-wide limits (the queue cap and
	// retention) are in reach, so that this create must check and enforce them.
	LockCreate(ctx context.Context, tx Querier, owner string, l store.Limits) (serviceWide bool, err error)
	// InsertJob stores a new queued job in tx and returns it as stored.
	InsertJob(ctx context.Context, tx Querier, j NewJob) (*job.Job, error)
}

// NewJob is a job for Driver.InsertJob, its values as the database stores them.
type NewJob struct {
	ID, Owner, Kind, Name, Model, Protocol, RunModel string
	Params, Input                                    string // JSON
	Total                                            int
	CreatedAt                                        any // Dialect.Time
	IdemKey, RequestHash                             any // NULL without an idempotency key
	Searches                                         any // JSON; NULL when there are none
	Aligning                                         bool
}

// Dialect is what differs between databases: how values are stored, the column lists that
// read a job, and the statements whose SQL is a database's own. Statements name their
// arguments in the comments below and return what follows "→".
type Dialect struct {
	Name string // the database, which begins the driver's errors: "sqlite"

	Time   func(time.Time) any // a time as a column stores it
	TimeOf func(any) time.Time // a time column as scanned into an any; zero for NULL
	List   func([]string) any  // a list of names as Lease takes it

	// JobCols reads a whole job: SummaryColumns, then lease_expires_at, last_activity_at,
	// results, and the input and the searches as JSON.
	JobCols string
	// SummaryCols reads a summary: SummaryColumns, then whether the job succeeded and
	// holds results, answered without reading them.
	SummaryCols string
	// RowLock ends a SELECT inside a write that goes on to change the rows it read, so
	// that concurrent writes wait for them; "" where writes never run concurrently.
	RowLock string
	// UsedAttempts is the expression of a job's attempts that count against the attempt
	// limit: those handed back (HandBack, ReturnForAlignment) do not.
	UsedAttempts string

	PruneCreates      string // $1 owner, $2 cutoff: forgets creates at or before the cutoff
	CountQueued       string // → the number of queued jobs
	CountJobs         string // → the number of jobs
	EvictOne          string // deletes the next job retention evicts → its id
	Lease             string // $1 worker, $2 lease until, $3 now, $4 models, $5 loaded → JobCols
	RaiseMeasuredWall string // $1 job id, $2 residues: raises the measured wall of its run model
	CountHandBack     string // $1 seq: counts one attempt of the job handed back
	ClaimAlignment    string // $1 holder, $2 until, $3 stage, $4 now → JobCols
}

// NullTime is t as a column stores it, or NULL for the zero time: a time not set.
func (d *Dialect) NullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return d.Time(t)
}

// Core implements store.Store on a SQL database, through a Driver and its Dialect: every
// method but Watch, Close and CreateKey, whose uniqueness check depends on how the database
// runs concurrent writes. A driver embeds it, adds those, and may put methods of its own in
// front of the Core's (a cache of summaries).
type Core struct {
	db Driver
	d  *Dialect
	q  statements
}

// New returns the Core of a driver.
func New(db Driver, d Dialect) *Core {
	return &Core{db: db, d: &d, q: d.statements()}
}
