// Package queuetest is the conformance suite of the worker protocol (worker.Queue): every
// transport between a worker and the server side (package worker/backend) must pass it.
// In process, the worker calls the backend itself; over HTTP, the suite talks to a server
// that serves the backend. Either way the suite sets up the server side (a SQLite store,
// an artifact folder, a clock it controls) and drives it through the transport, looking at
// the stores directly for what the protocol does not show.
//
// It is a test helper: only tests import it.
package queuetest

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/artifact"
	artifactfs "github.com/chaperone-bio/chaperone/artifact/fs"
	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/store"
	"github.com/chaperone-bio/chaperone/store/sqlite"
	"github.com/chaperone-bio/chaperone/worker"
	"github.com/chaperone-bio/chaperone/worker/backend"
)

// Transport returns the Queue through which a worker reaches q.
type Transport func(t *testing.T, q *backend.Queue) worker.Queue

// The server's lease timing in the suite: far from any delay a loaded machine causes, so
// that only the suite's clock makes a lease expire.
const (
	leaseTTL  = 30 * time.Second
	heartbeat = 2 * time.Second
)

// Run runs the suite against the queues transport makes.
func Run(t *testing.T, transport Transport) {
	tests := []struct {
		name string
		test func(t *testing.T, s *server)
	}{
		{"LeaseOrder", testLeaseOrder},
		{"LeaseWaitsForWork", testLeaseWaitsForWork},
		{"ServerClock", testServerClock},
		{"Heartbeat", testHeartbeat},
		{"Fencing", testFencing},
		{"LostAttemptsLeaveNoFiles", testLostAttemptsLeaveNoFiles},
		{"SucceededAttemptKeepsItsFiles", testSucceededAttemptKeepsItsFiles},
		{"InvalidCompletion", testInvalidCompletion},
		{"LogSentAgain", testLogSentAgain},
		{"BusySlots", testBusySlots},
		{"AttemptEndings", testAttemptEndings},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.test(t, newServer(t, transport))
		})
	}
}

// server is the server side under test and the Queue that reaches it.
type server struct {
	store   *watchSpy
	arts    artifact.Store
	backend *backend.Queue
	clock   *clock
	q       worker.Queue
}

func newServer(t *testing.T, transport Transport) *server {
	t.Helper()
	dir := t.TempDir()
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	arts, err := artifactfs.Open(filepath.Join(dir, "artifacts"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { arts.Close() })
	c := &clock{now: time.Date(2031, 3, 14, 15, 9, 26, 0, time.UTC)}
	spy := &watchSpy{Store: st, queueWatched: make(chan struct{}, 1)}
	b := backend.New(backend.Config{Store: spy, Artifacts: arts, MaxAttempts: 2, LeaseTTL: leaseTTL,
		Heartbeat: heartbeat, Now: c.Now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	return &server{store: spy, arts: arts, backend: b, clock: c, q: transport(t, b)}
}

// watchSpy tells when the server side started watching the queue, so that the suite can
// queue a job while a lease is surely waiting.
type watchSpy struct {
	store.Store
	queueWatched chan struct{}
}

func (w *watchSpy) Watch(ctx context.Context, id string) <-chan struct{} {
	ch := w.Store.Watch(ctx, id)
	if id == "" {
		select {
		case w.queueWatched <- struct{}{}:
		default:
		}
	}
	return ch
}

// clock is the server's clock, moved only by the suite.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// submit queues a job of model for owner and returns its id. Jobs submitted later are
// younger.
func (s *server) submit(t *testing.T, model, owner string) string {
	t.Helper()
	j := &job.Job{ID: job.NewID(), Owner: job.Owner{Kind: job.OwnerIP, ID: owner}, Kind: job.PredictKind,
		Name: "n", Model: model, RunModel: model, Total: 1, Params: map[string]any{"seed": 7.0},
		Input: job.Input{Sequence: "MKT"}, Status: job.Queued, CreatedAt: time.Now()}
	if _, err := s.store.CreateJob(context.Background(), j, store.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return j.ID
}

// lease takes the next job without waiting; nil when there is none.
func (s *server) lease(t *testing.T, req worker.LeaseRequest) *worker.Lease {
	t.Helper()
	if req.WorkerID == "" {
		req.WorkerID = "w"
	}
	l, err := s.q.Lease(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// leaseOne submits a job of model "m" and leases it as worker w.
func (s *server) leaseOne(t *testing.T) *worker.Lease {
	t.Helper()
	id := s.submit(t, "m", "10.0.0.1")
	l := s.lease(t, worker.LeaseRequest{Models: []string{"m"}})
	if l == nil || l.JobID != id {
		t.Fatalf("leased %+v, want job %s", l, id)
	}
	return l
}

// retire cancels a job that a case left queued, so that the next case leases its own.
// A job already ended or deleted is left as it is.
func (s *server) retire(id string) {
	_, _ = s.store.CancelJob(context.Background(), id, owner, time.Now())
}

func (s *server) job(t *testing.T, id string) *job.Job {
	t.Helper()
	j, err := s.store.GetJob(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func (s *server) put(t *testing.T, f worker.Fence, path string) error {
	t.Helper()
	return s.q.PutArtifact(context.Background(), f, path, strings.NewReader("data_"+path+"\n"))
}

// hasFile reports whether the attempt's file is stored.
func (s *server) hasFile(t *testing.T, f worker.Fence, path string) bool {
	t.Helper()
	r, err := s.arts.Open(context.Background(), f.JobID, f.Attempt, path)
	if errors.Is(err, artifact.ErrNotFound) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	return true
}

func (s *server) log(t *testing.T, id string) string {
	t.Helper()
	r, err := s.arts.OpenLog(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var owner = job.Owner{Kind: job.OwnerIP, ID: "10.0.0.1"}

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
