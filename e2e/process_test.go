package e2e

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/catalog"
)

type limitsT = catalog.Limits

// eventually waits until cond holds, checking every few milliseconds; it is for conditions
// outside the server that no notification reports (a process dying, a file appearing).
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, timeout)
		}
		<-tick.C
	}
}

// waitForPIDFile returns the pid the test engine's "hang" tree wrote: that of a grandchild
// of the worker that ignores SIGTERM.
func waitForPIDFile(t *testing.T, dataDir, jobID string) int {
	t.Helper()
	var pid int
	eventually(t, 10*time.Second, "the hanging tool's pid file", func() bool {
		matches, _ := filepath.Glob(filepath.Join(dataDir, "work", jobID+"-*", "hang.pid"))
		for _, m := range matches {
			b, err := os.ReadFile(m)
			if n, perr := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && perr == nil {
				pid = n
				return true
			}
		}
		return false
	})
	mustf(t, alive(pid), "the hanging tool (pid %d) is not running", pid)
	return pid
}

// alive reports whether pid is a running process (a zombie counts as gone: it has exited,
// and only waits for a parent that may not be ours to reap it).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z' && s[i+2] != 'X'
	}
	return true
}

func waitProcessGone(t *testing.T, pid int, within time.Duration) {
	t.Helper()
	eventually(t, within, fmt.Sprintf("process %d gone", pid), func() bool { return !alive(pid) })
}

// waitNoJobFiles waits until a deleted job has no files left under the data folder.
func waitNoJobFiles(t *testing.T, s *server, id string) {
	t.Helper()
	eventually(t, 10*time.Second, "files of job "+id+" removed", func() bool {
		_, err := os.Stat(filepath.Join(s.dir, "artifacts", id))
		return errors.Is(err, os.ErrNotExist)
	})
}
