package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/store"
)

// These tests run many writers at once, as several server replicas on one database would:
// whatever the store serialises or not, the outcome must be as if the writes came one at a
// time.

// writers is how many goroutines race in each test.
const writers = 24

// race runs fn(i) for i in [0, n) at once, released together, and waits for all.
func race(n int, fn func(i int)) {
	var ready, wg sync.WaitGroup
	start := make(chan struct{})
	ready.Add(n)
	for i := range n {
		wg.Go(func() {
			ready.Done()
			<-start
			fn(i)
		})
	}
	ready.Wait()
	close(start)
	wg.Wait()
}

// createRace creates one job per writer with opts and returns how many were created; every
// other create must have been refused with a *job.LimitError.
func createRace(t *testing.T, s store.Store, jobs func(i int) *job.Job, opts store.CreateOptions) (created int) {
	t.Helper()
	errs := make([]error, writers)
	results := make([]store.CreateResult, writers)
	race(writers, func(i int) { results[i], errs[i] = s.CreateJob(t.Context(), jobs(i), opts) })
	for i, err := range errs {
		var le *job.LimitError
		switch {
		case err == nil && results[i].Created:
			created++
		case errors.As(err, &le):
		default:
			t.Errorf("create %d: %+v, %v; want created or a LimitError", i, results[i], err)
		}
	}
	return created
}

func countStatus(t *testing.T, s store.Store, owner job.Owner, st job.Status) int {
	t.Helper()
	page, err := s.ListJobs(t.Context(), owner, "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, j := range page.Jobs {
		if st == "" || j.Status == st {
			n++
		}
	}
	return n
}

func testCreateQuotasConcurrent(t *testing.T, open func(*testing.T) store.Store) {
	t.Run("active per owner", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		create(t, s, newJob(alice)) // one active already: the edge is one job away
		const limit = 5
		got := createRace(t, s, func(int) *job.Job { return newJob(alice) },
			store.CreateOptions{Limits: store.Limits{ActivePerOwner: limit}})
		if got != limit-1 {
			t.Errorf("%d concurrent creates at %d of %d active jobs created %d, want %d", writers, 1, limit, got, limit-1)
		}
		if n := countStatus(t, s, alice, job.Queued); n != limit {
			t.Errorf("the owner has %d active jobs, want the limit %d", n, limit)
		}
	})
	t.Run("creates per minute", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		const limit = 7
		got := createRace(t, s, func(i int) *job.Job { return newJobAt(bob, t0.Add(time.Duration(i)*time.Millisecond)) },
			store.CreateOptions{Limits: store.Limits{CreatesPerMinute: limit}})
		if got != limit {
			t.Errorf("%d concurrent creates within a minute created %d, want the limit %d", writers, got, limit)
		}
	})
	t.Run("queued service-wide", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		const limit = 6
		owners := func(i int) *job.Job {
			return newJob(job.Owner{Kind: job.OwnerKey, ID: fmt.Sprint("owner-", i)})
		}
		got := createRace(t, s, owners, store.CreateOptions{Limits: store.Limits{QueuedServiceWide: limit}})
		if got != limit {
			t.Errorf("%d concurrent creates by %d owners queued %d, want the limit %d", writers, writers, got, limit)
		}
		if depth, err := s.QueueDepth(t.Context()); err != nil || depth != limit {
			t.Errorf("QueueDepth = %d, %v; want %d", depth, err, limit)
		}
	})
	t.Run("every quota at once", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		limits := store.Limits{ActivePerOwner: 4, CreatesPerMinute: 3, QueuedServiceWide: 10}
		got := createRace(t, s, func(int) *job.Job { return newJob(carol) }, store.CreateOptions{Limits: limits})
		if got != 3 {
			t.Errorf("created %d, want 3 (the tightest quota)", got)
		}
	})
}

func testRetentionConcurrent(t *testing.T, open func(*testing.T) store.Store) {
	s := open(t)
	const retained = 10
	for range retained {
		finish(t, s, create(t, s, newJob(bob)), job.Succeeded, t0)
	}
	results := make([]store.CreateResult, writers)
	errs := make([]error, writers)
	race(writers, func(i int) {
		results[i], errs[i] = s.CreateJob(t.Context(), newJob(alice), store.CreateOptions{Limits: store.Limits{Retained: retained}})
	})
	evicted := map[string]int{}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("create %d: %v", i, err)
		}
		for _, id := range results[i].Evicted {
			evicted[id]++
		}
	}
	// Ten finished jobs to give: each goes once, and no new, active job goes.
	if len(evicted) != retained {
		t.Errorf("%d jobs evicted, want the %d finished ones", len(evicted), retained)
	}
	for id, n := range evicted {
		if n != 1 {
			t.Errorf("job %s evicted by %d creates, want 1", id, n)
		}
	}
	if n := countStatus(t, s, bob, ""); n != 0 {
		t.Errorf("%d finished jobs left, want none", n)
	}
	if n := countStatus(t, s, alice, job.Queued); n != writers {
		t.Errorf("%d new jobs kept, want all %d", n, writers)
	}
}

func testIdempotencyRace(t *testing.T, open func(*testing.T) store.Store) {
	s := open(t)
	// Many keys, each raced by several writers, with a quota that a double job would break.
	const keys = 6
	const perKey = writers / keys
	results := make([]store.CreateResult, writers)
	errs := make([]error, writers)
	race(writers, func(i int) {
		opts := store.CreateOptions{IdempotencyKey: fmt.Sprint("key-", i%keys), RequestHash: "h",
			Limits: store.Limits{ActivePerOwner: keys}}
		results[i], errs[i] = s.CreateJob(t.Context(), newJob(alice), opts)
	})
	byKey := map[string]string{}
	created := 0
	for i, err := range errs {
		if err != nil {
			t.Fatalf("create %d: %v", i, err)
		}
		if results[i].Created {
			created++
		}
		key := fmt.Sprint("key-", i%keys)
		if id, ok := byKey[key]; ok && id != results[i].Job.ID {
			t.Errorf("%s answered with jobs %s and %s", key, id, results[i].Job.ID)
		}
		byKey[key] = results[i].Job.ID
	}
	if created != keys {
		t.Errorf("%d creates made a job, want one per key: %d (%d writers per key)", created, keys, perKey)
	}
	if n := countStatus(t, s, alice, ""); n != keys {
		t.Errorf("the owner has %d jobs, want %d", n, keys)
	}
}

// testRecoverConcurrent races reapers against each other and against a worker that leases
// the job again as soon as it is back in the queue: each lost attempt is recovered exactly
// once, and the new lease, which has not expired, never is.
func testRecoverConcurrent(t *testing.T, open func(*testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	const jobs = 8
	var lost []*job.Job
	for range jobs {
		lost = append(lost, lease(t, s, create(t, s, newJob(alice)), "w-lost", t0)) // ends t0+1m
	}
	now := t0.Add(2 * leaseFor)
	recovered := make([][]store.Recovered, writers)
	errs := make([]error, writers)
	race(writers, func(i int) {
		if i%3 == 0 { // a worker leasing what comes back
			for _, j := range lost {
				l, err := s.LeaseJob(ctx, store.LeaseRequest{WorkerID: "w-new", Models: []string{j.RunModel},
					Now: now, LeaseUntil: now.Add(time.Hour)})
				if err != nil {
					errs[i] = err
				}
				if l != nil && l.Attempt != 2 {
					errs[i] = fmt.Errorf("leased %s at attempt %d, want 2", l.ID, l.Attempt)
				}
			}
			return
		}
		if i%3 == 1 {
			recovered[i], errs[i] = s.ReleaseWorker(ctx, "w-lost", now, 3)
			return
		}
		recovered[i], errs[i] = s.RecoverExpired(ctx, now, 3)
	})
	seen := map[string]int{}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("writer %d: %v", i, err)
		}
		for _, r := range recovered[i] {
			if r.Attempt != 1 || r.Failed {
				t.Errorf("recovered %+v, want attempt 1 requeued: attempt 2's lease is live", r)
			}
			seen[r.ID]++
		}
	}
	for _, j := range lost {
		if seen[j.ID] != 1 {
			t.Errorf("job %s recovered %d times, want once", j.ID, seen[j.ID])
		}
	}
	// Whatever the worker did not lease yet is queued; nothing was lost or run twice.
	for _, j := range lost {
		got := get(t, s, j.ID)
		switch {
		case got.Status == job.Running && got.Attempt == 2 && got.WorkerID == "w-new":
		case got.Status == job.Queued && got.Attempt == 1:
		default:
			t.Errorf("job %s is %s at attempt %d by %q after the race", j.ID, got.Status, got.Attempt, got.WorkerID)
		}
	}
}
