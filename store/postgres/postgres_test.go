package postgres

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/store"
	"github.com/chaperone-bio/chaperone/store/postgres/pgtest"
	"github.com/chaperone-bio/chaperone/store/storetest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// openURL opens a store on url and closes it when tb ends.
func openURL(tb testing.TB, url string) *Store {
	tb.Helper()
	s, err := Open(context.Background(), url+"&pool_max_conns=8")
	if err != nil {
		tb.Fatal(err)
	}
	storetest.CloseAtEnd(tb, s)
	return s
}

func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) store.Store { return openURL(t, pgtest.Database(t)) })
}

// replicas opens n stores on one new database, as n serve replicas would.
func replicas(t *testing.T, n int) []*Store {
	url := pgtest.Database(t)
	out := make([]*Store, n)
	for i := range out {
		out[i] = openURL(t, url)
	}
	return out
}

func newJob(owner job.Owner) *job.Job {
	return &job.Job{ID: job.NewID(), Owner: owner, Kind: job.PredictKind, Model: "boltz2", RunModel: "boltz2",
		Input: job.Input{Sequence: "MKV"}, CreatedAt: time.Now()}
}

// fires waits for a notification on ch.
func fires(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case _, ok := <-ch:
		if !ok {
			t.Fatalf("%s: the watch ended instead of firing", what)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: no notification within 5 s", what)
	}
}

func TestWatchAcrossReplicas(t *testing.T) {
	t.Parallel()
	rs := replicas(t, 2)
	a, b := rs[0], rs[1]
	alice := job.Owner{Kind: job.OwnerKey, ID: "alice"}
	queue := b.Watch(t.Context(), "")
	res, err := a.CreateJob(t.Context(), newJob(alice), store.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fires(t, queue, "a create on another replica, on the queue watch")

	ch := b.Watch(t.Context(), res.Job.ID)
	if _, err := a.CancelJob(t.Context(), res.Job.ID, alice, time.Now()); err != nil {
		t.Fatal(err)
	}
	fires(t, ch, "a cancel on another replica")
	if sum, err := b.GetJobSummary(t.Context(), res.Job.ID); err != nil || sum.Status != job.Canceled {
		t.Errorf("the other replica reads %+v, %v after the notification; want it canceled", sum, err)
	}
}

// TestWatchEndsWhenListenLost: a lost LISTEN connection closes every watch channel (changes
// may have gone unseen), and watches made after the store listens again fire again.
func TestWatchEndsWhenListenLost(t *testing.T) {
	t.Parallel()
	rs := replicas(t, 2)
	a, b := rs[0], rs[1]
	ch := b.Watch(t.Context(), "")
	if _, err := a.pool.Exec(t.Context(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND query = 'LISTEN `+channel+`' AND pid <> pg_backend_pid()`); err != nil {
		t.Fatal(err)
	}
	select {
	case _, ok := <-ch:
		if ok {
			t.Fatal("the watch fired instead of ending")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the watch did not end within 5 s of losing its connection")
	}

	// Watches taken while the store reconnects end once it listens again; the one taken
	// after that must fire on the next change.
	deadline := time.Now().Add(10 * time.Second)
	for {
		ch = b.Watch(t.Context(), "")
		if _, err := a.CreateJob(t.Context(), newJob(job.Owner{Kind: job.OwnerKey, ID: "bob"}), store.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, ok := <-ch; ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no watch fired within 10 s of losing the connection")
		}
	}
}

// TestCreatesAcrossReplicas races creates through several replicas: quotas and
// idempotency hold for the database, not for each process.
func TestCreatesAcrossReplicas(t *testing.T) {
	t.Parallel()
	rs := replicas(t, 4)
	const perReplica = 8
	const limit = 5
	owner := job.Owner{Kind: job.OwnerKey, ID: "carol"}
	var created, replays atomic.Int64
	var wg sync.WaitGroup
	for _, r := range rs {
		for i := range perReplica {
			wg.Go(func() {
				opts := store.CreateOptions{Limits: store.Limits{ActivePerOwner: limit, QueuedServiceWide: 100}}
				if i%2 == 0 {
					opts.IdempotencyKey, opts.RequestHash = fmt.Sprint("k", i), "h"
				}
				res, err := r.CreateJob(t.Context(), newJob(owner), opts)
				var le *job.LimitError
				switch {
				case errors.As(err, &le):
				case err != nil:
					t.Error(err)
				case res.Created:
					created.Add(1)
				default:
					replays.Add(1)
				}
			})
		}
	}
	wg.Wait()
	if created.Load() != limit {
		t.Errorf("%d creates through %d replicas made %d jobs, want the limit %d", len(rs)*perReplica, len(rs), created.Load(), limit)
	}
	page, err := rs[0].ListJobs(t.Context(), owner, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Jobs) != limit {
		t.Errorf("the owner has %d jobs, want %d", len(page.Jobs), limit)
	}
}
