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
