package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/store"
)

// TestGroupCommitIsolatesWrites queues writes that succeed, fail after writing, and panic
// after writing, while the writer is held, so that they share transactions: only the
// successful ones may be in the database, and each caller learns its own outcome.
func TestGroupCommitIsolatesWrites(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	ctx := t.Context()
	release := make(chan struct{})
	held := make(chan struct{})
	go func() {
		_ = s.write(ctx, func(context.Context, *sql.Tx, func(...string)) error {
			close(held)
			<-release
			return nil
		})
	}()
	<-held

	const n = 30
	outcomes := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			defer func() {
				if p := recover(); p != nil {
					outcomes[i] = fmt.Sprint("panic: ", p)
				}
			}()
			id := fmt.Sprint("w", i)
			err := s.write(ctx, func(ctx context.Context, tx *sql.Tx, _ func(...string)) error {
				if _, err := tx.ExecContext(ctx, `INSERT INTO workers (id, models, missing, slots, seen_at)
					VALUES (?, '[]', '{}', 1, 0)`, id); err != nil {
					return err
				}
				switch i % 3 {
				case 1:
					return errors.New("refused")
				case 2:
					panic("a bug")
				}
				return nil
			})
			if err != nil {
				outcomes[i] = err.Error()
			}
		})
	}
	close(release)
	wg.Wait()

	live, err := s.LiveWorkers(ctx, time.UnixMilli(0))
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]bool{}
	for _, w := range live {
		stored[w.ID] = true
	}
	for i, got := range outcomes {
		id := fmt.Sprint("w", i)
		want := []string{"", "refused", "panic: a bug"}[i%3]
		if got != want {
			t.Errorf("write %d answered %q, want %q", i, got, want)
		}
		if stored[id] != (i%3 == 0) {
			t.Errorf("write %d (%q) stored = %v", i, want, stored[id])
		}
	}
}

// TestCanceledWritesDoNotWedgeTheWriter: callers that give up, before or while their
// write waits, leave the writer free, and a write whose caller gave up before it ran does
// not happen.
func TestCanceledWritesDoNotWedgeTheWriter(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	release := make(chan struct{})
	held := make(chan struct{})
	go func() {
		_ = s.write(t.Context(), func(context.Context, *sql.Tx, func(...string)) error {
			close(held)
			<-release
			return nil
		})
	}()
	<-held
	ctx, cancel := context.WithCancel(t.Context())
	errs := make(chan error, 1)
	go func() {
		errs <- s.PutWorker(ctx, store.Worker{ID: "gave-up", SeenAt: time.UnixMilli(1)})
	}()
	cancel()
	close(release)
	if err := <-errs; !errors.Is(err, context.Canceled) {
		t.Errorf("a write canceled while it waited: error = %v, want context.Canceled", err)
	}
	done, stop := context.WithTimeout(t.Context(), 10*time.Second)
	defer stop()
	if err := s.PutWorker(done, store.Worker{ID: "next", SeenAt: time.UnixMilli(1)}); err != nil {
		t.Fatalf("the write after a canceled one: %v", err)
	}
	live, err := s.LiveWorkers(t.Context(), time.UnixMilli(0))
	if err != nil || len(live) != 1 || live[0].ID != "next" {
		t.Errorf("LiveWorkers = %+v, %v; want only the write that was not canceled", live, err)
	}
}

// TestCommitsAreDurable: the writer commits with synchronous=FULL, so that an answered
// write survives a power loss.
func TestCommitsAreDurable(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	var level int
	if err := s.w.QueryRowContext(t.Context(), `PRAGMA synchronous`).Scan(&level); err != nil {
		t.Fatal(err)
	}
	if level != 2 {
		t.Errorf("PRAGMA synchronous = %d on the writer, want 2 (FULL)", level)
	}
}

// TestWritesAfterCloseAreRefused: a closed store answers, rather than blocking.
func TestWritesAfterCloseAreRefused(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.RemoveWorker(t.Context(), "w"); !errors.Is(err, errClosed) {
		t.Errorf("a write after Close: error = %v, want errClosed", err)
	}
}
