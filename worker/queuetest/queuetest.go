// Package queuetest is the conformance suite of the worker protocol (worker.Queue): every
// transport between a worker and the server side (package worker/backend) must pass it.
// In process, the worker calls the backend itself; over HTTP, the suite talks to a server
// that serves the backend. Either way the suite sets up the server side (a SQLite store,
// an artifact folder, a clock it controls) and drives it through the transport, looking at
// the stores directly for what the protocol does not show.
//
// It is a test helper: only tests import it. It imports worker, worker/backend, store,
// store/sqlite, artifact, artifact/fs and job.
package queuetest

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
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
