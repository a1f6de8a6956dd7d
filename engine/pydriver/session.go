package pydriver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/job"
)

// channel is how a job talks with a driver: a slot's live session, or a driver run once.
type channel interface {
	// request sends one request; the driver answers with events up to "done" or "error".
	request(ctx context.Context, req any) error
	// next returns the driver's next event. Its error is the job's: the driver died, or
	// ctx ended (and the driver was stopped).
	next(ctx context.Context) (*event, error)
}

// closeGrace is how long a closed session's driver gets to exit on its own once its stdin
// is closed, before it is stopped.
const closeGrace = 5 * time.Second

// session is one slot's driver process (engine.Session).
type session struct {
	eng     *Engine
	proc    engine.Process
	version string // of the package, from the driver's ready event

	events   chan *event
	readErr  error // why events was closed; set before it is
	quit     chan struct{}
	quitOnce sync.Once

	// log is the log of the job being run, and sent the requests of that job so far.
	log  *logSync
	sent int

	mu       sync.Mutex
	resident []string
	loads    int
	dead     error // set once the session can take no more jobs
}

func newSession(e *Engine, p engine.Process) *session {
	s := &session{eng: e, proc: p, events: make(chan *event), quit: make(chan struct{})}
	go s.read()
	return s
}

// read passes the driver's events on until its stdout ends or the session closes.
func (s *session) read() {
	defer close(s.events)
	for {
		ev, err := readEvent(s.proc.Stdout())
		if err != nil {
			if !errors.Is(err, io.EOF) {
				s.readErr = err
			}
			return
		}
		select {
		case s.events <- ev:
		case <-s.quit:
			return
		}
	}
}

func (s *session) request(ctx context.Context, req any) error {
	if err := s.Err(); err != nil {
		return err
	}
	// The driver reads its stdin only between requests; one that died makes the write fail,
	// and next then says how it died.
	s.sent++
	return writeFrame(s.proc.Stdin(), req)
}

func (s *session) next(ctx context.Context) (*event, error) {
	select {
	case ev, ok := <-s.events:
		if !ok {
			return nil, s.died()
		}
		s.note(ev)
		if ev.Event == "done" || ev.Event == "error" {
			s.awaitLog(ctx)
		}
		return ev, nil
	case <-ctx.Done():
		s.stop(fmt.Errorf("the %s driver was stopped with its job (%w)", s.eng.name, context.Cause(ctx)))
		return nil, context.Cause(ctx)
	}
}

// logGrace bounds the wait for the driver's stderr to reach the log after its last event.
const logGrace = 2 * time.Second

// awaitLog waits until the job's log holds the end of every request sent, so that it
// holds all the driver printed for them (a traceback above all).
func (s *session) awaitLog(ctx context.Context) {
	if s.log == nil {
		return
	}
	timeout := time.After(logGrace)
	for {
		n, changed := s.log.seen()
		if n >= s.sent {
			return
		}
		select {
		case <-changed:
		case <-timeout:
			return
		case <-ctx.Done():
			return
		}
	}
}

// died is the error of a driver whose output ended: how its process ended, with the last
// lines it printed (its traceback, which the job's log holds whole).
func (s *session) died() error {
	select {
	case <-s.proc.Exited():
	case <-time.After(closeGrace):
		s.proc.Stop()
	}
	why := s.proc.Err()
	if why == nil {
		why = errors.New("exit code 0")
	}
	err := fmt.Errorf("the %s driver ended during the job: %w", s.eng.name, why)
	if s.readErr != nil {
		err = fmt.Errorf("the %s driver broke the protocol (%v) and was stopped: %w", s.eng.name, s.readErr, why)
	}
	s.stop(err)
	return err
}

// note keeps what the driver says it holds.
func (s *session) note(ev *event) {
	if ev.Resident == nil {
		return
	}
	s.mu.Lock()
	s.resident, s.loads = ev.Resident, ev.Loads
	s.mu.Unlock()
}

// stop ends the driver and marks the session dead with why, once.
func (s *session) stop(why error) {
	s.mu.Lock()
	if s.dead == nil {
		s.dead = why
	}
	s.resident = nil
	s.mu.Unlock()
	s.quitOnce.Do(func() { close(s.quit) })
	s.proc.Stop()
}

func (s *session) Run(ctx context.Context, run *engine.Run) (*engine.Output, error) {
	if err := s.Err(); err != nil {
		return nil, err
	}
	s.log, s.sent = newLogSync(run.Log), 0
	s.proc.SetLog(s.log)
	defer s.proc.SetLog(nil)
	fmt.Fprintf(run.Log, "== chaperone: %s %s, models loaded: %v (%d loads since the driver started) ==\n",
		s.eng.name, s.version, s.Loaded(), s.loadCount())
	return s.eng.runJob(ctx, run, s)
}

func (s *session) Loaded() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.resident)
}

// loadCount is how many models the driver has loaded since it started.
func (s *session) loadCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.loads
}

func (s *session) Err() error {
	s.mu.Lock()
	dead := s.dead
	s.mu.Unlock()
	if dead != nil {
		return dead
	}
	select {
	case <-s.proc.Exited():
		return fmt.Errorf("the %s driver exited: %v", s.eng.name, s.proc.Err())
	default:
		return nil
	}
}

// Close asks the driver to end by closing its stdin, and stops it if it does not.
func (s *session) Close() error {
	s.proc.Stdin().Close()
	select {
	case <-s.proc.Exited():
	case <-time.After(closeGrace):
	}
	s.stop(fmt.Errorf("the %s session is closed", s.eng.name))
	return nil
}

// onceChannel runs a driver for one job (Engine.Run): the request goes to a file, the
// driver serves that file in one run of run.Exec, and its events are read from the file it
// wrote.
type onceChannel struct {
	eng    *Engine
	run    *engine.Run
	python string

	requests bytes.Buffer
	events   io.Reader // nil until the driver has run
}

func (c *onceChannel) request(_ context.Context, req any) error {
	return writeFrame(&c.requests, req)
}

func (c *onceChannel) next(ctx context.Context) (*event, error) {
	if c.events == nil {
		if err := c.serve(ctx); err != nil {
			return nil, err
		}
	}
	ev, err := readEvent(c.events)
	if errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("the %s driver ended without finishing the job", c.eng.name)
	}
	return ev, err
}

func (c *onceChannel) serve(ctx context.Context) error {
	dir := filepath.Join(c.run.WorkDir, ".driver")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	script, requests, events := filepath.Join(dir, "driver.py"), filepath.Join(dir, "requests"), filepath.Join(dir, "events")
	if err := os.WriteFile(script, driverSource, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(requests, c.requests.Bytes(), 0o644); err != nil {
		return err
	}
	exit := c.run.Exec(ctx, engine.Command{Path: c.python, Args: []string{script, c.eng.name, "once", requests, events}})
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	raw, err := os.ReadFile(events)
	if err != nil {
		return fmt.Errorf("the %s driver wrote no events (%v): %w", c.eng.name, exit, err)
	}
	c.events = bytes.NewReader(raw)
	if ev, err := readEvent(c.events); err != nil || ev.Event != "ready" {
		return fmt.Errorf("the %s driver did not start (%v)", c.eng.name, exit)
	}
	return nil
}

// exchange sends one request and hands each event to handle until the driver is done. An
// error event is the job's error; an error of handle is too, once the driver has finished
// the request (so the next job finds it waiting for a request).
func exchange(ctx context.Context, run *engine.Run, ch channel, req any, handle func(*event) error) (*event, error) {
	if err := ch.request(ctx, req); err != nil {
		return nil, err
	}
	var failed error
	for {
		ev, err := ch.next(ctx)
		if err != nil {
			return nil, err
		}
		switch ev.Event {
		case "loading":
			fmt.Fprintf(run.Log, "== chaperone: loading %s ==\n", ev.Model)
			run.Report(job.Progress{Stage: job.StageStarting, Total: run.Job.Total})
		case "loaded":
			fmt.Fprintf(run.Log, "== chaperone: %s loaded; resident: %v ==\n", ev.Model, ev.Resident)
		case "error":
			if ev.Sequence != "" {
				return nil, fmt.Errorf("%s failed on sequence %s: %s", run.Job.Model, ev.Sequence, oomNote(ev))
			}
			return nil, fmt.Errorf("%s failed: %s", run.Job.Model, oomNote(ev))
		case "done":
			return ev, failed
		default:
			if failed == nil {
				failed = handle(ev)
			}
		}
	}
}

func oomNote(ev *event) string {
	if ev.OOM {
		return "out of memory: " + ev.Message
	}
	return ev.Message
}

// runJob runs one job of the engine's models over ch.
func (e *Engine) runJob(ctx context.Context, run *engine.Run, ch channel) (*engine.Output, error) {
	m, ok := e.model(run.Job.RunModel)
	if !ok {
		return nil, fmt.Errorf("the %s engine does not serve %s", e.name, run.Job.RunModel)
	}
	if m.dModel > 0 {
		return e.embed(ctx, run, ch, m)
	}
	return e.fold(ctx, run, ch, m)
}
