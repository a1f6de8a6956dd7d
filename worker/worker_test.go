package worker_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
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
	"github.com/chaperone-bio/chaperone/worker"
	"github.com/chaperone-bio/chaperone/worker/backend"
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
	t.Cleanup(func() { arts.Close() })
	return &fixture{t: t, dir: dir, store: st, arts: arts}
}

// start runs a worker with eng on q until the test ends.
func (f *fixture) start(id string, q worker.Queue, eng engine.Engine) {
	f.t.Helper()
	reg, err := engine.NewRegistry(eng)
	if err != nil {
		f.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := worker.New(worker.Config{ID: id, Slots: 1, Engines: reg, Queue: q, WorkDir: filepath.Join(f.dir, "work-"+id),
		Logger: discard})
	if err := w.Start(ctx); err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { cancel(); w.Wait() })
}

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// Lease times for the workers of these tests: a short one for a worker whose lease must run
// out soon once it falls silent, and one for every other worker that no delay of a loaded
// machine between two heartbeats comes near.
const (
	shortLease = 400 * time.Millisecond
	safeLease  = time.Minute
)

// server is the server side of the worker protocol on the fixture's stores, whose leases
// last leaseTTL without a heartbeat.
func (f *fixture) server(leaseTTL time.Duration) *backend.Queue {
	return backend.New(backend.Config{Store: f.store, Artifacts: f.arts, MaxAttempts: 2,
		LeaseTTL: leaseTTL, Heartbeat: 50 * time.Millisecond, Logger: discard})
}

// submit queues a boltz2 job and returns its id.
func (f *fixture) submit(name string) string {
	f.t.Helper()
	return f.submitModel(name, "boltz2")
}

// submitModel queues a job of model and returns its id.
func (f *fixture) submitModel(name, model string) string {
	f.t.Helper()
	j := &job.Job{ID: job.NewID(), Owner: job.Owner{Kind: job.OwnerIP, ID: "10.0.0.1"}, Kind: job.PredictKind,
		Name: name, Model: model, RunModel: model, Total: 1, Params: map[string]any{},
		Input: job.Input{Sequence: "MKT"}, Status: job.Queued, CreatedAt: time.Now()}
	if _, err := f.store.CreateJob(context.Background(), j, store.CreateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	return j.ID
}

// waitJob waits, on the store's change notifications, until the job satisfies pred.
func (f *fixture) waitJob(id string, pred func(*job.Job) bool) *job.Job {
	f.t.Helper()
	changed := f.store.Watch(f.t.Context(), id)
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
	*backend.Queue
	mute atomic.Bool
	lost chan struct{} // closed once a heartbeat was answered ErrLeaseLost
	once sync.Once
}

func newSilentQueue(q *backend.Queue) *silentQueue {
	s := &silentQueue{Queue: q, lost: make(chan struct{})}
	s.mute.Store(true)
	return s
}

func (q *silentQueue) Heartbeat(ctx context.Context, hb worker.Heartbeat) error {
	if q.mute.Load() {
		return nil
	}
	err := q.Queue.Heartbeat(ctx, hb)
	if errors.Is(err, job.ErrLeaseLost) {
		q.once.Do(func() { close(q.lost) })
	}
	return err
}

func TestALostLeaseIsRunAgainAndTheStaleAttemptIsFencedOut(t *testing.T) {
	f := newFixture(t)
	cutOff := newSilentQueue(f.server(shortLease))
	f.start("cut-off", cutOff, enginetest.New("boltz2"))
	id := f.submit("slow:40") // four seconds of work
	f.waitJob(id, func(j *job.Job) bool { return j.Status == job.Running && j.WorkerID == "cut-off" })

	// The lease expires; the reaper hands the job to a healthy worker as attempt 2.
	healthy := f.server(safeLease)
	f.start("healthy", healthy, enginetest.New("boltz2"))
	go healthy.Reap(t.Context(), 100*time.Millisecond)
	f.waitJob(id, func(j *job.Job) bool { return j.Attempt == 2 && j.WorkerID == "healthy" })
	cutOff.mute.Store(false) // the cut-off worker comes back and learns it lost the job

	done := f.waitJob(id, func(j *job.Job) bool { return j.Status.Terminal() })
	if done.Status != job.Succeeded || done.Attempt != 2 {
		t.Fatalf("job ended %s at attempt %d (error %q), want succeeded at attempt 2", done.Status, done.Attempt, done.Error)
	}
	select {
	case <-cutOff.lost:
	case <-time.After(20 * time.Second):
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
	for _, name := range []string{"first", "second"} {
		q := newSilentQueue(f.server(safeLease))
		// A worker that leases and then goes silent, released as a restart would.
		reg, _ := engine.NewRegistry(enginetest.New("boltz2"))
		ctx, cancel := context.WithCancel(context.Background())
		w := worker.New(worker.Config{ID: name, Slots: 1, Engines: reg, Queue: q,
			WorkDir: filepath.Join(f.dir, "work-"+name), Logger: discard})
		if err := w.Start(ctx); err != nil {
			t.Fatal(err)
		}
		f.waitJob(id, func(j *job.Job) bool { return j.Status == job.Running && j.WorkerID == name })
		if _, err := f.store.ReleaseWorker(context.Background(), name, time.Now(), 2); err != nil {
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

// resultEngine stands in for a tool whose run reports the files that files returns.
type resultEngine struct {
	files func(workDir string) ([]engine.File, error)
}

func (resultEngine) Name() string                              { return "results" }
func (resultEngine) Models() []string                          { return []string{"boltz2"} }
func (resultEngine) Check(context.Context, engine.Tools) error { return nil }

func (e resultEngine) Run(_ context.Context, run *engine.Run) (*engine.Output, error) {
	files, err := e.files(run.WorkDir)
	return &engine.Output{Files: files}, err
}

func structure(local string) engine.File {
	return engine.File{Local: local, Artifact: job.Artifact{Path: "t1.cif", Target: "t1", Type: job.ArtifactStructure}}
}

// runToEnd runs one job on a worker with eng and returns it once it has ended.
func runToEnd(t *testing.T, eng engine.Engine) (*fixture, *job.Job) {
	t.Helper()
	f := newFixture(t)
	f.start("w", f.server(safeLease), eng)
	id := f.submit("results")
	return f, f.waitJob(id, func(j *job.Job) bool { return j.Status.Terminal() })
}

// A tool run on a hostile input may report as its result a file outside its work folder,
// by a symlink it left there or by naming the file itself.
func TestResultFilesOutsideTheWorkFolderAreRefused(t *testing.T) {
	for _, link := range []bool{true, false} {
		t.Run(fmt.Sprintf("symlink %v", link), func(t *testing.T) {
			t.Parallel()
			secret := filepath.Join(t.TempDir(), "id_ed25519")
			if err := os.WriteFile(secret, []byte("the worker's private key"), 0o600); err != nil {
				t.Fatal(err)
			}
			f, j := runToEnd(t, resultEngine{files: func(workDir string) ([]engine.File, error) {
				if !link {
					return []engine.File{structure(secret)}, nil
				}
				planted := filepath.Join(workDir, "t1.cif")
				return []engine.File{structure(planted)}, os.Symlink(secret, planted)
			}})
			if j.Status != job.Failed || !strings.Contains(j.Error, "t1.cif") {
				t.Errorf("job ended %s with error %q, want failed naming t1.cif", j.Status, j.Error)
			}
			if strings.Contains(j.Error, secret) {
				t.Errorf("the error %q shows a path of the worker", j.Error)
			}
			if _, err := f.arts.Open(context.Background(), j.ID, j.Attempt, "t1.cif"); !errors.Is(err, artifact.ErrNotFound) {
				t.Errorf("the file outside the work folder was stored as a result: %v", err)
			}
		})
	}
}

// An archive holds each artifact at its path, so a path listed twice would make a job
// whose archive can never be built.
func TestAnArtifactListedTwiceFailsTheJob(t *testing.T) {
	t.Parallel()
	_, j := runToEnd(t, resultEngine{files: func(workDir string) ([]engine.File, error) {
		local := filepath.Join(workDir, "model_0.cif")
		return []engine.File{structure(local), structure(local)}, os.WriteFile(local, []byte("data_t1\n"), 0o644)
	}})
	if j.Status != job.Failed || !strings.Contains(j.Error, "t1.cif twice") {
		t.Errorf("job ended %s with error %q, want failed naming t1.cif twice", j.Status, j.Error)
	}
}

// slowCheckEngine's checks after the first take until the worker stops, as a tool that is
// slow to start might; checking is closed when such a check has begun.
type slowCheckEngine struct {
	*enginetest.Engine
	checks   atomic.Int32
	checking chan struct{}
}

func (e *slowCheckEngine) Check(ctx context.Context, tools engine.Tools) error {
	if e.checks.Add(1) == 2 {
		close(e.checking)
		<-ctx.Done()
	}
	return e.Engine.Check(ctx, tools)
}

// announceQueue reports every announcement of the worker.
type announceQueue struct {
	*backend.Queue
	announced chan struct{}
}

func (q *announceQueue) Announce(ctx context.Context, a worker.Announcement) (worker.Timing, error) {
	select {
	case q.announced <- struct{}{}:
	default:
	}
	return q.Queue.Announce(ctx, a)
}

func TestASlowEngineCheckDoesNotMakeTheWorkerLookDead(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	eng := &slowCheckEngine{Engine: enginetest.New("boltz2"), checking: make(chan struct{})}
	reg, err := engine.NewRegistry(eng)
	if err != nil {
		t.Fatal(err)
	}
	q := &announceQueue{Queue: f.server(300 * time.Millisecond), announced: make(chan struct{}, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	w := worker.New(worker.Config{ID: "w", Slots: 1, Engines: reg, Queue: q, WorkDir: filepath.Join(f.dir, "work"),
		Recheck: 10 * time.Millisecond, Logger: discard})
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); w.Wait() })

	timeout := time.After(20 * time.Second)
	select {
	case <-eng.checking:
	case <-timeout:
		t.Fatal("the engines were never checked again")
	}
	for range 2 { // one announcement may have been on its way before the check began
		select {
		case <-q.announced:
		case <-timeout:
			t.Fatal("the worker stopped announcing itself while an engine check ran")
		}
	}
}

func TestEachSlotRunsItsJobsOnItsOwnGPU(t *testing.T) {
	f := newFixture(t)
	first, second := f.submit("slow:5"), f.submit("slow:5")
	reg, err := engine.NewRegistry(enginetest.New("boltz2"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := worker.New(worker.Config{ID: "gpus", Slots: 2, GPUs: []string{"3", "5"}, Engines: reg,
		Queue: f.server(safeLease), WorkDir: filepath.Join(f.dir, "work-gpus"), Logger: discard})
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); w.Wait() }()

	gpus := map[string]bool{}
	for _, id := range []string{first, second} {
		if j := f.waitJob(id, func(j *job.Job) bool { return j.Status.Terminal() }); j.Status != job.Succeeded {
			t.Fatalf("job %s %s: %s", id, j.Status, j.Error)
		}
		rc, err := f.arts.OpenLog(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		log, _ := io.ReadAll(rc)
		rc.Close()
		_, after, found := strings.Cut(string(log), "outputs on GPU ")
		if !found {
			t.Fatalf("job %s's tool did not report its GPU:\n%s", id, log)
		}
		gpu, _, _ := strings.Cut(after, "\n")
		gpus[gpu] = true
	}
	if !gpus["3"] || !gpus["5"] {
		t.Fatalf("two jobs running at once in two slots saw GPUs %v, want 3 and 5", gpus)
	}
}

// panicky is an engine with a bug: it panics.
type panicky struct{}

func (panicky) Name() string                              { return "panicky" }
func (panicky) Models() []string                          { return []string{"boltz2"} }
func (panicky) Check(context.Context, engine.Tools) error { return nil }
func (panicky) Run(context.Context, *engine.Run) (*engine.Output, error) {
	var rows []map[string]any
	rows[3]["plddt"] = 1 // index out of range
	return nil, nil
}

func TestAnEnginePanicFailsItsJobAndTheWorkerGoesOn(t *testing.T) {
	f := newFixture(t)
	f.start("w", f.server(safeLease), panicky{})
	for range 2 { // the second job proves the worker survived the first panic
		id := f.submit("ok")
		j := f.waitJob(id, func(j *job.Job) bool { return j.Status.Terminal() })
		if j.Status != job.Failed || !strings.Contains(j.Error, "internal error in the panicky engine") {
			t.Fatalf("job after an engine panic: %s, error %q", j.Status, j.Error)
		}
		rc, err := f.arts.OpenLog(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		log, _ := io.ReadAll(rc)
		rc.Close()
		if !strings.Contains(string(log), "index out of range") || !strings.Contains(string(log), "goroutine") {
			t.Fatalf("the log lacks the panic and its stack:\n%s", log)
		}
	}
}

// unreachableQueue fails every heartbeat as a dropped network would, and tells when the
// worker asks for work.
type unreachableQueue struct {
	*backend.Queue
	leases chan struct{}
}

func (q *unreachableQueue) Heartbeat(context.Context, worker.Heartbeat) error {
	return errors.New("dial tcp 10.0.0.9:8080: connect: connection refused")
}

func (q *unreachableQueue) Lease(ctx context.Context, req worker.LeaseRequest) (*worker.Lease, error) {
	select {
	case q.leases <- struct{}{}:
	default: // the test is not listening
	}
	return q.Queue.Lease(ctx, req)
}

// Once its lease can no longer have been renewed, the job may run elsewhere: a worker cut
// off from the server must not go on running it.
func TestAWorkerCutOffFromTheServerStopsItsJob(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	q := &unreachableQueue{Queue: f.server(shortLease), leases: make(chan struct{})}
	f.start("cut-off", q, enginetest.New("boltz2"))
	id := f.submit("hang")
	f.waitJob(id, func(j *job.Job) bool { return j.Status == job.Running })
	select {
	case <-q.leases: // the slot is free again: the job was stopped
	case <-time.After(20 * time.Second):
		t.Fatal("the worker went on running a job whose lease it could not renew")
	}
}

// startDraining runs a worker with the test engine on a server of the fixture, for a test
// that drains and stops it.
func (f *fixture) startDraining(id string) (*worker.Worker, context.CancelFunc) {
	f.t.Helper()
	reg, err := engine.NewRegistry(enginetest.New("boltz2"))
	if err != nil {
		f.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := worker.New(worker.Config{ID: id, Slots: 1, Engines: reg, Queue: f.server(safeLease),
		WorkDir: filepath.Join(f.dir, "work-"+id), Logger: discard})
	if err := w.Start(ctx); err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { cancel(); w.Wait() })
	return w, cancel
}

// TestDrainLetsRunningJobsFinish: a draining worker finishes the job it runs and takes no
// other.
func TestDrainLetsRunningJobsFinish(t *testing.T) {
	f := newFixture(t)
	w, _ := f.startDraining("w-drain")
	id := f.submit(enginetest.Slow + ":5")
	f.waitJob(id, func(j *job.Job) bool { return j.Status == job.Running })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := w.Drain(ctx); err != nil {
		t.Fatalf("Drain: %v", err)
	}
	if j := f.waitJob(id, func(*job.Job) bool { return true }); j.Status != job.Succeeded {
		t.Errorf("after the drain the job is %s, want it finished", j.Status)
	}
}

// TestAJobStoppedAtShutdownIsHandedBack: what a drain could not wait for is stopped and
// handed back without using up an attempt.
func TestAJobStoppedAtShutdownIsHandedBack(t *testing.T) {
	f := newFixture(t)
	w, stop := f.startDraining("w-stop")
	id := f.submit(enginetest.Hang)
	f.waitJob(id, func(j *job.Job) bool { return j.Status == job.Running })
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := w.Drain(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Drain of a hanging job = %v, want the deadline", err)
	}
	stop()
	if err := w.Wait(); err != nil {
		t.Fatal(err)
	}
	j := f.waitJob(id, func(*job.Job) bool { return true })
	if j.Status != job.Queued || j.Attempt != 1 {
		t.Fatalf("after the shutdown the job is %s at attempt %d, want queued at 1", j.Status, j.Attempt)
	}
	// Its next two attempts are both lost: the hand-back did not count, so only the
	// second of them fails the job (the limit is 2).
	q := f.server(safeLease)
	for _, want := range []job.Status{job.Queued, job.Failed} {
		l, err := q.Lease(context.Background(), worker.LeaseRequest{WorkerID: "w-next", Models: []string{"boltz2"}})
		if err != nil || l == nil || l.JobID != id {
			t.Fatalf("Lease = %+v, %v", l, err)
		}
		if err := q.ReleaseWorker(context.Background(), "w-next"); err != nil {
			t.Fatal(err)
		}
		if j := f.waitJob(id, func(*job.Job) bool { return true }); j.Status != want {
			t.Fatalf("after losing attempt %d the job is %s, want %s", l.Attempt, j.Status, want)
		}
	}
}
