package standin

import (
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// How a stand-in misbehaves when a test asks it to: the test names a target for the
// behaviour it wants (crash…, oom…, slow…), or marks its input (Behaviour); the stand-in
// then fails as its tool does, with a CUDA error (CUDACrash), out of memory, or a stall
// (Stall).

// CUDACrash is the exception a run dies of on a target that crashes it, as PyTorch raises
// it on a faulting kernel.
const CUDACrash = "RuntimeError: CUDA error: an illegal memory access was encountered"

// Behaviour is the word after marker in text, "" without the marker: how a test chooses how
// a stand-in misbehaves on an input that has no name to choose it by, as in a comment of
// the input.
func Behaviour(text, marker string) string {
	i := strings.Index(text, marker)
	if i < 0 {
		return ""
	}
	return strings.Fields(text[i+len(marker):])[0]
}

// sleeperArg is the hidden first argument that makes a stand-in its own sleeper.
const sleeperArg = "__stand_in_sleeper"

// serveSleeper makes the program, when args ask for the sleeper, a helper process that
// ignores SIGTERM and sleeps for ever, as a stuck data-loader worker would; otherwise it
// returns.
func serveSleeper(args []string) {
	if len(args) == 0 || args[0] != sleeperArg {
		return
	}
	signal.Ignore(syscall.SIGTERM)
	for {
		time.Sleep(time.Hour)
	}
}

// Stall is a slow stretch of a run: steps calls of step, one every interval, beside a
// helper process that ignores SIGTERM, as a tool's stuck data-loader worker would, so that
// only stopping the whole process group ends the run early. When pidFile is not "", the
// helper's pid is written there first, for a test to see that the helper is gone. Stall
// returns stop, which ends the helper, for a tool that ends its workers; an error means
// the stretch never began.
func Stall(pidFile string, steps int, interval time.Duration, step func(i int)) (stop func(), err error) {
	helper := exec.Command(os.Args[0], sleeperArg)
	if err := helper.Start(); err != nil {
		return nil, err
	}
	if pidFile != "" {
		if err := os.WriteFile(pidFile, []byte(strconv.Itoa(helper.Process.Pid)), 0o644); err != nil {
			return nil, err
		}
	}
	for i := range steps {
		step(i)
		time.Sleep(interval)
	}
	return func() {
		_ = helper.Process.Kill()
		_ = helper.Wait()
	}, nil
}
