package proc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/internal/execfile"
)

// TestMain lets the test binary play a worker for TestWorkerDeath.
func TestMain(m *testing.M) {
	if os.Getenv("PROC_TEST_WORKER") == "1" {
		os.Exit(fakeWorker())
	}
	os.Exit(m.Run())
}

// result is what one Exec produced.
type result struct {
	log   string
	lines []string
	err   error
}

// run executes a shell script through Exec in a fresh folder.
func run(t *testing.T, script string, env ...string) result {
	t.Helper()
	return runIn(t.Context(), t, t.TempDir(), script, env...)
}

func runIn(ctx context.Context, t *testing.T, dir, script string, env ...string) result {
	t.Helper()
	var log bytes.Buffer
	var r result
	r.err = Exec(ctx, dir, &log, sh(script, env, func(l string) { r.lines = append(r.lines, l) }))
	r.log = log.String()
	return r
}

func sh(script string, env []string, onLine func(string)) engine.Command {
	return engine.Command{Path: "/bin/sh", Args: []string{"-c", script}, Env: env, OnLine: onLine}
}

func TestExecStreamsLines(t *testing.T) {
	t.Parallel()
	var want strings.Builder
	var wantLines []string
	for i := 1; i <= 200; i++ {
		fmt.Fprintf(&want, "out %d\nerr %d\n", i, i)
		wantLines = append(wantLines, fmt.Sprintf("out %d", i), fmt.Sprintf("err %d", i))
	}
	for _, tt := range []struct {
		name   string
		script string
		log    string
		lines  []string
	}{
		{
			name:   "stdout and stderr interleaved in order",
			script: `i=1; while [ $i -le 200 ]; do echo "out $i"; echo "err $i" >&2; i=$((i+1)); done`,
			log:    want.String(),
			lines:  wantLines,
		},
		{
			name:   "partial last line",
			script: `printf 'one\ntwo'`,
			log:    "one\ntwo",
			lines:  []string{"one", "two"},
		},
		{
			name:   "carriage returns",
			script: `printf 'a\rb\r\nc\n\rd'`,
			log:    "a\rb\r\nc\n\rd",
			lines:  []string{"a", "b", "c", "", "d"},
		},
		{
			name:   "empty lines kept",
			script: `printf '\n\nx\n'`,
			log:    "\n\nx\n",
			lines:  []string{"", "", "x"},
		},
		{
			name:   "no output",
			script: `true`,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := run(t, tt.script)
			if r.err != nil {
				t.Fatal(r.err)
			}
			if r.log != tt.log {
				t.Errorf("log = %q, want %q", r.log, tt.log)
			}
			if strings.Join(r.lines, "|") != strings.Join(tt.lines, "|") || len(r.lines) != len(tt.lines) {
				t.Errorf("lines = %q, want %q", r.lines, tt.lines)
			}
		})
	}
}

// TestExecLogWritesAreLines checks that each Write to the log is whole lines, so notes
// written to the same log by the engine never land inside a line of the tool's.
func TestExecLogWritesAreLines(t *testing.T) {
	t.Parallel()
	w := &writes{}
	err := Exec(t.Context(), t.TempDir(), w, sh(`for i in 1 2 3; do echo "line $i"; done; echo err >&2`, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"line 1\n", "line 2\n", "line 3\n", "err\n"}; strings.Join(w.list, "|") != strings.Join(want, "|") {
		t.Errorf("log writes = %q, want %q", w.list, want)
	}
}

func TestExecEnvAndDir(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		env  []string
		want []string
	}{
		{"defaults", nil, []string{"", "1"}},
		{"added", []string{"FOO=bar"}, []string{"bar", "1"}},
		{"python buffering overridden", []string{"PYTHONUNBUFFERED=0"}, []string{"", "0"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			r := runIn(t.Context(), t, dir, `pwd; echo "$FOO"; echo "$PYTHONUNBUFFERED"; echo "$HOME"`, tt.env...)
			if r.err != nil {
				t.Fatal(r.err)
			}
			want := append(append([]string{dir}, tt.want...), os.Getenv("HOME"))
			if strings.Join(r.lines, "|") != strings.Join(want, "|") {
				t.Errorf("lines = %q, want %q", r.lines, want)
			}
		})
	}
}

func TestExecExitError(t *testing.T) {
	t.Parallel()
	var hundred strings.Builder
	for i := 1; i <= 100; i++ {
		fmt.Fprintf(&hundred, "line %d\n", i)
	}
	for _, tt := range []struct {
		name     string
		script   string
		code     int
		signal   string
		tail     string
		contains []string
	}{
		{
			name:     "exit code",
			script:   `echo one; echo two >&2; exit 3`,
			code:     3,
			tail:     "one\ntwo",
			contains: []string{"exit code 3", "two"},
		},
		{
			name:   "tail keeps the last lines",
			script: `printf '` + hundred.String() + `'; exit 1`,
			code:   1,
			tail:   lines(86, 100),
		},
		{
			name:     "killed by a signal",
			script:   `echo dying; kill -KILL $$`,
			code:     -1,
			signal:   "SIGKILL",
			tail:     "dying",
			contains: []string{"killed by SIGKILL", "dying"},
		},
		{
			name:     "killed by a signal the supervisor's runtime handles",
			script:   `kill -SEGV $$`,
			code:     -1,
			signal:   "SIGSEGV",
			contains: []string{"killed by SIGSEGV"},
		},
		{
			name:   "colours and progress redraws left out",
			script: `printf 'start\n\033[31mError:\033[0m boom\n\r 10%%\r 50%%\r 90%%\rTraceback: bad\n\n  \n'; exit 2`,
			code:   2,
			tail:   "start\nError: boom\nTraceback: bad",
		},
		{
			name:   "no output",
			script: `exit 7`,
			code:   7,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := run(t, tt.script)
			var ee *ExitError
			if !errors.As(r.err, &ee) {
				t.Fatalf("err = %v, want *ExitError", r.err)
			}
			if ee.Code != tt.code || ee.Signal != tt.signal || ee.Tail != tt.tail {
				t.Errorf("got code %d signal %q tail %q; want %d %q %q", ee.Code, ee.Signal, ee.Tail, tt.code, tt.signal, tt.tail)
			}
			for _, s := range tt.contains {
				if !strings.Contains(ee.Error(), s) {
					t.Errorf("message %q does not contain %q", ee.Error(), s)
				}
			}
		})
	}
}

func lines(from, to int) string {
	var l []string
	for i := from; i <= to; i++ {
		l = append(l, fmt.Sprintf("line %d", i))
	}
	return strings.Join(l, "\n")
}

func TestExecLongLine(t *testing.T) {
	t.Parallel()
	const long, last = 1_000_000, 200_000
	r := run(t, fmt.Sprintf(`head -c %d /dev/zero | tr '\0' x; echo; echo short; head -c %d /dev/zero | tr '\0' y`, long, last))
	if r.err != nil {
		t.Fatal(r.err)
	}
	if want := strings.Repeat("x", long) + "\nshort\n" + strings.Repeat("y", last); r.log != want {
		t.Errorf("log has %d bytes, want all %d", len(r.log), len(want))
	}
	want := []string{strings.Repeat("x", MaxLine), "short", strings.Repeat("y", MaxLine)}
	if len(r.lines) != len(want) {
		t.Fatalf("%d lines, want %d", len(r.lines), len(want))
	}
	for i := range want {
		if r.lines[i] != want[i] {
			t.Errorf("line %d: %d bytes starting %q, want %d", i, len(r.lines[i]), r.lines[i][:min(10, len(r.lines[i]))], len(want[i]))
		}
	}
}

func TestExecNotFound(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "folder"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"chaperone-no-such-tool", "/nonexistent/bin/tool", "./missing", "folder", "./folder", ""} {
		err := Exec(t.Context(), dir, io.Discard, engine.Command{Path: name})
		if !errors.Is(err, exec.ErrNotFound) {
			t.Errorf("Exec(%q) err = %v, want exec.ErrNotFound", name, err)
		}
		if !strings.Contains(err.Error(), fmt.Sprintf("%q", name)) && name != "" {
			t.Errorf("Exec(%q) err = %v, does not name the command", name, err)
		}
	}
	err := Exec(t.Context(), filepath.Join(dir, "nope"), io.Discard, engine.Command{Path: "/bin/sh"})
	if err == nil || errors.Is(err, exec.ErrNotFound) {
		t.Errorf("missing work folder: err = %v, want a folder error", err)
	}
}

func TestExecUnstartable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tool"), []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := Exec(t.Context(), dir, io.Discard, engine.Command{Path: "./tool"})
	var ee *ExitError
	if err == nil || errors.As(err, &ee) || !strings.Contains(err.Error(), "proc: start ./tool") || !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("Exec of a file that is not executable: err = %v, want a start error", err)
	}
}

func TestExecRelativePathIsInDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := execfile.Write(filepath.Join(dir, "tool.sh"), "#!/bin/sh\necho from tool\n"); err != nil {
		t.Fatal(err)
	}
	var lines []string
	err := Exec(t.Context(), dir, io.Discard, engine.Command{Path: "./tool.sh", OnLine: func(l string) { lines = append(lines, l) }})
	if err != nil || len(lines) != 1 || lines[0] != "from tool" {
		t.Errorf("err %v, lines %q", err, lines)
	}
}

func TestExecAlreadyCanceled(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	r := runIn(ctx, t, dir, `touch started`)
	if !errors.Is(r.err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", r.err)
	}
	if _, err := os.Stat(filepath.Join(dir, "started")); err == nil {
		t.Error("the command ran although the context had ended")
	}
}

func TestExecLogError(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	broken := errors.New("disk full")
	err := Exec(t.Context(), dir, failWriter{broken}, sh(`echo hello; touch finished`, nil, nil))
	if !errors.Is(err, broken) {
		t.Errorf("err = %v, want the log's error", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "finished")); err != nil {
		t.Error("a failing log stopped the tool")
	}
}

// TestExecCancel cancels while the tool runs and checks that every process of its tree is
// gone within Grace (plus a second for the kernel), however the tree treats SIGTERM.
func TestExecCancel(t *testing.T) {
	t.Parallel()
	errCap := errors.New("runtime cap of 600 s reached")
	for _, tt := range []struct {
		name   string
		script string
		// fast is true when SIGTERM alone stops the tree, so Exec must not wait out Grace.
		fast bool
	}{
		{"tree honours TERM", `sleep 1000 & echo $! > pid; echo ready; wait`, true},
		{"grandchild ignores TERM", `trap "" TERM; sleep 1000 & echo $! > pid; echo ready; wait`, false},
		// Once the child has gone and nothing holds the output, no grace is due.
		{"grandchild ignores TERM, output closed", `(trap "" TERM; exec sleep 1000) >/dev/null 2>&1 & echo $! > pid; echo ready; wait`, true},
		{"child ignores TERM, grandchild honours it", `trap "" TERM; (trap - TERM; exec sleep 1000) & echo $! > pid; echo ready; while :; do wait; done`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			ctx, cancel := context.WithCancelCause(t.Context())
			defer cancel(nil)
			ready := make(chan struct{})
			var once sync.Once
			res := make(chan error, 1)
			go func() {
				res <- Exec(ctx, dir, io.Discard, sh(tt.script, nil, func(l string) {
					if l == "ready" {
						once.Do(func() { close(ready) })
					}
				}))
			}()
			waitFor(t, ready, 10*time.Second, "the tool to start")
			pid := readPid(t, filepath.Join(dir, "pid"))
			if !alive(pid) {
				t.Fatalf("grandchild %d not running before cancel", pid)
			}
			canceled := time.Now()
			cancel(errCap)
			var err error
			select {
			case err = <-res:
			case <-time.After(Grace + 5*time.Second):
				t.Fatal("Exec did not return after cancel")
			}
			took := time.Since(canceled)
			if !errors.Is(err, context.Canceled) || !errors.Is(err, errCap) {
				t.Errorf("err = %v, want context.Canceled and the cause", err)
			}
			if !waitDead(t, pid, time.Until(canceled.Add(Grace+time.Second))) {
				t.Errorf("grandchild %d still alive %v after cancel", pid, Grace+time.Second)
			}
			if tt.fast && took > Grace/2 {
				t.Errorf("Exec took %v to stop a tree that honours SIGTERM", took)
			}
			if !tt.fast && took < Grace {
				t.Errorf("Exec returned after %v, before the grace period ended", took)
			}
		})
	}
}

// TestExecLeftovers lets the tool exit while processes it started live on: they must not
// outlive Exec (beyond the kernel's delivery of the last SIGKILL).
func TestExecLeftovers(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		script string
	}{
		{"background holds output", `sleep 1000 & echo $! > pid`},
		{"background output closed", `sleep 1000 >/dev/null 2>&1 & echo $! > pid`},
		{"background ignores TERM", `trap "" TERM; sleep 1000 & echo $! > pid`},
		{"background ignores TERM, output closed", `trap "" TERM; sleep 1000 >/dev/null 2>&1 & echo $! > pid`},
		{"exit code kept", `sleep 1000 & echo $! > pid; exit 4`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			start := time.Now()
			r := runIn(t.Context(), t, dir, tt.script)
			var ee *ExitError
			if strings.Contains(tt.script, "exit 4") {
				if !errors.As(r.err, &ee) || ee.Code != 4 {
					t.Errorf("err = %v, want exit code 4", r.err)
				}
			} else if r.err != nil {
				t.Errorf("err = %v", r.err)
			}
			pid := readPid(t, filepath.Join(dir, "pid"))
			if !waitDead(t, pid, time.Second) {
				t.Errorf("background process %d still alive after Exec returned", pid)
			}
			if took := time.Since(start); took > Grace+2*time.Second {
				t.Errorf("Exec took %v", took)
			}
		})
	}
}

// TestExecEscapedDescendant: a process that left the group and holds the output open is
// beyond reach; Exec must still return, and say so in the log.
func TestExecEscapedDescendant(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("setsid not installed")
	}
	dir := t.TempDir()
	start := time.Now()
	// The fifo holds the tool until the escapee has its own session; without it the tool
	// could exit first and the group kill would catch the escapee before it escaped.
	r := runIn(t.Context(), t, dir, `mkfifo escaped; setsid sh -c 'echo $$ > pid; echo > escaped; exec sleep 1000' & read x < escaped; echo started`)
	pid := readPid(t, filepath.Join(dir, "pid"))
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	if r.err != nil {
		t.Errorf("err = %v", r.err)
	}
	if took := time.Since(start); took > Grace+drainTimeout+2*time.Second {
		t.Errorf("Exec took %v", took)
	}
	if !strings.Contains(r.log, "left its process group") {
		t.Errorf("log does not mention the escaped process: %q", r.log)
	}
}

// TestExecFlushesPartialLine checks that output without a newline reaches the log while
// the tool still runs.
func TestExecFlushesPartialLine(t *testing.T) {
	t.Parallel()
	w := &notifyWriter{want: "prompt> ", seen: make(chan struct{})}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	res := make(chan error, 1)
	go func() { res <- Exec(ctx, t.TempDir(), w, sh(`printf 'prompt> '; exec sleep 1000`, nil, nil)) }()
	waitFor(t, w.seen, 5*time.Second, "the partial line in the log")
	cancel()
	if err := <-res; !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v", err)
	}
}

// TestWorkerDeath SIGKILLs a worker (this test binary, re-run as fakeWorker) in the middle
// of a job. The tool and every process it started must end within the grace, however they
// hid: in the background, ignoring SIGTERM, or in a session of their own; under Exec for
// a job or Start for a warm session.
func TestWorkerDeath(t *testing.T) {
	t.Parallel()
	const grace = 500 * time.Millisecond
	for _, tc := range []struct{ name, how, grandchild string }{
		{"silent grandchild", "exec", `sleep 1000 &`},
		{"grandchild ignoring SIGTERM", "exec", `(trap '' TERM; exec sleep 1000) &`},
		{"grandchild in its own session", "exec", `setsid sleep 1000 &`},
		{"grandchild of a warm session's process", "start", `(trap '' TERM; exec sleep 1000) &`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			child, grandchild := startAndKillWorker(t, tc.how, grace, tc.grandchild+` echo "grandchild $!"; echo "child $$"; wait`)
			for name, pid := range map[string]int{"tool": child, "grandchild": grandchild} {
				if !waitDead(t, pid, grace+3*time.Second) {
					syscall.Kill(pid, syscall.SIGKILL)
					t.Errorf("the %s (pid %d) outlived its SIGKILLed worker by more than the grace", name, pid)
				}
			}
		})
	}
}

// startAndKillWorker runs script by Exec or Start (how is "exec" or "start") in a fake
// worker with the given grace, waits for
// the script to print "child PID" and "grandchild PID", SIGKILLs the worker and returns
// the two pids.
func startAndKillWorker(t *testing.T, how string, grace time.Duration, script string) (child, grandchild int) {
	t.Helper()
	worker := exec.Command(os.Args[0], "-test.run=^$")
	worker.Env = append(os.Environ(), "PROC_TEST_WORKER=1", "PROC_TEST_DIR="+t.TempDir(),
		"PROC_TEST_GRACE="+grace.String(), "PROC_TEST_HOW="+how, "PROC_TEST_SCRIPT="+script)
	out, err := worker.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := worker.Start(); err != nil {
		t.Fatal(err)
	}
	defer worker.Wait()
	pids := map[string]int{}
	sc := bufio.NewScanner(out)
	for len(pids) < 2 && sc.Scan() {
		if name, pid, ok := strings.Cut(sc.Text(), " "); ok {
			pids[name], _ = strconv.Atoi(pid)
		}
	}
	child, grandchild = pids["child"], pids["grandchild"]
	if child == 0 || grandchild == 0 {
		worker.Process.Kill()
		t.Fatalf("worker did not report its processes: %v", pids)
	}
	if err := worker.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	return child, grandchild
}

func fakeWorker() int {
	grace, err := time.ParseDuration(os.Getenv("PROC_TEST_GRACE"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	Grace = grace
	dir, c := os.Getenv("PROC_TEST_DIR"), sh(os.Getenv("PROC_TEST_SCRIPT"), nil, nil)
	if os.Getenv("PROC_TEST_HOW") == "start" {
		p, err := Start(dir, c)
		if err == nil {
			_, err = io.Copy(os.Stdout, p.Stdout())
		}
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Fprintln(os.Stderr, Exec(context.Background(), dir, os.Stdout, c))
	return 1
}

// alive reports whether pid runs (a zombie does not count).
func alive(pid int) bool {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	n, _ := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 0)
	return n == 0
}

// waitDead waits up to timeout for pid to exit, on a pidfd that becomes readable when it
// does, and reports whether it did.
func waitDead(t *testing.T, pid int, timeout time.Duration) bool {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return true
	}
	if err != nil {
		t.Fatalf("pidfd_open %d: %v", pid, err)
	}
	defer unix.Close(fd)
	deadline := time.Now().Add(timeout)
	for {
		ms := max(0, int(time.Until(deadline).Milliseconds()))
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, ms)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			t.Fatalf("poll pidfd: %v", err)
		}
		return n > 0
	}
}

func waitFor(t *testing.T, ch <-chan struct{}, timeout time.Duration, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(timeout):
		t.Fatalf("timed out waiting for %s", what)
	}
}

func readPid(t *testing.T, name string) int {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("pid file: %v", err)
	}
	return pid
}

// writes records each Write separately.
type writes struct{ list []string }

func (w *writes) Write(p []byte) (int, error) {
	w.list = append(w.list, string(p))
	return len(p), nil
}

type failWriter struct{ err error }

func (w failWriter) Write([]byte) (int, error) { return 0, w.err }

// notifyWriter closes seen once the log holds want.
type notifyWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want string
	seen chan struct{}
}

func (w *notifyWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	had := strings.Contains(w.buf.String(), w.want)
	w.buf.Write(p)
	if !had && strings.Contains(w.buf.String(), w.want) {
		close(w.seen)
	}
	return len(p), nil
}

// TestStreamerChunking feeds output split at every possible point, as a pipe may deliver
// it, and expects the same lines and log as when it comes in one piece.
func TestStreamerChunking(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in    string
		lines []string
	}{
		{"a\nb\n", []string{"a", "b"}},
		{"a\r\nb", []string{"a", "b"}},
		{"a\rb\r", []string{"a", "b"}},
		{"\r\r\n\n", []string{"", "", ""}},
		{"10%\r20%\r\ndone\n", []string{"10%", "20%", "done"}},
		{"x", []string{"x"}},
		{"", nil},
	} {
		for split := 0; split <= len(tt.in); split++ {
			var log bytes.Buffer
			var got []string
			s := &streamer{log: &log, onLine: func(l string) { got = append(got, l) }}
			s.feed([]byte(tt.in[:split]))
			s.feed([]byte(tt.in[split:]))
			s.finish()
			if log.String() != tt.in || strings.Join(got, "|") != strings.Join(tt.lines, "|") || len(got) != len(tt.lines) {
				t.Errorf("%q split at %d: lines %q log %q; want %q", tt.in, split, got, log.String(), tt.lines)
			}
		}
	}
}

// FuzzStreamer checks the streamer's invariants on any output split anywhere: the log gets
// every byte unchanged, and lines carry no terminators and respect MaxLine.
func FuzzStreamer(f *testing.F) {
	f.Add([]byte("a\r\nb\rc\n"), uint16(3))
	f.Add([]byte("\r\r\n\n"), uint16(1))
	f.Fuzz(func(t *testing.T, in []byte, split uint16) {
		at := int(split) % (len(in) + 1)
		var log bytes.Buffer
		s := &streamer{log: &log, onLine: func(l string) {
			if strings.ContainsAny(l, "\r\n") || len(l) > MaxLine {
				t.Errorf("bad line %q", l)
			}
		}}
		s.feed(in[:at])
		s.feed(in[at:])
		s.finish()
		if !bytes.Equal(log.Bytes(), in) {
			t.Errorf("log %q, want %q", log.Bytes(), in)
		}
	})
}
