package queuetest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/worker"
)

// loss is one way an attempt loses its job. It returns the fence of the attempt that
// holds the job afterwards, if one does.
type loss struct {
	name string
	lose func(t *testing.T, s *server, l *worker.Lease) *worker.Fence
}

var losses = []loss{
	{"canceled", func(t *testing.T, s *server, l *worker.Lease) *worker.Fence {
		if _, err := s.store.CancelJob(context.Background(), l.JobID, owner, time.Now()); err != nil {
			t.Fatal(err)
		}
		return nil
	}},
	{"deleted", func(t *testing.T, s *server, l *worker.Lease) *worker.Fence {
		if _, err := s.store.DeleteJob(context.Background(), l.JobID, owner); err != nil {
			t.Fatal(err)
		}
		return nil
	}},
	{"released and taken over", func(t *testing.T, s *server, l *worker.Lease) *worker.Fence {
		if err := s.q.ReleaseWorker(context.Background(), "w"); err != nil {
			t.Fatal(err)
		}
		next := s.lease(t, worker.LeaseRequest{WorkerID: "other", Models: []string{"m"}})
		if next == nil || next.JobID != l.JobID || next.Attempt != l.Attempt+1 {
			t.Fatalf("after a release the job was leased as %+v", next)
		}
		return &next.Fence
	}},
	{"handed back and taken over", func(t *testing.T, s *server, l *worker.Lease) *worker.Fence {
		if err := s.q.HandBack(context.Background(), "w"); err != nil {
			t.Fatal(err)
		}
		next := s.lease(t, worker.LeaseRequest{WorkerID: "other", Models: []string{"m"}})
		if next == nil || next.JobID != l.JobID || next.Attempt != l.Attempt+1 {
			t.Fatalf("after a hand-back the job was leased as %+v", next)
		}
		return &next.Fence
	}},
}

func testFencing(t *testing.T, s *server) {
	ctx := context.Background()
	for _, loss := range losses {
		t.Run(loss.name, func(t *testing.T) {
			l := s.leaseOne(t)
			if err := s.q.AppendLog(ctx, l.Fence, 0, []byte("before\n")); err != nil {
				t.Fatal(err)
			}
			current := loss.lose(t, s, l)
			refused := []struct {
				what string
				err  error
			}{
				{"heartbeat", s.q.Heartbeat(ctx, worker.Heartbeat{Fence: l.Fence})},
				{"log", s.q.AppendLog(ctx, l.Fence, int64(len("before\n")), []byte("after\n"))},
				{"artifact", s.put(t, l.Fence, "t1.cif")},
				{"completion", s.q.Complete(ctx, worker.Completion{Fence: l.Fence, Status: job.Succeeded, Results: &job.Results{}})},
			}
			for _, r := range refused {
				if !errors.Is(r.err, job.ErrLeaseLost) {
					t.Errorf("the lost attempt's %s: %v, want job.ErrLeaseLost", r.what, r.err)
				}
			}
			if current == nil {
				return
			}
			if log := s.log(t, l.JobID); !strings.Contains(log, "before") || strings.Contains(log, "after") {
				t.Errorf("the log should hold the lost attempt's output from before its loss only; it is %q", log)
			}
			// The attempt that holds the job now writes as usual.
			if err := s.q.Heartbeat(ctx, worker.Heartbeat{Fence: *current}); err != nil {
				t.Errorf("the current attempt's heartbeat: %v", err)
			}
			if err := s.q.AppendLog(ctx, *current, 0, []byte("current\n")); err != nil {
				t.Errorf("the current attempt's log: %v", err)
			}
			// The server closed the lost attempt's output with how it ended (testAttemptEndings).
			if log := s.log(t, l.JobID); !strings.HasPrefix(log, "before\n== chaperone: attempt 1 ") || !strings.HasSuffix(log, " ==\ncurrent\n") {
				t.Errorf("the log is %q; want each attempt's output in attempt order", log)
			}
			if err := s.put(t, *current, "t1.cif"); err != nil {
				t.Errorf("the current attempt's artifact: %v", err)
			}
			if err := s.q.Complete(ctx, worker.Completion{Fence: *current, Status: job.Succeeded, Results: &job.Results{}}); err != nil {
				t.Errorf("the current attempt's completion: %v", err)
			}
		})
	}
}

// Whatever way an attempt loses its job, the server drops the files it stored, without
// any help from the worker.
func testLostAttemptsLeaveNoFiles(t *testing.T, s *server) {
	ctx := context.Background()
	cases := []struct {
		name string
		// lose ends the attempt l and makes the server notice, as the event would.
		lose func(t *testing.T, l *worker.Lease)
	}{
		{"canceled, then its heartbeat refused", func(t *testing.T, l *worker.Lease) {
			losses[0].lose(t, s, l)
			s.q.Heartbeat(ctx, worker.Heartbeat{Fence: l.Fence})
		}},
		{"canceled after its worker was gone, then swept", func(t *testing.T, l *worker.Lease) {
			losses[0].lose(t, s, l)
			s.backend.Sweep(ctx)
		}},
		{"released", func(t *testing.T, l *worker.Lease) {
			if err := s.q.ReleaseWorker(ctx, "w"); err != nil {
				t.Fatal(err)
			}
		}},
		{"taken over, then its completion refused", func(t *testing.T, l *worker.Lease) {
			losses[2].lose(t, s, l)
			s.q.Complete(ctx, worker.Completion{Fence: l.Fence, Status: job.Succeeded, Results: &job.Results{}})
		}},
		{"failed", func(t *testing.T, l *worker.Lease) {
			if err := s.q.Complete(ctx, worker.Completion{Fence: l.Fence, Status: job.Failed, Error: "boom"}); err != nil {
				t.Fatal(err)
			}
		}},
		{"deleted, then a late log append", func(t *testing.T, l *worker.Lease) {
			losses[1].lose(t, s, l)
			if err := s.arts.DeleteJob(ctx, l.JobID); err != nil { // as the API does
				t.Fatal(err)
			}
			s.q.AppendLog(ctx, l.Fence, 0, []byte("late\n"))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := s.leaseOne(t)
			if err := s.put(t, l.Fence, "t1.cif"); err != nil {
				t.Fatal(err)
			}
			tc.lose(t, l)
			if s.hasFile(t, l.Fence, "t1.cif") {
				t.Error("the lost attempt's file is still stored")
			}
			s.retire(l.JobID)
		})
	}
	// An expired lease is recovered by the reaper, which drops the files too.
	t.Run("expired", func(t *testing.T) {
		l := s.leaseOne(t)
		if err := s.put(t, l.Fence, "t1.cif"); err != nil {
			t.Fatal(err)
		}
		s.clock.advance(leaseTTL + time.Second)
		s.backend.RecoverExpired(ctx)
		if j := s.job(t, l.JobID); j.Status != job.Queued {
			t.Fatalf("the expired job is %s, want queued", j.Status)
		}
		if s.hasFile(t, l.Fence, "t1.cif") {
			t.Error("the expired attempt's file is still stored")
		}
		s.retire(l.JobID)
	})
	ids, err := s.arts.Jobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if _, err := s.store.GetJob(ctx, id); errors.Is(err, job.ErrNotFound) {
			t.Errorf("files of the deleted job %s are left", id)
		}
	}
}

func testSucceededAttemptKeepsItsFiles(t *testing.T, s *server) {
	ctx := context.Background()
	l := s.leaseOne(t)
	if err := s.put(t, l.Fence, "t1.cif"); err != nil {
		t.Fatal(err)
	}
	res := &job.Results{Artifacts: []job.Artifact{{Path: "t1.cif", Target: "t1", Type: job.ArtifactStructure}}}
	if err := s.q.Complete(ctx, worker.Completion{Fence: l.Fence, Status: job.Succeeded, Results: res}); err != nil {
		t.Fatal(err)
	}
	// A worker told its completion failed (an error after the commit) may try again, or
	// still be uploading: all refused, and none of it may cost the job its results.
	late := []struct {
		what string
		err  error
	}{
		{"completion", s.q.Complete(ctx, worker.Completion{Fence: l.Fence, Status: job.Succeeded, Results: res})},
		{"heartbeat", s.q.Heartbeat(ctx, worker.Heartbeat{Fence: l.Fence})},
		{"artifact", s.put(t, l.Fence, "t2.cif")},
		{"failure", s.q.Complete(ctx, worker.Completion{Fence: l.Fence, Status: job.Failed, Error: "late"})},
	}
	for _, r := range late {
		if !errors.Is(r.err, job.ErrLeaseLost) {
			t.Errorf("a late %s: %v, want job.ErrLeaseLost", r.what, r.err)
		}
	}
	s.backend.Sweep(ctx)
	if !s.hasFile(t, l.Fence, "t1.cif") {
		t.Error("the succeeded attempt lost its result file")
	}
	if j := s.job(t, l.JobID); j.Status != job.Succeeded || !slices.ContainsFunc(j.Results.Artifacts, func(a job.Artifact) bool { return a.Path == "t1.cif" }) {
		t.Errorf("the job is %s with results %+v after late writes", j.Status, j.Results)
	}
}

// testInvalidCompletion: an outcome that is neither success nor failure is refused as an
// invalid message, and changes nothing: the job runs on under its lease.
func testInvalidCompletion(t *testing.T, s *server) {
	ctx := context.Background()
	l := s.leaseOne(t)
	err := s.q.Complete(ctx, worker.Completion{Fence: l.Fence, Status: "bogus"})
	var invalid *job.InvalidError
	if !errors.As(err, &invalid) || !strings.Contains(invalid.Error(), `"bogus"`) {
		t.Fatalf("completing as bogus: error %v, want a *job.InvalidError naming the status", err)
	}
	if j := s.job(t, l.JobID); j.Status != job.Running || j.Attempt != l.Attempt {
		t.Fatalf("after a refused completion the job is %s at attempt %d, want running at %d", j.Status, j.Attempt, l.Attempt)
	}
	if err := s.q.Heartbeat(ctx, worker.Heartbeat{Fence: l.Fence}); err != nil {
		t.Fatalf("the lease after a refused completion: %v", err)
	}
}

// testLogSentAgain: output sent again, alone or with more after it, lands once, as it must
// when a worker sends again an append whose answer was lost; output that starts past what
// the server holds is refused.
func testLogSentAgain(t *testing.T, s *server) {
	ctx := context.Background()
	l := s.leaseOne(t)
	for _, a := range []struct {
		offset int64
		p      string
	}{{0, "one\n"}, {0, "one\n"}, {0, "one\ntwo\n"}, {4, "two\nthree\n"}, {14, ""}} {
		if err := s.q.AppendLog(ctx, l.Fence, a.offset, []byte(a.p)); err != nil {
			t.Fatalf("AppendLog(%q at %d): %v", a.p, a.offset, err)
		}
	}
	if err := s.q.AppendLog(ctx, l.Fence, 99, []byte("gap\n")); err == nil || errors.Is(err, job.ErrLeaseLost) {
		t.Errorf("output past what the server holds: %v, want a refusal that is not a lost lease", err)
	}
	if log := s.log(t, l.JobID); log != "one\ntwo\nthree\n" {
		t.Errorf("the log is %q, want each line once", log)
	}
}
