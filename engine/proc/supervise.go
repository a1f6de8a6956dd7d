package proc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// supervisorEnv, present in a process's environment, makes any binary that imports this
// package a job's supervisor instead of what it normally is. Its value is the grace.
const supervisorEnv = "CHAPERONE_PROC_SUPERVISOR"

// statusFd is where a supervisor reports that it could not start the tool. It is closed
// on the tool's exec, so the worker reads end of file once the tool runs.
const statusFd = 3

func init() {
	grace, ok := os.LookupEnv(supervisorEnv)
	if !ok {
		return
	}
	os.Exit(supervise(grace, os.Args[1:]))
}

// supervised is the command that runs path with args in dir, with env on top of the
// worker's environment and PYTHONUNBUFFERED=1 as a default, under a supervisor: the
// worker's own binary run again, which starts the tool and stays its parent. The worker
// signals the supervisor's group, which the tool shares, as it would signal the tool's.
// The supervisor gets SIGTERM when the worker dies (Pdeathsig, which an exec keeps) and
// then ends the tool and all it started, however it got detached.
//
// /proc/self/exe, resolved in the new child, is the worker's binary even if the file was
// replaced or removed since the worker started.
func supervised(path string, args []string, dir string, env []string, grace time.Duration) *exec.Cmd {
	cmd := exec.Command("/proc/self/exe", append([]string{path}, args...)...)
	cmd.Args[0] = "chaperone-supervisor"
	cmd.Dir = dir
	cmd.Env = append(append(append([]string{"PYTHONUNBUFFERED=1"}, os.Environ()...), env...), supervisorEnv+"="+grace.String())
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// Its own group: signals to -pid reach every descendant that stays in it, and a
		// Ctrl-C at the worker's terminal does not hit the tool before the worker decides.
		Setpgid:   true,
		Pdeathsig: syscall.SIGTERM,
	}
	return cmd
}

// startSupervised starts a command made by supervised and returns once the tool runs, or
// with the supervisor's reason why it could not start it.
func startSupervised(cmd *exec.Cmd) error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	cmd.ExtraFiles = []*os.File{w}
	err = cmd.Start()
	w.Close()
	if err != nil {
		return err
	}
	msg, _ := io.ReadAll(r)
	if len(msg) > 0 {
		_ = cmd.Wait()
		return errors.New(string(msg))
	}
	return nil
}

// exit is a child that the supervisor reaped.
type exit struct {
	pid    int
	status unix.WaitStatus
}

// supervise is the supervisor's main: it runs argv and exits as it did. If the worker dies
// first, it sends SIGTERM to every descendant, SIGKILL after the grace, and exits once none
// is left. As a child subreaper it inherits the orphans among them, so it reaps them, and
// finds even those that left the group.
func supervise(graceText string, argv []string) int {
	status := os.NewFile(statusFd, "status")
	fail := func(err error) int {
		fmt.Fprint(status, err)
		return 127
	}
	grace, err := time.ParseDuration(graceText)
	if err != nil || len(argv) == 0 {
		return fail(fmt.Errorf("bad supervisor call: %q %q", graceText, argv))
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fail(fmt.Errorf("set child subreaper: %w", err))
	}
	// The worker's exec set Pdeathsig after checking its parent was alive; a SIGTERM
	// before this Notify kills the supervisor before it has started anything.
	parent := os.Getppid()
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	unix.CloseOnExec(statusFd)
	os.Unsetenv(supervisorEnv)

	tool := exec.Command(argv[0], argv[1:]...)
	tool.Stdin, tool.Stdout, tool.Stderr = os.Stdin, os.Stdout, os.Stderr
	// Should the supervisor itself be SIGKILLed, the tool goes too, even if it left the
	// group. The main goroutine runs on the main thread, which lives as long as we do.
	tool.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	runtime.LockOSThread()
	if err := tool.Start(); err != nil {
		return fail(err)
	}
	status.Close()

	exits := make(chan exit)
	go reapAll(exits)
	for {
		select {
		case e, ok := <-exits:
			if !ok {
				return 127 // cannot be: the tool is a child until reaped here
			}
			if e.pid == tool.Process.Pid {
				return exitAs(e.status)
			}
		case sig := <-sigs:
			if os.Getppid() != parent {
				endDescendants(grace, exits)
				return 1
			}
			// The group signal reached the tool already, unless it left the group.
			if pgid, err := unix.Getpgid(tool.Process.Pid); err == nil && pgid != unix.Getpgrp() {
				_ = tool.Process.Signal(sig) // a pidfd: never another process
			}
		}
	}
}

// reapAll reaps every child as it exits, and closes exits when none is left.
func reapAll(exits chan<- exit) {
	defer close(exits)
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil { // ECHILD
			return
		}
		exits <- exit{pid, ws}
	}
}

// endDescendants runs when the worker died: SIGTERM to all descendants, SIGKILL to those
// left after grace, until no child is left. Processes forked meanwhile are found by the
// repeated scans, or become our children when their parent dies.
func endDescendants(grace time.Duration, exits <-chan exit) {
	signalDescendants(syscall.SIGTERM)
	killAt := time.After(grace)
	var rescan <-chan time.Time
	for {
		select {
		case _, ok := <-exits:
			if !ok {
				return
			}
		case <-killAt:
			killAt = nil
			signalDescendants(syscall.SIGKILL)
			rescan = time.Tick(50 * time.Millisecond)
		case <-rescan:
			signalDescendants(syscall.SIGKILL)
		}
	}
}

// signalDescendants signals every process below this one, found by their parent ids in
// /proc. Errors only say a process is gone.
func signalDescendants(sig syscall.Signal) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	children := map[int][]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, ok := parentOf(pid); ok {
			children[ppid] = append(children[ppid], pid)
		}
	}
	queue := children[os.Getpid()]
	for len(queue) > 0 {
		pid := queue[0]
		queue = append(queue[1:], children[pid]...)
		_ = syscall.Kill(pid, sig)
	}
}

// parentOf reads a process's parent id from /proc/pid/stat: the second field after the
// command name, which is in parentheses and may itself hold spaces and parentheses.
func parentOf(pid int) (int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(f[1])
	return ppid, err == nil
}

// exitAs ends the supervisor as the tool ended, so the worker reads the same status: the
// exit code, or death by the same signal.
func exitAs(ws unix.WaitStatus) int {
	if !ws.Signaled() {
		return ws.ExitStatus()
	}
	sig := ws.Signal()
	// No core file of the supervisor, and the default action rather than Go's handler.
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	var dfl [4]uint64 // struct sigaction with SIG_DFL, no flags, an empty mask
	_, _, _ = syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&dfl)), 0, 8, 0, 0)
	_ = unix.Kill(os.Getpid(), sig)
	return 128 + int(sig) // only if the signal's default action is not to end the process
}
