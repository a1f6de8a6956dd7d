package worker

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/artifact"
	artifactfs "github.com/chaperone-bio/chaperone/artifact/fs"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/enginetest"
	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/store"
	"github.com/chaperone-bio/chaperone/store/sqlite"
)

// fixture is a store, an artifact folder and a way to start workers on them.
type fixture struct {
	t     *testing.T
	dir   string
	store store.Store
	arts  artifact.Store
}

func newFixture(t *testing.T) *fixture {
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
	return &fixture{t: t, dir: dir, store: st, arts: arts}
}

// start runs a worker with the test engine on q until the test ends.
func (f *fixture) start(id string, q Queue) {
	f.t.Helper()
	reg, err := engine.NewRegistry(enginetest.New("boltz2"))
	if err != nil {
		f.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := New(Config{ID: id, Slots: 1, Engines: reg, Queue: q, WorkDir: filepath.Join(f.dir, "work-"+id),
		LeaseTTL: 400 * time.Millisecond, Heartbeat: 50 * time.Millisecond, Poll: 50 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := w.Start(ctx); err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { cancel(); w.Wait() })
}

func (f *fixture) local() *Local { return &Local{Store: f.store, Artifacts: f.arts, MaxAttempts: 2} }

func (f *fixture) submit(name string) string {
	f.t.Helper()
	j := &job.Job{ID: job.NewID(), Owner: job.Owner{Kind: job.OwnerIP, ID: "10.0.0.1"}, Kind: job.PredictKind,
		Name: name, Model: "boltz2", RunModel: "boltz2", Total: 1, Params: map[string]any{},
		Input: job.Input{Sequence: "MKT"}, Status: job.Queued, CreatedAt: time.Now()}
	if _, err := f.store.CreateJob(context.Background(), j, store.CreateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	return j.ID
}

// waitJob waits, on the store's change notifications, until the job satisfies pred.
func (f *fixture) waitJob(id string, pred func(*job.Job) bool) *job.Job {
	f.t.Helper()
	changed, stop := f.store.Watch(id)
	defer stop()
	timeout := time.After(20 * time.Second)
	for {
		j, err := f.store.GetJob(context.Background(), id)
		if err != nil {
			f.t.Fatal(err)
		}
		if pred(j) {
			return j
		}
		select {
		case <-changed:
		case <-timeout:
			f.t.Fatalf("job %s never reached the expected state; last %s attempt %d", id, j.Status, j.Attempt)
		}
	}
}

// silentQueue drops heartbeats while mute is set, as a worker cut off from the server
// would: its lease runs out although its job is still running.
type silentQueue struct {
	*Local
	mute atomic.Bool
	lost atomic.Int32 // heartbeats answered ErrLeaseLost
}

func (q *silentQueue) Heartbeat(ctx context.Context, hb store.Heartbeat) error {
	if q.mute.Load() {
		return nil
	}
	err := q.Local.Heartbeat(ctx, hb)
	if errors.Is(err, job.ErrLeaseLost) {
		q.lost.Add(1)
	}
	return err
}

func TestALostLeaseIsRunAgainAndTheStaleAttemptIsFencedOut(t *testing.T) {
	f := newFixture(t)
	cutOff := &silentQueue{Local: f.local()}
	cutOff.mute.Store(true)
	f.start("cut-off", cutOff)
	id := f.submit("slow:40") // four seconds of work
	f.waitJob(id, func(j *job.Job) bool { return j.Status == job.Running && j.WorkerID == "cut-off" })

	// The lease expires; the reaper hands the job to a healthy worker as attempt 2.
	f.start("healthy", f.local())
	go store.Reap(t.Context(), f.store, 100*time.Millisecond, 2, slog.New(slog.NewTextHandler(io.Discard, nil)))
	f.waitJob(id, func(j *job.Job) bool { return j.Attempt == 2 && j.WorkerID == "healthy" })
	cutOff.mute.Store(false) // the cut-off worker comes back and learns it lost the job

	done := f.waitJob(id, func(j *job.Job) bool { return j.Status.Terminal() })
	if done.Status != job.Succeeded || done.Attempt != 2 {
		t.Fatalf("job ended %s at attempt %d (error %q), want succeeded at attempt 2", done.Status, done.Attempt, done.Error)
	}
	if cutOff.lost.Load() == 0 {
		t.Fatal("the cut-off worker was never told that its lease was lost")
	}
	if _, err := f.arts.Open(context.Background(), id, 1, "t1.cif"); !errors.Is(err, artifact.ErrNotFound) {
		t.Fatalf("the stale attempt left files behind: %v", err)
	}
	if _, err := f.arts.Open(context.Background(), id, 2, "t1.cif"); err != nil {
		t.Fatalf("the winning attempt's files are missing: %v", err)
	}
	rc, _ := f.arts.OpenLog(context.Background(), id)
	log, _ := io.ReadAll(rc)
	rc.Close()
	if !strings.Contains(string(log), "attempt 1") || !strings.Contains(string(log), "attempt 2") {
		t.Fatalf("the log does not show both attempts:\n%s", log)
	}
}

func TestTwoLostAttemptsFailTheJob(t *testing.T) {
	f := newFixture(t)
	id := f.submit("hang")
	for _, worker := range []string{"first", "second"} {
		q := &silentQueue{Local: f.local()}
		q.mute.Store(true)
		// A worker that leases and then goes silent, released as a restart would.
		reg, _ := engine.NewRegistry(enginetest.New("boltz2"))
		ctx, cancel := context.WithCancel(context.Background())
		w := New(Config{ID: worker, Slots: 1, Engines: reg, Queue: q, WorkDir: filepath.Join(f.dir, "work-"+worker),
			LeaseTTL: time.Minute, Heartbeat: 50 * time.Millisecond, Poll: 50 * time.Millisecond,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err := w.Start(ctx); err != nil {
			t.Fatal(err)
		}
		f.waitJob(id, func(j *job.Job) bool { return j.Status == job.Running && j.WorkerID == worker })
		if _, err := f.store.ReleaseWorker(context.Background(), worker, time.Now(), 2); err != nil {
			t.Fatal(err)
		}
		cancel()
		w.Wait()
	}
	j := f.waitJob(id, func(j *job.Job) bool { return j.Status.Terminal() })
	if j.Status != job.Failed || !strings.Contains(j.Error, "lost 2 times") {
		t.Fatalf("after two lost attempts the job is %s with error %q", j.Status, j.Error)
	}
}
