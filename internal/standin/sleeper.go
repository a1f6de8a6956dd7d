package standin

import (
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
)

// sleeperArg is the hidden first argument that makes a stand-in its own sleeper.
const sleeperArg = "__stand_in_sleeper"

// ServeSleeper makes the program, when args ask for the sleeper, a helper process that
// ignores SIGTERM and sleeps for ever, as a stuck data-loader worker would; otherwise it
// returns. A stand-in calls it with its arguments before anything else.
func ServeSleeper(args []string) {
	if len(args) == 0 || args[0] != sleeperArg {
		return
	}
	signal.Ignore(syscall.SIGTERM)
	for {
		time.Sleep(time.Hour)
	}
}

// StartSleeper starts the program again as its sleeper (see ServeSleeper).
func StartSleeper() (*exec.Cmd, error) {
	helper := exec.Command(os.Args[0], sleeperArg)
	return helper, helper.Start()
}
