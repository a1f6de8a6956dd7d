package proc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a log that the process's stderr and the test may use at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func start(t *testing.T, script string) (*Process, *bufio.Reader) {
	t.Helper()
	p, err := Start(t.TempDir(), sh(script, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p, bufio.NewReader(p.Stdout())
}

// readPidLine reads a pid the script printed on stdout.
func readPidLine(t *testing.T, out *bufio.Reader) int {
	t.Helper()
	line, err := out.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func waitExited(t *testing.T, p *Process) {
	t.Helper()
	select {
	case <-p.Exited():
	case <-time.After(Grace + 10*time.Second):
		t.Fatal("the process never exited")
	}
}

func TestStartTalksOverItsStreamsAndLogsStderr(t *testing.T) {
	t.Parallel()
	p, out := start(t, `while read x; do echo "got $x"; echo "note on $x" >&2; done`)
	var log lockedBuffer
	p.SetLog(&log)
	for _, x := range []string{"a", "b"} {
		fmt.Fprintln(p.Stdin(), x)
		if line, err := out.ReadString('\n'); err != nil || line != "got "+x+"\n" {
			t.Fatalf("answer %q, %v; want got %s", line, err, x)
		}
	}
	p.Stdin().Close() // the polite way to end it
	waitExited(t, p)
	if err := p.Err(); err != nil {
		t.Errorf("a process that ended on its own with status 0: %v", err)
	}
	if !strings.Contains(log.String(), "note on a\nnote on b\n") {
		t.Errorf("the log got %q", log.String())
	}
}

func TestStartReportsACrashWithItsLastWords(t *testing.T) {
	t.Parallel()
	p, _ := start(t, `echo "Traceback: boom" >&2; exit 3`)
	waitExited(t, p)
	var ee *ExitError
	if err := p.Err(); !errors.As(err, &ee) || ee.Code != 3 || !strings.Contains(ee.Tail, "Traceback: boom") {
		t.Fatalf("Err() = %v, want exit code 3 quoting the traceback", err)
	}
}

func TestStoppingAProcessEndsItsWholeGroup(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, script string
	}{
		{"on SIGTERM", `sleep 1000 & echo $!; wait`},
		{"that ignores SIGTERM", `trap "" TERM; sleep 1000 & echo $!; wait`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, out := start(t, tt.script)
			child := readPidLine(t, out)
			p.Stop()
			if p.Err() == nil {
				t.Error("a stopped process reports no error")
			}
			if !waitDead(t, child, time.Second) {
				t.Errorf("its child %d outlived Stop", child)
			}
		})
	}
}

func TestWhatAProcessLeavesInItsGroupDiesWithIt(t *testing.T) {
	t.Parallel()
	p, out := start(t, `sleep 1000 & echo $!; read x; exit 0`)
	child := readPidLine(t, out)
	p.Stdin().Close()
	waitExited(t, p)
	if !waitDead(t, child, time.Second) {
		t.Errorf("the background child %d outlived the process", child)
	}
}
