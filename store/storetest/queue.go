package storetest

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/store"
)

func testLease(t *testing.T, open func(*testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	req := func(models ...string) store.LeaseRequest {
		return store.LeaseRequest{WorkerID: "gpu-0", Models: models, Now: t0, LeaseUntil: t0.Add(leaseFor)}
	}
	none := func(what string, r store.LeaseRequest) {
		t.Helper()
		got, err := s.LeaseJob(ctx, r)
		if err != nil || got != nil {
			t.Errorf("LeaseJob (%s) = %v, %v; want nothing", what, got, err)
		}
	}

	none("empty queue", req("boltz2"))
	j := create(t, s, newJobOf(alice, "boltz2"))
	none("other models only", req("esmfold2", "rfd3"))
	none("no models", req())

	got, err := s.LeaseJob(ctx, req("esmfold2", "boltz2"))
	if err != nil {
		t.Fatal(err)
	}
	want := *j
	want.Status, want.Attempt, want.WorkerID, want.Stage = job.Running, 1, "gpu-0", job.StageStarting
	want.StartedAt, want.LastActivityAt, want.LeaseExpiresAt = t0, t0, t0.Add(leaseFor)
	checkJob(t, "LeaseJob", got, &want)
	checkJob(t, "GetJob", get(t, s, j.ID), &want)
	none("a running job", req("boltz2"))
}

func testLeaseOrder(t *testing.T, open func(*testing.T) store.Store) {
	models := []string{"m1", "m2"}
	tests := []struct {
		name string
		// setup fills the queue and returns the worker's loaded models and the job it must get.
		setup func(t *testing.T, s store.Store) (loaded []string, want *job.Job)
	}{
		{"the owner with the fewest running jobs first", func(t *testing.T, s store.Store) ([]string, *job.Job) {
			lease(t, s, create(t, s, newJob(alice)), "w0", t0)
			create(t, s, newJobOf(alice, "m1"))
			return nil, create(t, s, newJobOf(bob, "m1"))
		}},
		{"then a model the worker has loaded", func(t *testing.T, s store.Store) ([]string, *job.Job) {
			create(t, s, newJobOf(alice, "m1"))
			return []string{"m2"}, create(t, s, newJobOf(alice, "m2"))
		}},
		{"the owner before the loaded model", func(t *testing.T, s store.Store) ([]string, *job.Job) {
			lease(t, s, create(t, s, newJob(alice)), "w0", t0)
			create(t, s, newJobOf(alice, "m2"))
			return []string{"m2"}, create(t, s, newJobOf(bob, "m1"))
		}},
		{"then the oldest", func(t *testing.T, s store.Store) ([]string, *job.Job) {
			first := create(t, s, newJobOf(alice, "m1")) // same millisecond as the rest
			create(t, s, newJobOf(bob, "m2"))
			create(t, s, newJobOf(alice, "m1"))
			return nil, first
		}},
		{"a job no listed model runs is skipped", func(t *testing.T, s store.Store) ([]string, *job.Job) {
			create(t, s, newJobOf(alice, "m3"))
			return nil, create(t, s, newJobOf(alice, "m2"))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := open(t)
			loaded, want := tt.setup(t, s)
			got, err := s.LeaseJob(t.Context(), store.LeaseRequest{WorkerID: "w1", Models: models,
				Loaded: loaded, Now: t0, LeaseUntil: t0.Add(leaseFor)})
			if err != nil {
				t.Fatal(err)
			}
			if got == nil || got.ID != want.ID {
				t.Errorf("LeaseJob = %v, want job %s", got, want.ID)
			}
		})
	}
}

func testLeaseConcurrent(t *testing.T, open func(*testing.T) store.Store) {
	s := open(t)
	const jobs, workers = 30, 6
	for i := range jobs {
		create(t, s, newJobOf([]job.Owner{alice, bob, carol}[i%3], "m"))
	}
	var (
		mu     sync.Mutex
		leased = map[string]string{} // job → worker
		wg     sync.WaitGroup
	)
	for w := range workers {
		worker := fmt.Sprint("w", w)
		wg.Go(func() {
			for {
				j, err := s.LeaseJob(t.Context(), store.LeaseRequest{WorkerID: worker, Models: []string{"m"},
					Now: t0, LeaseUntil: t0.Add(leaseFor)})
				if err != nil {
					t.Errorf("LeaseJob: %v", err)
					return
				}
				if j == nil {
					return
				}
				mu.Lock()
				if other, dup := leased[j.ID]; dup {
					t.Errorf("job %s leased to %s and %s", j.ID, other, worker)
				}
				leased[j.ID] = worker
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(leased) != jobs {
		t.Errorf("%d jobs leased, want %d", len(leased), jobs)
	}
	for id, worker := range leased {
		if j := get(t, s, id); j.WorkerID != worker || j.Attempt != 1 || j.Status != job.Running {
			t.Errorf("job %s: worker %q attempt %d status %s; want %s, 1, running", id, j.WorkerID, j.Attempt, j.Status, worker)
		}
	}
}

func testHeartbeat(t *testing.T, open func(*testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	hb := func(j *job.Job, attempt int, now time.Time, activity bool) error {
		return s.Heartbeat(ctx, store.Heartbeat{ID: j.ID, Attempt: attempt, Activity: activity,
			Now: now, LeaseUntil: now.Add(leaseFor)})
	}

	t.Run("extends the lease; activity moves the stall clock", func(t *testing.T) {
		t.Parallel()
		j := lease(t, s, create(t, s, newJob(alice)), "w", t0)
		if err := hb(j, 1, t0.Add(30*time.Second), false); err != nil {
			t.Fatal(err)
		}
		want := *j
		want.LeaseExpiresAt = t0.Add(30*time.Second + leaseFor)
		checkJob(t, "quiet heartbeat", get(t, s, j.ID), &want)
		if err := hb(j, 1, t0.Add(40*time.Second), true); err != nil {
			t.Fatal(err)
		}
		want.LeaseExpiresAt = t0.Add(40*time.Second + leaseFor)
		want.LastActivityAt = t0.Add(40 * time.Second)
		checkJob(t, "active heartbeat", get(t, s, j.ID), &want)
	})

	lost := []struct {
		name    string
		setup   func(t *testing.T) *job.Job
		attempt int
	}{
		{"another attempt", func(t *testing.T) *job.Job {
			return lease(t, s, create(t, s, newJob(alice)), "w", t0)
		}, 2},
		{"never leased", func(t *testing.T) *job.Job { return create(t, s, newJob(alice)) }, 1},
		{"completed", func(t *testing.T) *job.Job {
			return finish(t, s, create(t, s, newJob(alice)), job.Succeeded, t0)
		}, 1},
		{"canceled", func(t *testing.T) *job.Job {
			j := lease(t, s, create(t, s, newJob(alice)), "w", t0)
			return finish(t, s, j, job.Canceled, t0)
		}, 1},
		{"unknown", func(t *testing.T) *job.Job { return newJob(alice) }, 1},
	}
	for _, tt := range lost {
		t.Run("lease lost: "+tt.name, func(t *testing.T) {
			t.Parallel()
			j := tt.setup(t)
			before, _ := s.GetJob(ctx, j.ID)
			wantErr(t, "Heartbeat", hb(j, tt.attempt, t0.Add(time.Second), true), job.ErrLeaseLost)
			if before != nil {
				checkJob(t, "after a lost heartbeat", get(t, s, j.ID), before)
			}
		})
	}
}

func testComplete(t *testing.T, open func(*testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	end := t0.Add(10 * time.Minute)
	// running returns a job leased at t0 that reported stage and progress.
	running := func(t *testing.T, p job.Progress) *job.Job {
		j := lease(t, s, create(t, s, newJob(alice)), "w", t0)
		err := s.Heartbeat(ctx, store.Heartbeat{ID: j.ID, Attempt: 1, Progress: &p, Activity: true,
			Now: t0, LeaseUntil: t0.Add(leaseFor)})
		if err != nil {
			t.Fatal(err)
		}
		return get(t, s, j.ID)
	}

	t.Run("success", func(t *testing.T) {
		t.Parallel()
		j := running(t, job.Progress{Stage: job.StageInference, Done: 3, Total: 4})
		if err := s.CompleteJob(ctx, j.ID, 1, store.Outcome{Status: job.Succeeded, Results: sampleResults(), Now: end}); err != nil {
			t.Fatal(err)
		}
		want := *j
		want.Status, want.FinishedAt, want.Results, want.Progress = job.Succeeded, end, sampleResults(), ptr(1.0)
		checkJob(t, "succeeded job", get(t, s, j.ID), &want)
	})
	t.Run("failure shows where it failed", func(t *testing.T) {
		t.Parallel()
		j := running(t, job.Progress{Stage: job.StageMSA, Done: 1, Total: 3})
		out := store.Outcome{Status: job.Failed, Error: "boltz: CUDA out of memory", Now: end}
		if err := s.CompleteJob(ctx, j.ID, 1, out); err != nil {
			t.Fatal(err)
		}
		want := *j
		want.Status, want.FinishedAt, want.Error = job.Failed, end, out.Error
		checkJob(t, "failed job", get(t, s, j.ID), &want)
	})
	t.Run("a second completion changes nothing", func(t *testing.T) {
		t.Parallel()
		j := running(t, job.Progress{})
		if err := s.CompleteJob(ctx, j.ID, 1, store.Outcome{Status: job.Succeeded, Results: sampleResults(), Now: end}); err != nil {
			t.Fatal(err)
		}
		done := get(t, s, j.ID)
		err := s.CompleteJob(ctx, j.ID, 1, store.Outcome{Status: job.Failed, Error: "late", Now: end.Add(time.Minute)})
		wantErr(t, "second CompleteJob", err, job.ErrLeaseLost)
		checkJob(t, "after a second completion", get(t, s, j.ID), done)
	})
	t.Run("a stale attempt changes nothing", func(t *testing.T) {
		t.Parallel()
		j := create(t, s, newJob(alice))
		lease(t, s, j, "stale-worker", t0)
		if _, err := s.ReleaseWorker(ctx, "stale-worker", t0.Add(time.Minute), 3); err != nil {
			t.Fatal(err)
		}
		second := lease(t, s, j, "fresh-worker", t0.Add(2*time.Minute))
		if second.Attempt != 2 {
			t.Fatalf("second lease has attempt %d, want 2", second.Attempt)
		}
		err := s.CompleteJob(ctx, j.ID, 1, store.Outcome{Status: job.Succeeded, Results: sampleResults(), Now: end})
		wantErr(t, "CompleteJob of attempt 1", err, job.ErrLeaseLost)
		checkJob(t, "after a stale completion", get(t, s, j.ID), second)
		if err := s.CompleteJob(ctx, j.ID, 2, store.Outcome{Status: job.Succeeded, Now: end}); err != nil {
			t.Errorf("CompleteJob of attempt 2: %v", err)
		}
	})
	t.Run("only as succeeded or failed", func(t *testing.T) {
		t.Parallel()
		j := running(t, job.Progress{})
		for _, st := range []job.Status{job.Canceled, job.Queued, job.Running, ""} {
			if err := s.CompleteJob(ctx, j.ID, 1, store.Outcome{Status: st, Now: end}); err == nil {
				t.Errorf("CompleteJob as %q succeeded", st)
			}
		}
		checkJob(t, "after refused completions", get(t, s, j.ID), j)
	})
}

// requeued is how a job looks back in the queue: as before its first lease, but for the
// attempts it used.
func requeued(j *job.Job) *job.Job {
	w := *j
	w.Status, w.Stage, w.Progress, w.Done, w.Total, w.WorkerID = job.Queued, "", nil, 0, 0, ""
	w.LeaseExpiresAt, w.StartedAt, w.LastActivityAt = time.Time{}, time.Time{}, time.Time{}
	return &w
}

func testRecoverExpired(t *testing.T, open func(*testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	recoverAt := func(now time.Time, want ...store.Recovered) {
		t.Helper()
		got, err := s.RecoverExpired(ctx, now, 2)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("RecoverExpired(%v) = %v, want %v", now.Sub(t0), got, want)
		}
	}
	j := lease(t, s, create(t, s, newJob(alice)), "w1", t0) // lease ends at t0+1m
	p := job.Progress{Stage: job.StageInference, Done: 1, Total: 2}
	if err := s.Heartbeat(ctx, store.Heartbeat{ID: j.ID, Attempt: 1, Progress: &p, Activity: true,
		Now: t0, LeaseUntil: t0.Add(leaseFor)}); err != nil {
		t.Fatal(err)
	}
	j = get(t, s, j.ID)
	other := lease(t, s, create(t, s, newJob(bob)), "w2", t0.Add(9*time.Minute)) // ends at t0+10m

	recoverAt(t0.Add(leaseFor)) // a lease that ends now has not expired yet
	recoverAt(t0.Add(2*time.Minute), store.Recovered{ID: j.ID, Attempt: 1})
	checkJob(t, "after the first lost lease", get(t, s, j.ID), requeued(j))
	checkJob(t, "a job with a live lease", get(t, s, other.ID), other)
	recoverAt(t0.Add(2 * time.Minute))

	second := lease(t, s, j, "w3", t0.Add(3*time.Minute))
	if second.Attempt != 2 {
		t.Fatalf("second lease has attempt %d, want 2", second.Attempt)
	}
	recoverAt(t0.Add(5*time.Minute), store.Recovered{ID: j.ID, Attempt: 2, Failed: true})
	want := *second
	want.Status, want.FinishedAt, want.Error = job.Failed, t0.Add(5*time.Minute), store.WorkerLostError(2)
	checkJob(t, "after the second lost lease", get(t, s, j.ID), &want)
	hb := store.Heartbeat{ID: j.ID, Attempt: 2, Now: t0.Add(6 * time.Minute), LeaseUntil: t0.Add(7 * time.Minute)}
	wantErr(t, "Heartbeat of the lost worker", s.Heartbeat(ctx, hb), job.ErrLeaseLost)
}

func testReleaseWorker(t *testing.T, open func(*testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	at := t0 // leases taken now are still live at the release: it ignores lease times
	release := func(worker string, want ...store.Recovered) {
		t.Helper()
		got, err := s.ReleaseWorker(ctx, worker, t0, 2)
		if err != nil {
			t.Fatal(err)
		}
		byID := func(a, b store.Recovered) int { return strings.Compare(a.ID, b.ID) }
		slices.SortFunc(got, byID)
		slices.SortFunc(want, byID)
		if !slices.Equal(got, want) {
			t.Fatalf("ReleaseWorker(%s) = %v, want %v", worker, got, want)
		}
	}

	j1 := lease(t, s, create(t, s, newJob(alice)), "w1", at)
	j2 := create(t, s, newJob(bob))
	lease(t, s, j2, "w0", at)
	release("w0", store.Recovered{ID: j2.ID, Attempt: 1})
	j2 = lease(t, s, j2, "w1", at) // attempt 2
	j3 := lease(t, s, create(t, s, newJob(alice)), "w2", at)

	release("w1", store.Recovered{ID: j1.ID, Attempt: 1}, store.Recovered{ID: j2.ID, Attempt: 2, Failed: true})
	checkJob(t, "released on attempt 1", get(t, s, j1.ID), requeued(j1))
	want := *j2
	want.Status, want.FinishedAt, want.Error = job.Failed, t0, store.WorkerLostError(2)
	checkJob(t, "released on attempt 2", get(t, s, j2.ID), &want)
	checkJob(t, "another worker's job", get(t, s, j3.ID), j3)
	release("w1")
	release("no-such-worker")
}

// testHandBack: attempts a worker hands back at a clean shutdown do not count against the
// attempt limit, and their numbers are never handed out again.
func testHandBack(t *testing.T, open func(*testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	const maxAttempts = 2
	j := lease(t, s, create(t, s, newJob(alice)), "w1", t0)
	other := lease(t, s, create(t, s, newJob(bob)), "w2", t0)

	got, err := s.HandBack(ctx, "w1", t0)
	if err != nil {
		t.Fatal(err)
	}
	if want := []store.Recovered{{ID: j.ID, Attempt: 1}}; !slices.Equal(got, want) {
		t.Fatalf("HandBack = %v, want %v", got, want)
	}
	checkJob(t, "handed back", get(t, s, j.ID), requeued(j))
	checkJob(t, "another worker's job", get(t, s, other.ID), other)

	// Two more attempts are lost; only the second of them uses the last one left.
	for _, step := range []struct {
		attempt int
		failed  bool
	}{{2, false}, {3, true}} {
		l := lease(t, s, j, "w3", t0)
		if l.Attempt != step.attempt {
			t.Fatalf("lease after a hand-back: attempt %d, want %d", l.Attempt, step.attempt)
		}
		got, err := s.ReleaseWorker(ctx, "w3", t0, maxAttempts)
		if err != nil {
			t.Fatal(err)
		}
		if want := []store.Recovered{{ID: j.ID, Attempt: step.attempt, Failed: step.failed}}; !slices.Equal(got, want) {
			t.Fatalf("ReleaseWorker after one hand-back, attempt %d = %v, want %v", step.attempt, got, want)
		}
	}
	if got := get(t, s, j.ID); got.Status != job.Failed || got.Error != store.WorkerLostError(3) {
		t.Errorf("after two lost attempts and a hand-back the job is %s (%q), want failed", got.Status, got.Error)
	}
	if got, err := s.HandBack(ctx, "no-such-worker", t0); err != nil || len(got) != 0 {
		t.Errorf("HandBack of an unknown worker = %v, %v; want nothing", got, err)
	}
}

func testQueueDepth(t *testing.T, open func(*testing.T) store.Store) {
	s := open(t)
	depth := func(want int) {
		t.Helper()
		if got, err := s.QueueDepth(t.Context()); err != nil || got != want {
			t.Errorf("QueueDepth = %d, %v; want %d", got, err, want)
		}
	}
	depth(0)
	a := create(t, s, newJob(alice))
	b := create(t, s, newJob(bob))
	create(t, s, newJob(carol))
	depth(3)
	lease(t, s, a, "w", t0)
	depth(2)
	finish(t, s, b, job.Canceled, t0)
	depth(1)
	if _, err := s.ReleaseWorker(t.Context(), "w", t0, 3); err != nil {
		t.Fatal(err)
	}
	depth(2)
	if _, err := s.DeleteJob(t.Context(), a.ID, alice); err != nil {
		t.Fatal(err)
	}
	depth(1)
	if _, err := s.DeleteJob(t.Context(), b.ID, bob); err != nil {
		t.Fatal(err)
	}
	depth(1)
}
