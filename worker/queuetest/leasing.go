package queuetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/worker"
)

func testLeaseOrder(t *testing.T, s *server) {
	// Each step leases once; the jobs left over stay queued for the next.
	a1 := s.submit(t, "a", "10.0.0.1")
	b1 := s.submit(t, "b", "10.0.0.1")
	a2 := s.submit(t, "a", "10.0.0.2")
	a3 := s.submit(t, "a", "10.0.0.1")
	steps := []struct {
		why  string
		req  worker.LeaseRequest
		want string // "" for none
	}{
		{"only models the worker serves", worker.LeaseRequest{Models: []string{"c"}}, ""},
		{"the oldest job of a served model", worker.LeaseRequest{Models: []string{"a"}}, a1},
		// The owner of a1 now holds a running job; the other owner goes first.
		{"the owner holding the fewest running jobs first", worker.LeaseRequest{Models: []string{"a", "b"}}, a2},
		{"a job of a loaded model before an older one", worker.LeaseRequest{Models: []string{"a", "b"}, Loaded: []string{"b"}}, b1},
		{"what is left", worker.LeaseRequest{Models: []string{"a", "b"}}, a3},
		{"nothing when the queue is empty", worker.LeaseRequest{Models: []string{"a", "b"}}, ""},
	}
	for _, step := range steps {
		l := s.lease(t, step.req)
		var got string
		if l != nil {
			got = l.JobID
		}
		if got != step.want {
			t.Fatalf("%s: leased %q, want %q", step.why, got, step.want)
		}
	}
}

func testLeaseWaitsForWork(t *testing.T, s *server) {
	ctx := context.Background()
	if l, err := s.q.Lease(ctx, worker.LeaseRequest{WorkerID: "w", Models: []string{"m"}, Wait: 50 * time.Millisecond}); l != nil || err != nil {
		t.Fatalf("a wait that passed without work: %+v, %v; want nil, nil", l, err)
	}

	// A job queued while a lease waits reaches it long before the wait is over.
	select {
	case <-s.store.queueWatched: // the watch of the lease above
	default:
	}
	leased := make(chan *worker.Lease, 1)
	go func() {
		l, err := s.q.Lease(ctx, worker.LeaseRequest{WorkerID: "w", Models: []string{"m"}, Wait: time.Hour})
		if err != nil {
			t.Error(err)
		}
		leased <- l
	}()
	select {
	case <-s.store.queueWatched:
	case <-time.After(20 * time.Second):
		t.Fatal("a lease that may wait never watched the queue")
	}
	id := s.submit(t, "m", "10.0.0.1")
	select {
	case l := <-leased:
		if l == nil || l.JobID != id {
			t.Fatalf("the waiting lease got %+v, want job %s", l, id)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a waiting lease was not woken by a new job")
	}

	// The worker's own context ends a wait.
	waitCtx, cancel := context.WithCancel(ctx)
	ended := make(chan error, 1)
	go func() {
		_, err := s.q.Lease(waitCtx, worker.LeaseRequest{WorkerID: "w", Models: []string{"m"}, Wait: time.Hour})
		ended <- err
	}()
	cancel()
	select {
	case err := <-ended:
		if err == nil {
			t.Fatal("a lease whose context ended reported no error")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a waiting lease ignored the end of its context")
	}
}

// The worker sends no clock readings: every time on record is the server's.
func testServerClock(t *testing.T, s *server) {
	ctx := context.Background()
	start := s.clock.Now()
	timing, err := s.q.Announce(ctx, worker.Announcement{WorkerID: "w", Models: []string{"m", "n"},
		Loaded: []string{"n"}, Slots: 1})
	if err != nil {
		t.Fatal(err)
	}
	if timing != (worker.Timing{LeaseTTL: leaseTTL, Heartbeat: heartbeat}) {
		t.Fatalf("announce answered timing %+v, want the server's %v and %v", timing, leaseTTL, heartbeat)
	}
	live, err := s.store.LiveWorkers(ctx, start)
	if err != nil || len(live) != 1 || !live[0].SeenAt.Equal(start) || !slices.Equal(live[0].Loaded, []string{"n"}) {
		t.Fatalf("the worker's announcement is on record as %+v (%v), want seen at %s with n loaded", live, err, start)
	}

	l := s.leaseOne(t)
	j := s.job(t, l.JobID)
	if !j.StartedAt.Equal(start) || !j.LeaseExpiresAt.Equal(start.Add(leaseTTL)) {
		t.Fatalf("leased at %s until %s; want the server's %s until %s", j.StartedAt, j.LeaseExpiresAt, start, start.Add(leaseTTL))
	}
	s.clock.advance(10 * time.Second)
	if err := s.q.Heartbeat(ctx, worker.Heartbeat{Fence: l.Fence}); err != nil {
		t.Fatal(err)
	}
	if j := s.job(t, l.JobID); !j.LeaseExpiresAt.Equal(start.Add(10*time.Second + leaseTTL)) {
		t.Fatalf("a heartbeat renewed the lease until %s, want %s", j.LeaseExpiresAt, start.Add(10*time.Second+leaseTTL))
	}
	s.clock.advance(5 * time.Second)
	if err := s.q.Complete(ctx, worker.Completion{Fence: l.Fence, Status: job.Succeeded, Results: &job.Results{}}); err != nil {
		t.Fatal(err)
	}
	if j := s.job(t, l.JobID); !j.FinishedAt.Equal(start.Add(15 * time.Second)) {
		t.Fatalf("finished at %s, want the server's %s", j.FinishedAt, start.Add(15*time.Second))
	}

	// An expired lease is the server clock's verdict too.
	l = s.leaseOne(t)
	s.clock.advance(leaseTTL - time.Second)
	s.backend.RecoverExpired(ctx)
	if j := s.job(t, l.JobID); j.Status != job.Running {
		t.Fatalf("a lease with a second left by the server's clock was recovered: %s", j.Status)
	}
	s.clock.advance(2 * time.Second)
	s.backend.RecoverExpired(ctx)
	if j := s.job(t, l.JobID); j.Status != job.Queued {
		t.Fatalf("a lease expired by the server's clock is still %s", j.Status)
	}
}

func testHeartbeat(t *testing.T, s *server) {
	ctx := context.Background()
	l := s.leaseOne(t)
	if l.Kind != job.PredictKind || l.RunModel != "m" || l.Input.Sequence != "MKT" || l.Params["seed"] != 7.0 || l.Total != 1 || l.Attempt != 1 {
		t.Fatalf("the lease does not carry the job: %+v", l)
	}
	frac := 0.25
	p := job.Progress{Stage: job.StageInference, Done: 0, Total: 1, Fraction: &frac}
	if err := s.q.Heartbeat(ctx, worker.Heartbeat{Fence: l.Fence, Progress: &p, Activity: true}); err != nil {
		t.Fatal(err)
	}
	j := s.job(t, l.JobID)
	if j.Stage != job.StageInference || j.Progress == nil || *j.Progress != 0.25 {
		t.Fatalf("after a heartbeat with progress the job shows stage %q progress %v", j.Stage, j.Progress)
	}
	// A heartbeat without progress keeps what was reported.
	if err := s.q.Heartbeat(ctx, worker.Heartbeat{Fence: l.Fence}); err != nil {
		t.Fatal(err)
	}
	if j := s.job(t, l.JobID); j.Stage != job.StageInference || j.Progress == nil || *j.Progress != 0.25 {
		t.Fatalf("a heartbeat without progress changed it to stage %q progress %v", j.Stage, j.Progress)
	}
}
