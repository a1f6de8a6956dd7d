package storetest

import (
	"testing"

	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/store"
)

// testSummaries: a summary, read alone or in a listing, holds everything of the job but its
// input and results, in every state a job can be in.
func testSummaries(t *testing.T, open func(*testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	big := newJob(alice)
	big.Name, big.Total = "big input", 3
	big.Input = job.Input{Targets: []job.Target{{Name: "t1", Content: string(make([]byte, 1<<20))}}}

	queued := create(t, s, big)
	running := lease(t, s, create(t, s, newJob(alice)), "w", t0)
	p := job.Progress{Stage: job.StageInference, Done: 1, Total: 4}
	if err := s.Heartbeat(ctx, store.Heartbeat{ID: running.ID, Attempt: 1, Progress: &p, Now: t0,
		LeaseUntil: t0.Add(leaseFor)}); err != nil {
		t.Fatal(err)
	}
	succeeded := finish(t, s, create(t, s, newJob(alice)), job.Succeeded, t0.Add(leaseFor))
	empty := lease(t, s, create(t, s, newJob(alice)), "w", t0)
	if err := s.CompleteJob(ctx, empty.ID, 1, store.Outcome{Status: job.Succeeded, Now: t0}); err != nil {
		t.Fatal(err)
	}
	failed := finish(t, s, create(t, s, newJob(alice)), job.Failed, t0.Add(leaseFor))
	canceled := finish(t, s, create(t, s, newJob(alice)), job.Canceled, t0.Add(leaseFor))
	design := newJob(alice)
	design.Kind, design.Model, design.Protocol = job.DesignKind, "", "rfd3-binder"
	create(t, s, design)

	ids := []string{queued.ID, running.ID, succeeded.ID, empty.ID, failed.ID, canceled.ID, design.ID}
	for _, id := range ids {
		whole := get(t, s, id)
		sum, err := s.GetJobSummary(ctx, id)
		if err != nil {
			t.Fatalf("GetJobSummary(%s): %v", id, err)
		}
		checkSummary(t, "GetJobSummary of a "+string(whole.Status)+" job", sum, whole)
	}
	if sum, _ := s.GetJobSummary(ctx, succeeded.ID); !sum.ResultsReady {
		t.Error("a succeeded job with results: ResultsReady = false")
	}
	if sum, _ := s.GetJobSummary(ctx, empty.ID); sum.ResultsReady {
		t.Error("a succeeded job without results: ResultsReady = true")
	}
	if sum, _ := s.GetJobSummary(ctx, running.ID); sum.WorkerID != "w" {
		t.Errorf("a running job's summary names worker %q, want the lease holder w", sum.WorkerID)
	}
	_, err := s.GetJobSummary(ctx, job.NewID())
	wantErr(t, "GetJobSummary of an unknown id", err, job.ErrNotFound)

	page, err := s.ListJobs(ctx, alice, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Jobs) != len(ids) {
		t.Fatalf("ListJobs = %d jobs, want %d", len(page.Jobs), len(ids))
	}
	for _, sum := range page.Jobs {
		checkSummary(t, "listed "+string(sum.Status)+" job", sum, get(t, s, sum.ID))
	}
}

// testWatchIgnoresLeases: watchers wake for what they can see, not for a worker renewing
// its lease.
func testWatchIgnoresLeases(t *testing.T, open func(*testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	j := lease(t, s, create(t, s, newJob(alice)), "w", t0)
	ch := s.Watch(ctx, j.ID)
	beat := func(what string, p *job.Progress, activity bool, wantFired bool) {
		t.Helper()
		drain(ch)
		hb := store.Heartbeat{ID: j.ID, Attempt: 1, Progress: p, Activity: activity, Now: t0, LeaseUntil: t0.Add(leaseFor)}
		if err := s.Heartbeat(ctx, hb); err != nil {
			t.Fatal(err)
		}
		if wantFired {
			fired(t, ch, what)
			return
		}
		// A write is answered after its notifications were sent, so one pending now would
		// have been sent by this heartbeat.
		quiet(t, ch, what)
	}
	beat("a heartbeat that only extends the lease", nil, false, false)
	beat("a heartbeat with activity only", nil, true, false)
	beat("a heartbeat with progress", &job.Progress{Stage: job.StageMSA, Done: 0, Total: 2}, true, true)
	beat("the same progress again", &job.Progress{Stage: job.StageMSA, Done: 0, Total: 2}, true, false)
	beat("the same progress, stage left out", &job.Progress{Done: 0, Total: 2}, true, false)
	beat("one more done", &job.Progress{Done: 1, Total: 2}, true, true)
	f := 0.75
	beat("a finer fraction", &job.Progress{Done: 1, Total: 2, Fraction: &f}, false, true)
	beat("a new stage", &job.Progress{Stage: job.StageInference, Done: 1, Total: 2, Fraction: &f}, false, true)
}

// testSummariesFollowChanges: a summary read again after any change of its job shows the
// change, however often it was read before (a store may keep summaries between reads).
func testSummariesFollowChanges(t *testing.T, open func(*testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	j := newJob(alice)
	evictor := newJob(bob)
	steps := []struct {
		name string
		do   func()
		gone bool // the job no longer exists afterwards
	}{
		{"create", func() { create(t, s, j) }, false},
		{"lease", func() { lease(t, s, j, "w1", t0) }, false},
		{"progress", func() {
			p := job.Progress{Stage: job.StageInference, Done: 1, Total: 3}
			if err := s.Heartbeat(ctx, store.Heartbeat{ID: j.ID, Attempt: 1, Progress: &p, Now: t0, LeaseUntil: t0.Add(leaseFor)}); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"expiry", func() {
			if _, err := s.RecoverExpired(ctx, t0.Add(2*leaseFor), 3); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"second lease", func() { lease(t, s, j, "w2", t0.Add(3*leaseFor)) }, false},
		{"release", func() {
			if _, err := s.ReleaseWorker(ctx, "w2", t0.Add(4*leaseFor), 3); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"third lease", func() { lease(t, s, j, "w3", t0.Add(5*leaseFor)) }, false},
		{"completion", func() {
			if err := s.CompleteJob(ctx, j.ID, 3, store.Outcome{Status: job.Succeeded, Results: sampleResults(), Now: t0.Add(6 * leaseFor)}); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"eviction", func() {
			createWith(t, s, evictor, store.CreateOptions{Limits: store.Limits{Retained: 1}})
		}, true},
	}
	for _, st := range steps {
		if st.name != "create" {
			if _, err := s.GetJobSummary(ctx, j.ID); err != nil { // read before the change
				t.Fatalf("before %s: %v", st.name, err)
			}
		}
		st.do()
		sum, err := s.GetJobSummary(ctx, j.ID)
		if st.gone {
			wantErr(t, "GetJobSummary after "+st.name, err, job.ErrNotFound)
			continue
		}
		if err != nil {
			t.Fatalf("after %s: %v", st.name, err)
		}
		checkSummary(t, "summary after "+st.name, sum, get(t, s, j.ID))
	}

	// Cancel and delete, on a job read as a summary before each.
	c := create(t, s, newJob(carol))
	for _, st := range []struct {
		name string
		do   func() error
	}{
		{"cancel", func() error { _, err := s.CancelJob(ctx, c.ID, carol, t0); return err }},
		{"delete", func() error { _, err := s.DeleteJob(ctx, c.ID, carol); return err }},
	} {
		if _, err := s.GetJobSummary(ctx, c.ID); err != nil {
			t.Fatalf("before %s: %v", st.name, err)
		}
		if err := st.do(); err != nil {
			t.Fatal(err)
		}
		sum, err := s.GetJobSummary(ctx, c.ID)
		if st.name == "delete" {
			wantErr(t, "GetJobSummary after delete", err, job.ErrNotFound)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		checkSummary(t, "summary after "+st.name, sum, get(t, s, c.ID))
	}
}
