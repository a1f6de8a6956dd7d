package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Group commit. Every write of the store is a function run inside a transaction of the one
// writer connection. A single goroutine, the writer, takes the writes that callers have
// queued, runs them one after another inside one BEGIN IMMEDIATE ... COMMIT, each in a
// SAVEPOINT of its own so that one write's error undoes that write alone, commits them
// together with one fsync (synchronous=FULL), and only then answers each caller and wakes
// the watchers of what changed. Writes arriving while a commit waits on the disk form the
// next group, so the fsync per commit is shared by everyone who needed it, and throughput
// grows with the load instead of being one fsync per write.
//
// A write never sees its caller's context: interrupting a statement inside a shared
// transaction would roll back the other writes in it. The caller's context is checked once,
// before its write runs; a caller whose write ran gets its true outcome.

// maxGroup bounds the writes of one transaction, so that a queue of writes is answered in
// turns rather than all at the end.
const maxGroup = 128

// errClosed answers a write made after Close.
var errClosed = errors.New("sqlite: the store is closed")

// writeFunc is one write: it runs its statements in tx, with ctx, and reports the ids it
// changed ("" for the queue) through changed.
type writeFunc func(ctx context.Context, tx *sql.Tx, changed func(ids ...string)) error

type writeOp struct {
	ctx  context.Context
	fn   writeFunc
	ids  []string
	done chan writeResult // buffered: the writer never waits for the caller
}

type writeResult struct {
	err      error
	panicked any // the value fn panicked with; the caller panics with it again
}

// write runs fn in the next group and returns its outcome once the group committed, so a
// nil error means durable. A panic in fn is raised again here, in the caller.
func (s *Store) write(ctx context.Context, fn writeFunc) error {
	op := &writeOp{ctx: ctx, fn: fn, done: make(chan writeResult, 1)}
	select {
	case s.ops <- op:
	case <-s.closing:
		return errClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	res := <-op.done
	if res.panicked != nil {
		panic(res.panicked)
	}
	return res.err
}

// runWriter is the writer goroutine; it returns when the store closes. s.ops is unbuffered,
// so once it returned no write can be left queued.
func (s *Store) runWriter() {
	defer close(s.writerDone)
	group := make([]*writeOp, 0, maxGroup)
	for {
		select {
		case op := <-s.ops:
			group = append(group[:0], op)
		case <-s.closing:
			return
		}
	more:
		for len(group) < maxGroup {
			select {
			case op := <-s.ops:
				group = append(group, op)
			default:
				break more
			}
		}
		s.commitGroup(group)
		clear(group) // let the finished writes go
	}
}

// commitGroup runs the group in one transaction and answers every write of it.
func (s *Store) commitGroup(group []*writeOp) {
	ctx := context.Background()
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		answerAll(group, fmt.Errorf("sqlite: begin: %w", err))
		return
	}
	done := group[:0] // the writes that ran without error, reusing group's array
	for i, op := range group {
		if err := op.ctx.Err(); err != nil {
			op.done <- writeResult{err: err}
			continue
		}
		ok, err := runInSavepoint(ctx, tx, op)
		if err != nil {
			// The transaction is lost: SQLite rolls back a whole transaction on some
			// errors (a full disk, an I/O error), and then no savepoint is left.
			_ = tx.Rollback()
			err = fmt.Errorf("sqlite: a write in the same transaction failed: %w", err)
			answerAll(done, err)
			answerAll(group[i+1:], err)
			return
		}
		if ok {
			done = append(done, op)
		}
	}
	if err := tx.Commit(); err != nil {
		answerAll(done, fmt.Errorf("sqlite: commit: %w", err))
		return
	}
	for _, op := range done {
		s.summaries.forget(op.ids)
		for _, id := range op.ids {
			s.hub.Publish(id)
		}
		op.done <- writeResult{}
	}
}

// runInSavepoint runs op in a savepoint of tx. A write that failed or panicked is rolled
// back to the savepoint and answered at once (nothing of it will commit); ok reports a write
// that succeeded and waits for the commit. err is an error of the savepoint itself, after
// which tx is unusable.
func runInSavepoint(ctx context.Context, tx *sql.Tx, op *writeOp) (ok bool, err error) {
	if _, err := tx.ExecContext(ctx, `SAVEPOINT write`); err != nil {
		op.done <- writeResult{err: err}
		return false, err
	}
	res := op.run(ctx, tx)
	if res.err == nil && res.panicked == nil {
		_, err := tx.ExecContext(ctx, `RELEASE write`)
		if err != nil {
			op.done <- writeResult{err: err}
		}
		return err == nil, err
	}
	op.ids = nil
	op.done <- res
	if _, err := tx.ExecContext(ctx, `ROLLBACK TO write`); err != nil {
		return false, err
	}
	_, err = tx.ExecContext(ctx, `RELEASE write`)
	return false, err
}

func (op *writeOp) run(ctx context.Context, tx *sql.Tx) (res writeResult) {
	defer func() {
		if p := recover(); p != nil {
			res.panicked = p
		}
	}()
	res.err = op.fn(ctx, tx, func(ids ...string) { op.ids = append(op.ids, ids...) })
	return res
}

func answerAll(ops []*writeOp, err error) {
	for _, op := range ops {
		op.done <- writeResult{err: err}
	}
}
