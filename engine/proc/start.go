package proc

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/chaperone-bio/chaperone/engine"
)

// Process is a long-lived process of a warm engine's session (engine.Process), started by
// Start. Unlike Exec, it outlives any one job: the session talks to it over stdin and
// stdout, its stderr goes to the log of whichever job it works on, and it runs until Stop
// or until it exits. When its direct child exits, whatever it left in its group is killed.
type Process struct {
	stdin  io.WriteCloser
	stdout *os.File
	pid    int

	logMu sync.Mutex
	log   io.Writer
	tail  tail // the last lines of stderr, for Err

	sigMu  sync.Mutex
	reaped bool // the pid may belong to someone else now: signal nothing

	exited chan struct{}
	err    error // set before exited is closed
}

var _ engine.Process = (*Process)(nil)

// Start starts c in dir in its own process group, with c.Env on top of the worker's
// environment. c.Path is resolved as Exec resolves it.
func Start(dir string, c engine.Command) (*Process, error) {
	path, err := resolve(c.Path, dir)
	if err != nil {
		return nil, err
	}
	cmd := supervised(path, c.Args, dir, c.Env, Grace)
	p := &Process{exited: make(chan struct{})}
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, fmt.Errorf("proc: %w", err)
	}
	// An os.Pipe rather than StdoutPipe: Wait would close the latter when the child exits,
	// losing an answer the session has not read yet.
	stdout, stdoutW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("proc: %w", err)
	}
	cmd.Stdout, p.stdout = stdoutW, stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		stdout.Close()
		stdoutW.Close()
		return nil, fmt.Errorf("proc: %w", err)
	}
	started := make(chan error, 1)
	// Pdeathsig fires when the thread that forked the child ends, so the child is started
	// from a goroutine that keeps its thread locked until the child has exited: no other
	// goroutine can end that thread under it (see Exec).
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		err := startSupervised(cmd)
		stdoutW.Close()
		if err != nil {
			started <- err
			return
		}
		p.pid = cmd.Process.Pid
		started <- nil
		p.watch(cmd, stderr)
	}()
	if err := <-started; err != nil {
		stdout.Close()
		return nil, fmt.Errorf("proc: start %s: %w", c.Path, err)
	}
	return p, nil
}

// watch streams stderr until the child exits, kills what it left in its group, and reaps
// it. The child stays unreaped (a zombie) until then, so its pid, which is also the group
// id, cannot be reused while anyone may signal it.
func (p *Process) watch(cmd *exec.Cmd, stderr io.Reader) {
	streamed := make(chan struct{})
	go func() {
		defer close(streamed)
		p.stream(stderr)
	}()
	var si unix.Siginfo
	for unix.Waitid(unix.P_PID, p.pid, &si, unix.WEXITED|unix.WNOWAIT, nil) == unix.EINTR {
	}
	p.signal(syscall.SIGKILL) // leftovers of the group
	select {
	case <-streamed:
	case <-time.After(drainTimeout): // a descendant that left the group holds stderr
	}
	p.sigMu.Lock()
	err := cmd.Wait()
	p.reaped = true
	p.sigMu.Unlock()
	p.logMu.Lock()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		e := &ExitError{Code: ee.ExitCode(), Tail: p.tail.String()}
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			e.Signal = unix.SignalName(ws.Signal())
		}
		err = e
	}
	p.logMu.Unlock()
	p.err = err
	close(p.exited)
}

func (p *Process) stream(r io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			p.logMu.Lock()
			if p.log != nil {
				_, _ = p.log.Write(buf[:n]) // the log is best effort
			}
			for _, line := range splitLines(buf[:n]) {
				p.tail.add(line, false)
			}
			p.logMu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

// splitLines cuts a chunk at newlines; a line split across two reads becomes two tail
// lines, which only shortens the error's quote.
func splitLines(b []byte) []string {
	var out []string
	start := 0
	for i, c := range b {
		if c == '\n' {
			out = append(out, string(b[start:i]))
			start = i + 1
		}
	}
	if start < len(b) {
		out = append(out, string(b[start:]))
	}
	return out
}

func (p *Process) signal(sig syscall.Signal) {
	p.sigMu.Lock()
	defer p.sigMu.Unlock()
	if !p.reaped {
		_ = syscall.Kill(-p.pid, sig) // an error only says the group is empty
		_ = syscall.Kill(p.pid, sig)  // the child may have left its group
	}
}

func (p *Process) Stdin() io.WriteCloser   { return p.stdin }
func (p *Process) Stdout() io.Reader       { return p.stdout }
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Pid is the process id of its supervisor (see supervised), which is the group id and
// the tool's parent; a SIGKILL to it ends the tool too. For tests and logs.
func (p *Process) Pid() int { return p.pid }

func (p *Process) SetLog(w io.Writer) {
	p.logMu.Lock()
	p.log = w
	p.logMu.Unlock()
}

// Err says how the process ended; nil before it has.
func (p *Process) Err() error {
	select {
	case <-p.exited:
		return p.err
	default:
		return nil
	}
}

// Stop sends the group SIGTERM, then SIGKILL after Grace, waits for the exit, and
// releases the pipes.
func (p *Process) Stop() {
	select {
	case <-p.exited:
	default:
		p.signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(Grace):
			p.signal(syscall.SIGKILL)
			<-p.exited
		}
	}
	p.stdin.Close()
	p.stdout.Close()
}
