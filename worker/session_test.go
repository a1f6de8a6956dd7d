package worker_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/enginetest"
	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/worker"
)

// warmEngine is a warm engine whose session is a real child process kept between jobs: a
// shell loop that answers one request line per job, as a resident model driver would.
// A job named "crash" makes the driver die, "hang" makes it hang until it is stopped.
type warmEngine struct {
	// runs receives, as each job starts in a session, the pid of its driver.
	runs chan int
}

// The driver announces its pid, then answers "run <model> <name>" with
// "ok <pid> <jobs served> <model>", noting on stderr (the job's log) when it loads a model.
const driver = `echo "ready $$"
n=0
loaded=" "
while read -r cmd model name; do
  n=$((n+1))
  case "$name" in
    crash) echo "driver: fatal error while serving $model" >&2; exit 3 ;;
    hang) sleep 1000 ;;
  esac
  case "$loaded" in
    *" $model "*) ;;
    *) echo "loading $model" >&2; loaded="$loaded$model " ;;
  esac
  echo "ok $$ $n $model"
done`

func (*warmEngine) Name() string     { return "warm" }
func (*warmEngine) Models() []string { return []string{"warm-a", "warm-b"} }

func (*warmEngine) Check(context.Context, engine.Tools) error {
	_, err := exec.LookPath("sh")
	return err
}

func (e *warmEngine) Run(ctx context.Context, run *engine.Run) (*engine.Output, error) {
	return nil, errors.New("the warm test engine runs in sessions only")
}

func (e *warmEngine) Open(ctx context.Context, slot engine.Slot) (engine.Session, error) {
	p, err := slot.Start(engine.Command{Path: "sh", Args: []string{"-c", driver}})
	if err != nil {
		return nil, err
	}
	s := &warmSession{engine: e, p: p, out: bufio.NewReader(p.Stdout())}
	line, err := s.out.ReadString('\n')
	if _, pid, ok := strings.Cut(strings.TrimSpace(line), "ready "); err != nil || !ok {
		p.Stop()
		return nil, fmt.Errorf("the driver did not start: %q %v", line, err)
	} else if s.pid, err = strconv.Atoi(pid); err != nil {
		p.Stop()
		return nil, err
	}
	return s, nil
}

type warmSession struct {
	engine *warmEngine
	p      engine.Process
	out    *bufio.Reader
	pid    int

	mu      sync.Mutex
	loaded  []string
	stopped error // why the session was stopped, when it was
}

func (s *warmSession) Run(ctx context.Context, run *engine.Run) (*engine.Output, error) {
	s.p.SetLog(run.Log)
	defer s.p.SetLog(nil)
	select {
	case s.engine.runs <- s.pid:
	default: // the test is not counting runs
	}
	model := run.Job.RunModel
	if _, err := fmt.Fprintf(s.p.Stdin(), "run %s %s\n", model, run.Job.Name); err != nil {
		return nil, s.died(err)
	}
	answer := make(chan string, 1)
	go func() {
		line, _ := s.out.ReadString('\n')
		answer <- line
	}()
	select {
	case <-ctx.Done():
		// The driver cannot be interrupted mid-job: stop it.
		s.mu.Lock()
		s.stopped = fmt.Errorf("stopped mid-job: %w", context.Cause(ctx))
		s.mu.Unlock()
		s.p.Stop()
		return nil, ctx.Err()
	case line := <-answer:
		f := strings.Fields(line)
		if len(f) != 4 || f[0] != "ok" {
			return nil, s.died(fmt.Errorf("the driver answered %q", line))
		}
		s.mu.Lock()
		if !slices.Contains(s.loaded, model) {
			s.loaded = append(s.loaded, model)
		}
		s.mu.Unlock()
		// The row's id carries the driver's pid and its count of jobs served.
		return &engine.Output{Rows: []job.PredictionRow{{ID: f[1] + "/" + f[2], Status: job.RowOK}}}, nil
	}
}

// died waits for the driver's exit, when it is on its way out, and says how it ended.
func (s *warmSession) died(err error) error {
	select {
	case <-s.p.Exited():
		return fmt.Errorf("the driver died (%v)", s.p.Err())
	case <-time.After(5 * time.Second):
		return err
	}
}

func (s *warmSession) Loaded() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.loaded)
}

func (s *warmSession) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped != nil {
		return s.stopped
	}
	select {
	case <-s.p.Exited():
		return fmt.Errorf("the driver exited (%v)", s.p.Err())
	default:
		return nil
	}
}

func (s *warmSession) Close() error {
	s.p.Stop()
	return nil
}

// leaseSpy passes on every lease request the worker makes.
type leaseSpy struct {
	worker.Queue
	requests chan worker.LeaseRequest
}

func (q *leaseSpy) Lease(ctx context.Context, req worker.LeaseRequest) (*worker.Lease, error) {
	select {
	case q.requests <- req:
	default: // the test is not listening
	}
	return q.Queue.Lease(ctx, req)
}

// warmWorker is a worker with the warm engine (and the test engine for boltz2) whose
// lease requests the test sees.
type warmWorker struct {
	*fixture
	eng      *warmEngine
	requests chan worker.LeaseRequest
	stop     func()
}

func startWarm(t *testing.T) *warmWorker {
	t.Helper()
	f := newFixture(t)
	ww := &warmWorker{fixture: f, eng: &warmEngine{runs: make(chan int, 10)}, requests: make(chan worker.LeaseRequest)}
	reg, err := engine.NewRegistry(ww.eng, enginetest.New("boltz2"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := worker.New(worker.Config{ID: "warm", Slots: 1, Engines: reg, LeaseWait: 100 * time.Millisecond,
		Queue:   &leaseSpy{Queue: f.server(safeLease), requests: ww.requests},
		WorkDir: filepath.Join(f.dir, "work"), Logger: discard})
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	ww.stop = func() { once.Do(func() { cancel(); w.Wait() }) }
	t.Cleanup(ww.stop)
	return ww
}

// served runs a job of model to its end and returns the driver's pid and how many jobs
// it had served with this one.
func (w *warmWorker) served(name, model string) (pid, jobs string) {
	w.t.Helper()
	id := w.submitModel(name, model)
	j := w.waitJob(id, func(j *job.Job) bool { return j.Status.Terminal() })
	if j.Status != job.Succeeded || len(j.Results.Rows) != 1 {
		w.t.Fatalf("job %s: %s (%s), results %+v", name, j.Status, j.Error, j.Results)
	}
	pid, jobs, _ = strings.Cut(j.Results.Rows[0].ID, "/")
	return pid, jobs
}

// nextRun returns the pid of the driver that the next job starts on.
func (w *warmWorker) nextRun() int {
	w.t.Helper()
	select {
	case pid := <-w.eng.runs:
		return pid
	case <-time.After(20 * time.Second):
		w.t.Fatal("no job started in a session")
		return 0
	}
}

// loadedSoon waits for a lease request and returns the models it says are loaded.
func (w *warmWorker) loadedSoon() []string {
	w.t.Helper()
	select {
	case req := <-w.requests:
		return req.Loaded
	case <-time.After(20 * time.Second):
		w.t.Fatal("the worker asked for no work")
		return nil
	}
}

func alive(pid string) bool {
	n, err := strconv.Atoi(pid)
	return err == nil && syscall.Kill(n, 0) == nil
}

func TestAWarmSessionServesManyJobsAndReportsWhatItHasLoaded(t *testing.T) {
	t.Parallel()
	w := startWarm(t)
	if loaded := w.loadedSoon(); len(loaded) != 0 {
		t.Fatalf("before any job the worker reports %v loaded", loaded)
	}
	first, n := w.served("one", "warm-a")
	if n != "1" {
		t.Fatalf("the first job was the driver's job %s", n)
	}
	w.loadedSoon() // possibly made before the job ended
	if loaded := w.loadedSoon(); !slices.Equal(loaded, []string{"warm-a"}) {
		t.Fatalf("after a warm-a job the worker reports %v loaded, want [warm-a]", loaded)
	}
	for i, model := range []string{"warm-a", "warm-b"} {
		pid, n := w.served(fmt.Sprint("again-", i), model)
		if pid != first || n != strconv.Itoa(i+2) {
			t.Fatalf("job %d ran on driver %s as its job %s; want driver %s, job %d", i+2, pid, n, first, i+2)
		}
	}
	w.loadedSoon()
	if loaded := w.loadedSoon(); !slices.Equal(loaded, []string{"warm-a", "warm-b"}) {
		t.Fatalf("the worker reports %v loaded, want [warm-a warm-b]", loaded)
	}

	w.stop()
	if alive(first) {
		t.Fatal("the driver outlived the worker's shutdown")
	}
}

func TestADeadSessionFailsItsJobAndTheNextJobGetsAFreshOne(t *testing.T) {
	t.Parallel()
	w := startWarm(t)
	before, _ := w.served("ok", "warm-a")

	id := w.submitModel("crash", "warm-a")
	j := w.waitJob(id, func(j *job.Job) bool { return j.Status.Terminal() })
	if j.Status != job.Failed || !strings.Contains(j.Error, "fatal error while serving warm-a") {
		t.Fatalf("a job whose driver died is %s with error %q, want failed with the driver's last words", j.Status, j.Error)
	}
	after, n := w.served("ok", "warm-a")
	if after == before || n != "1" {
		t.Fatalf("the job after a crash ran on driver %s as its job %s, want a fresh driver", after, n)
	}
}

func TestCancelStopsAWarmSessionMidJob(t *testing.T) {
	t.Parallel()
	w := startWarm(t)
	id := w.submitModel("hang", "warm-a")
	hung := w.nextRun()
	w.waitJob(id, func(j *job.Job) bool { return j.Status == job.Running })
	if _, err := w.store.CancelJob(context.Background(), id, job.Owner{Kind: job.OwnerIP, ID: "10.0.0.1"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	pid, n := w.served("ok", "warm-a")
	if pid == strconv.Itoa(hung) || n != "1" {
		t.Fatalf("the job after a cancel ran on driver %s as its job %s, want a fresh driver", pid, n)
	}
	if alive(strconv.Itoa(hung)) {
		t.Fatal("the hung driver is still running after its job was canceled")
	}
}

func TestAJobOfAnotherEngineFreesTheSlotsSession(t *testing.T) {
	t.Parallel()
	w := startWarm(t)
	warm, _ := w.served("ok", "warm-a")
	id := w.submitModel("ok", "boltz2")
	if j := w.waitJob(id, func(j *job.Job) bool { return j.Status.Terminal() }); j.Status != job.Succeeded {
		t.Fatalf("the boltz2 job: %s (%s)", j.Status, j.Error)
	}
	if alive(warm) {
		t.Fatal("the warm driver still holds the slot after a job of another engine")
	}
	w.loadedSoon()
	if loaded := w.loadedSoon(); len(loaded) != 0 {
		t.Fatalf("after its session was closed the worker reports %v loaded", loaded)
	}
}
