// Package proc supervises the external processes that engines run: it starts a tool in
// its own process group, streams its output line by line into the job log, and makes sure
// that when the job ends — finished, failed, canceled or past a cap — no process the tool
// started is left running.
// Start does the same for the long-lived process of a warm engine's session, which serves
// many jobs and ends only when it is stopped or dies.
//
// What is and is not covered:
//
//   - Cancel (ctx done): the whole group gets SIGTERM, then SIGKILL after Grace, so
//     children and grandchildren go too, even those that ignore SIGTERM.
//   - The tool exits on its own but leaves background processes in its group (a data
//     loader, a server it forked): they get SIGTERM at once and SIGKILL after Grace (or as
//     soon as they have all closed the output pipe), so a finished job holds no GPU memory.
//   - A descendant that leaves the group (setsid, double-fork daemons) is out of reach of
//     group signals. Exec stops waiting for it to close the output pipe shortly after the
//     group is killed, notes that in the log, and returns; the process itself lives on.
//   - The worker itself is SIGKILLed (or crashes): every tool runs under a supervisor,
//     the worker's own binary run again as the tool's parent (supervise.go), which the
//     kernel sends SIGTERM when the worker dies (Pdeathsig). As a child subreaper it
//     inherits the tool's orphans, so it finds every descendant, even one that left the
//     group or the session, and sends them SIGTERM, SIGKILL after Grace, and exits when
//     none is left. This needs no restart of the worker. Only a SIGKILL of the supervisor
//     itself, together with the worker, leaves the tool's descendants to init; for that
//     the worker marks every process it starts with an environment variable and, when it
//     restarts, kills the processes that carry its marker (package worker). Running the
//     worker under systemd (the default KillMode=control-group kills the whole cgroup) or
//     in a container covers the case from outside as well.
//
// A binary that imports this package becomes a supervisor when its environment says so,
// in this package's init, before its main or TestMain runs.
//
// It lives under engine because it carries out what engine.Run promises an engine (Exec,
// and Start for a warm session): the worker runs every tool through it, and so do the
// engines' own tests and their conformance suite, which must not depend on the worker.
// It imports engine for the Command and Process types and nothing else of chaperone's.
package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/chaperone-bio/chaperone/engine"
)

// Grace is how long a process group has between SIGTERM and SIGKILL. Set it once at start
// up, before any Exec; it is read when Exec starts a process.
var Grace = 2 * time.Second

const (
	// MaxLine caps a line handed to OnLine and kept for the error tail; the log still gets
	// every byte. A tool printing megabytes without a newline must not grow memory.
	MaxLine = 64 << 10

	// drainTimeout is how long Exec waits for the output pipe to close after the group was
	// killed and the direct child has exited. Only a descendant that left the group can
	// still hold it then.
	drainTimeout = time.Second

	// tailLines and tailLineLen bound the output quoted in an ExitError.
	tailLines   = 15
	tailLineLen = 400
)

// ExitError is a process that exited unsuccessfully on its own: a non-zero status, or a
// signal that Exec did not send. Engines surface it as the job's error.
type ExitError struct {
	Code   int    // exit status; -1 when killed by a signal
	Signal string // "SIGSEGV", "SIGKILL" (often the OOM killer); empty for a normal exit
	Tail   string // the last lines of output, the usual place of the tool's own error
}

func (e *ExitError) Error() string {
	var s string
	if e.Signal != "" {
		s = "killed by " + e.Signal
	} else {
		s = "exit code " + strconv.Itoa(e.Code)
	}
	if e.Tail != "" {
		s += "; last output:\n" + e.Tail
	}
	return s
}

// Exec runs c.Path with c.Args in dir and returns when it has ended. The environment is
// the worker's, with PYTHONUNBUFFERED=1 as a default (the tools are Python programs, and
// block-buffered output would arrive in late bursts: no live log, no progress, a false
// stall), and c.Env on top. c.Path is looked up in the worker's PATH, not in c.Env's.
//
// Standard output and standard error share one pipe, so their lines reach log in the
// order the tool wrote them. A line ends at "\n", "\r\n" or a lone "\r" (progress bars
// redraw with "\r"); each is written to log in one Write and then passed, without its
// terminator and cut at MaxLine, to c.OnLine. A partial line is written to the log after a
// short quiet spell, so the log keeps up with a tool that prints a prompt and then works.
//
// Exec returns nil on exit status 0; an *ExitError on failure; an error wrapping
// ctx.Err() (and the context's cause) when ctx ended first, whatever the exit status; an
// error wrapping exec.ErrNotFound when the command does not exist; and an error wrapping
// the log's when writing to log failed (the tool still runs to its end).
func Exec(ctx context.Context, dir string, log io.Writer, c engine.Command) error {
	if err := ctx.Err(); err != nil {
		return stopped(ctx)
	}
	grace := Grace
	if st, err := os.Stat(dir); err != nil {
		return fmt.Errorf("proc: work folder: %w", err)
	} else if !st.IsDir() {
		return fmt.Errorf("proc: work folder %q is not a folder", dir)
	}
	path, err := resolve(c.Path, dir)
	if err != nil {
		return err
	}

	// One pipe for both streams keeps their relative order. os.Pipe opens it close-on-exec,
	// so tools started at the same time by other jobs do not inherit it and hold it open.
	pr, pw, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("proc: %w", err)
	}
	defer pr.Close()
	cmd := supervised(path, c.Args, dir, c.Env, grace)
	cmd.Stdout, cmd.Stderr = pw, pw // stdin stays /dev/null: nobody answers a prompt
	// Pdeathsig fires when the thread that forked the child exits, not the process, and Go
	// does end threads (one whose goroutine exits while locked to it), which would kill the
	// tool mid-job. Pinning this goroutine to its thread until the child has exited means
	// the thread cannot end first.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	err = startSupervised(cmd)
	pw.Close()
	if err != nil {
		return fmt.Errorf("proc: start %s: %w", c.Path, err)
	}
	pid := cmd.Process.Pid

	s := &streamer{log: log, onLine: c.OnLine}
	streamed := make(chan struct{})
	go func() {
		defer close(streamed)
		s.run(pr)
	}()

	// Learn of the child's exit without reaping it: while it is an unreaped zombie its pid,
	// which is also the group id, cannot be reused, so signalling -pid can only reach our
	// group. cmd.Wait reaps it at the end.
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		var si unix.Siginfo
		for unix.Waitid(unix.P_PID, pid, &si, unix.WEXITED|unix.WNOWAIT, nil) == unix.EINTR {
		}
	}()

	var (
		canceled, childDone, outputDone, termSent, killSent, abandoned bool
		killTimer, drainTimer                                          <-chan time.Time
		done                                                           = ctx.Done()
	)
	signalAll := func(sig syscall.Signal) {
		// Errors only say the group is already empty.
		_ = syscall.Kill(-pid, sig)
		// The child may have moved itself to another group; signal it directly too.
		if !childDone {
			_ = cmd.Process.Signal(sig)
		}
	}
	terminate := func() {
		if !termSent {
			termSent = true
			signalAll(syscall.SIGTERM)
			killTimer = time.After(grace)
		}
	}
	kill := func() {
		if !killSent {
			killSent, killTimer = true, nil
			signalAll(syscall.SIGKILL)
			drainTimer = time.After(drainTimeout)
		}
	}
	for !childDone || !outputDone {
		select {
		case <-done:
			done = nil
			if !childDone {
				canceled = true
			}
			terminate()
		case <-exited:
			exited, childDone = nil, true
			// Whatever is left in the group is a leftover now.
			terminate()
			if outputDone {
				kill()
			} else if killSent && drainTimer == nil {
				// The drain time ran out while the child was still dying (stuck in the
				// kernel, say); give the output its drain time from now.
				drainTimer = time.After(drainTimeout)
			}
		case <-streamed:
			streamed, outputDone = nil, true
			// Everything that could write has gone; what remains of the group, if anything,
			// has closed its output and is not worth the grace.
			if childDone {
				kill()
			}
		case <-killTimer:
			kill()
		case <-drainTimer:
			drainTimer = nil
			if childDone {
				abandoned = true
				pr.Close() // ends the streamer's read
			}
		}
	}
	waitErr := cmd.Wait()
	if abandoned {
		s.note("[chaperone] a process started by the tool left its process group and still holds the output open; it was not stopped and its further output is not logged\n")
	}

	if canceled {
		return stopped(ctx)
	}
	var ee *exec.ExitError
	if errors.As(waitErr, &ee) {
		e := &ExitError{Code: ee.ExitCode(), Tail: s.tail.String()}
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			e.Signal = unix.SignalName(ws.Signal())
		}
		return e
	}
	if waitErr != nil {
		return fmt.Errorf("proc: %s: %w", c.Path, waitErr)
	}
	if s.logErr != nil {
		return fmt.Errorf("proc: writing the log: %w", s.logErr)
	}
	return nil
}

// resolve finds the executable, so that a missing tool gets a clear error rather than the
// ENOENT of a failed exec, which could as well be a missing #! interpreter. A relative
// path with a slash is relative to dir, as exec.Cmd runs it.
func resolve(name, dir string) (string, error) {
	if name == "" {
		return "", fmt.Errorf("proc: empty command: %w", exec.ErrNotFound)
	}
	if !strings.Contains(name, "/") {
		p, err := exec.LookPath(name)
		if err != nil {
			return "", fmt.Errorf("proc: command %q not found in PATH: %w", name, exec.ErrNotFound)
		}
		return p, nil
	}
	full := name
	if !filepath.IsAbs(name) {
		full = filepath.Join(dir, name)
	}
	st, err := os.Stat(full)
	switch {
	case errors.Is(err, iofs.ErrNotExist):
		return "", fmt.Errorf("proc: command %q not found: %w", name, exec.ErrNotFound)
	case err != nil:
		return "", fmt.Errorf("proc: command %q: %w", name, err)
	case st.IsDir():
		return "", fmt.Errorf("proc: command %q is a folder: %w", name, exec.ErrNotFound)
	}
	return full, nil
}

func stopped(ctx context.Context) error {
	err := ctx.Err()
	if cause := context.Cause(ctx); cause != nil && cause != err {
		return fmt.Errorf("proc: stopped: %w: %w", err, cause)
	}
	return fmt.Errorf("proc: stopped: %w", err)
}

// flushDelay is how long a partial line waits for the rest before it is written to the log.
const flushDelay = 200 * time.Millisecond

// streamer splits the tool's output into lines. Its fields belong to the goroutine running
// run until that returns; Exec reads them only afterwards.
type streamer struct {
	log    io.Writer
	onLine func(string)
	logErr error // the first failed log write; later output is dropped, not retried

	pending []byte // bytes read and not yet written to the log
	line    []byte // the current line, cut at MaxLine, for onLine and the tail
	cr      bool   // the current line ended with "\r" and the next byte decides if "\r\n"
	tail    tail
}

func (s *streamer) run(r *os.File) {
	buf := make([]byte, 32<<10)
	waiting := false // a read deadline is set
	for {
		if quiet := len(s.pending) > 0 || s.cr; quiet != waiting {
			waiting = quiet
			var d time.Time
			if quiet {
				d = time.Now().Add(flushDelay)
			}
			_ = r.SetReadDeadline(d)
		}
		n, err := r.Read(buf)
		s.feed(buf[:n])
		if errors.Is(err, os.ErrDeadlineExceeded) {
			s.endCR()
			s.flush()
			continue
		}
		if err != nil { // io.EOF, or the pipe closed by Exec
			break
		}
	}
	s.finish()
}

// finish ends the output: a last line without a terminator is still a line.
func (s *streamer) finish() {
	s.endCR()
	if len(s.line) > 0 {
		s.emit(false)
	}
	s.flush()
}

func (s *streamer) feed(p []byte) {
	for len(p) > 0 {
		if s.cr {
			s.cr = false
			if p[0] == '\n' {
				s.pending = append(s.pending, '\n')
				s.emit(false)
				s.flush()
				p = p[1:]
				continue
			}
			s.emit(true)
			s.flush()
		}
		i := bytes.IndexAny(p, "\r\n")
		if i < 0 {
			s.add(p)
			return
		}
		s.add(p[:i])
		s.pending = append(s.pending, p[i])
		if p[i] == '\r' {
			s.cr = true // emitted once the next byte (or a quiet spell) says what kind
		} else {
			s.emit(false)
			s.flush()
		}
		p = p[i+1:]
	}
}

// add takes bytes of the current line.
func (s *streamer) add(b []byte) {
	if room := MaxLine - len(s.line); room > 0 {
		s.line = append(s.line, b[:min(room, len(b))]...)
	}
	s.pending = append(s.pending, b...)
	if len(s.pending) >= MaxLine {
		s.flush()
	}
}

// endCR settles a line that ended with "\r" when nothing followed it.
func (s *streamer) endCR() {
	if s.cr {
		s.cr = false
		s.emit(true)
	}
}

// emit ends the current line. redraw is true for a lone "\r": a progress bar about to be
// drawn over, which the tail keeps only until the next line.
func (s *streamer) emit(redraw bool) {
	text := string(s.line)
	s.line = s.line[:0]
	if s.onLine != nil {
		s.onLine(text)
	}
	s.tail.add(text, redraw)
}

func (s *streamer) flush() {
	if len(s.pending) == 0 {
		return
	}
	if s.logErr == nil {
		if _, err := s.log.Write(s.pending); err != nil {
			s.logErr = err
		}
	}
	s.pending = s.pending[:0]
}

// note writes a line of chaperone's own to the log. Only once run has returned.
func (s *streamer) note(msg string) {
	s.pending = append(s.pending, msg...)
	s.flush()
}

// tail keeps the last non-blank lines of output for an ExitError.
type tail struct {
	lines  []string
	redraw bool // the last line is a progress redraw, to be replaced by the next
}

func (t *tail) add(line string, redraw bool) {
	line = strings.TrimSpace(stripANSI(line))
	if line == "" {
		return
	}
	if len(line) > tailLineLen {
		line = strings.ToValidUTF8(line[:tailLineLen], "") + "…"
	}
	if t.redraw && len(t.lines) > 0 {
		t.lines = t.lines[:len(t.lines)-1]
	}
	t.redraw = redraw
	if len(t.lines) == tailLines {
		t.lines = append(t.lines[:0], t.lines[1:]...)
	}
	t.lines = append(t.lines, line)
}

func (t *tail) String() string { return strings.Join(t.lines, "\n") }

// stripANSI removes terminal escape sequences (colours, cursor moves) that tools using
// rich or tqdm print, which would garble an error message.
func stripANSI(s string) string {
	if !strings.Contains(s, "\x1b") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != 0x1b {
			b.WriteByte(s[i])
			continue
		}
		// CSI: ESC [ parameters, then a final byte in 0x40..0x7e.
		if i+1 < len(s) && s[i+1] == '[' {
			j := i + 2
			for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
				j++
			}
			i = j
			continue
		}
		i++ // a two-byte escape
	}
	return b.String()
}
