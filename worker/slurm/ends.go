package slurm

import (
	"fmt"
	"strings"
)

// ending is what becomes of a job whose batch job left Slurm's queue without an outcome
// of its own.
type ending struct {
	// lost: the attempt is lost through no fault of the job (the node failed, the job was
	// preempted), so the job goes back to the queue for another attempt.
	lost bool
	// failure is the job's error otherwise, in plain words.
	failure string
}

// judge maps how Slurm ended a batch job that wrote no outcome to what becomes of the job.
// output is the end of the batch job's own output (slurm.out), quoted where the job
// failed for a reason only it can tell.
func judge(f Final, output string) ending {
	switch f.State {
	case "TIMEOUT":
		return ending{failure: "Slurm stopped the job at its time limit of " + timeLimit(f.TimeLimit)}
	case "OUT_OF_MEMORY":
		return ending{failure: "the Slurm job ran out of memory"}
	case "NODE_FAIL", "PREEMPTED", "BOOT_FAIL":
		return ending{lost: true}
	case "CANCELLED":
		return ending{failure: "the Slurm job was canceled outside chaperone"}
	case "DEADLINE":
		return ending{failure: "Slurm stopped the job at its deadline"}
	case "FAILED":
		return ending{failure: withOutput(fmt.Sprintf("the Slurm job failed with exit code %s", exitStatus(f.ExitCode)), output)}
	case "COMPLETED":
		return ending{failure: withOutput("the Slurm job ended without a result", output)}
	}
	return ending{failure: withOutput("the Slurm job ended in state "+f.State, output)}
}

// timeLimit shows Slurm's [days-]hours:minutes:seconds without the leading zero of its
// hours ("00:15:00" reads "0:15:00").
func timeLimit(s string) string {
	if len(s) > 1 && s[0] == '0' && s[1] != ':' && !strings.Contains(s, "-") {
		return s[1:]
	}
	return s
}

// exitStatus is the status of Slurm's "status:signal", or the signal that ended the job.
func exitStatus(code string) string {
	status, signal, _ := strings.Cut(code, ":")
	if status == "0" && signal != "" && signal != "0" {
		return "0 (signal " + signal + ")"
	}
	return status
}

// outputLines is how much of the batch job's output a failure quotes.
const outputLines = 5

func withOutput(msg, output string) string {
	lines := strings.Split(strings.TrimRight(output, "\n"), "\n")
	if len(lines) > outputLines {
		lines = lines[len(lines)-outputLines:]
	}
	tail := strings.TrimSpace(strings.Join(lines, "\n"))
	if tail == "" {
		return msg
	}
	return msg + "; the end of its output:\n" + tail
}
