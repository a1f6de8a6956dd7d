package worker

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// runMarker is set in the environment of every process a job runs, naming the job's work
// folder. Children inherit it, so after a crash a restarted worker can find every process
// of its earlier runs, however deep, by reading /proc, without trusting a process group id
// that may have been reused.
const runMarker = "CHAPERONE_RUN_DIR"

// killLeftovers SIGKILLs every process whose environment carries the marker of a work
// folder under root: the tools of a previous run of this worker that was killed before
// it could stop them. It returns how many it killed.
func killLeftovers(root string) int {
	root, err := filepath.Abs(root)
	if err != nil {
		return 0
	}
	prefix := []byte(runMarker + "=" + root + string(filepath.Separator))
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0 // no procfs: nothing to find
	}
	self := os.Getpid()
	killed := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue // gone already, or not ours to read
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if bytes.HasPrefix(kv, prefix) {
				if syscall.Kill(pid, syscall.SIGKILL) == nil {
					killed++
				}
				break
			}
		}
	}
	return killed
}
