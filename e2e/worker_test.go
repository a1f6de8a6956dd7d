package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/apikey"
	"github.com/chaperone-bio/chaperone/app"
	"github.com/chaperone-bio/chaperone/catalog"
	"github.com/chaperone-bio/chaperone/store"
)

// The remote worker's ends and its start, as its operator sees them: `chaperone worker` in a
// process of its own, its exit status and what it writes.

// workerProc is a running `chaperone worker`.
type workerProc struct {
	cmd    *exec.Cmd
	out    *syncBuffer
	exited chan struct{}
}

// startWorkerProc starts `chaperone worker` on url with token; it has no tools, so it
// offers nothing and only announces itself and leases.
func startWorkerProc(t *testing.T, url, token, id string) *workerProc {
	t.Helper()
	w := &workerProc{out: &syncBuffer{}, exited: make(chan struct{})}
	w.cmd = exec.Command(chaperoneBinary(t), "worker", "--server", url, "--token", token, "--id", id,
		"--data", t.TempDir(), "--slots", "1")
	w.cmd.Stdout, w.cmd.Stderr = w.out, w.out
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { w.cmd.Wait(); close(w.exited) }()
	t.Cleanup(func() {
		w.cmd.Process.Kill()
		<-w.exited
		if t.Failed() {
			t.Logf("worker output:\n%s", w.out)
		}
	})
	return w
}

// exit waits for the worker to end by itself and returns its exit status and output.
func (w *workerProc) exit(t *testing.T, within time.Duration) (int, string) {
	t.Helper()
	select {
	case <-w.exited:
	case <-time.After(within):
		t.Fatalf("the worker still runs after %s:\n%s", within, w.out)
	}
	return w.cmd.ProcessState.ExitCode(), w.out.String()
}

// syncBuffer is a bytes.Buffer that a process writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// workerToken issues a worker token on s.
func (s *server) workerToken(name string) (token string, rec store.Key) {
	s.t.Helper()
	token, rec = apikey.New(name, time.Now())
	rec.Worker = true
	if err := s.Store.CreateKey(context.Background(), rec); err != nil {
		s.t.Fatal(err)
	}
	return token, rec
}

// live reports whether the server counts the worker of that id as live.
func (s *server) live(id string) bool {
	ws, err := s.Store.LiveWorkers(context.Background(), time.Now().Add(-time.Minute))
	return err == nil && slices.ContainsFunc(ws, func(w store.Worker) bool { return strings.HasSuffix(w.ID, "/"+id) })
}

// lastLine is the last line of out.
func lastLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return lines[len(lines)-1]
}

func TestAWorkerWithARefusedTokenStopsInOneLine(t *testing.T) {
	t.Parallel()
	s := startServer(t, withoutWorker())
	w := startWorkerProc(t, s.URL, "chp_live_"+strings.Repeat("0", 32), "stranger")
	code, out := w.exit(t, 30*time.Second)
	want := "chaperone: the server at " + s.URL + " refused this worker token: it is unknown, revoked, or an API key rather than a worker token"
	mustf(t, code == 1 && strings.HasPrefix(lastLine(out), want) && strings.Count(out, "refused") == 1,
		"a worker with a token the server does not know: exit %d, output:\n%s\nwant exit 1 and one line starting %q", code, out, want)
}

func TestARevokedWorkerStopsInOneLine(t *testing.T) {
	t.Parallel()
	s := startServer(t, withoutWorker())
	token, rec := s.workerToken("gpu-node-1")
	w := startWorkerProc(t, s.URL, token, "revoked")
	eventually(t, 30*time.Second, "the worker announced", func() bool { return s.live("revoked") })
	if err := s.Store.RevokeKey(context.Background(), rec.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	code, out := w.exit(t, 30*time.Second)
	mustf(t, code == 1 && lastLine(out) == "chaperone: "+workerErrRevoked && strings.Count(out, "refused") == 0 &&
		!strings.Contains(out, `"level":"WARN"`), "a worker whose token was revoked: exit %d, output:\n%s\nwant exit 1, the line %q and no warnings",
		code, out, "chaperone: "+workerErrRevoked)
}

// workerErrRevoked is worker.ErrRevoked as the worker says it.
const workerErrRevoked = "the server no longer accepts this worker's token: it was revoked, so the worker stopped " +
	"(the jobs it held go back to the queue once their leases run out)"

func TestAWorkerWaitsForItsServer(t *testing.T) {
	t.Parallel()
	// An address nothing listens on yet: the server comes up there later.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	token, rec := apikey.New("late", time.Now())
	rec.Worker = true
	w := startWorkerProc(t, "http://"+addr, token, "early")
	eventually(t, 30*time.Second, "the worker saying what it waits for", func() bool {
		return strings.Contains(w.out.String(), `"msg":"waiting for the server to answer; trying again","server":"http://`+addr+`","in":"1s"`)
	})

	dir := t.TempDir()
	stores, err := app.OpenStores(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stores.Close() })
	if err := stores.Jobs.CreateKey(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	a, err := app.Start(context.Background(), app.Config{Store: stores.Jobs, Artifacts: stores.Artifacts, Addr: addr, DataDir: dir,
		NoWorker: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Limits: catalog.DefaultLimits()})
	if err != nil {
		t.Fatalf("starting the server on %s: %v", addr, err)
	}
	t.Cleanup(func() { a.Close() })
	eventually(t, 30*time.Second, "the worker announced once the server answered", func() bool {
		ws, err := a.Store.LiveWorkers(context.Background(), time.Now().Add(-time.Minute))
		return err == nil && len(ws) == 1 && ws[0].ID == fmt.Sprintf("%s/early", rec.Name)
	})
	select {
	case <-w.exited:
		t.Fatalf("the worker ended:\n%s", w.out)
	default:
	}
}
