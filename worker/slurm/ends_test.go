package slurm

import "testing"

func TestJudge(t *testing.T) {
	output := "line 1\nline 2\nline 3\nline 4\nline 5\nTraceback: boom\n"
	tests := []struct {
		name  string
		final Final
		want  ending
	}{
		{"time limit", Final{State: "TIMEOUT", TimeLimit: "01:00:00"},
			ending{failure: "Slurm stopped the job at its time limit of 1:00:00"}},
		{"time limit of days", Final{State: "TIMEOUT", TimeLimit: "2-00:00:00"},
			ending{failure: "Slurm stopped the job at its time limit of 2-00:00:00"}},
		{"out of memory", Final{State: "OUT_OF_MEMORY", ExitCode: "0:125"}, ending{failure: "the Slurm job ran out of memory"}},
		{"node failure", Final{State: "NODE_FAIL"}, ending{lost: true}},
		{"preemption", Final{State: "PREEMPTED"}, ending{lost: true}},
		{"boot failure", Final{State: "BOOT_FAIL"}, ending{lost: true}},
		{"canceled by someone else", Final{State: "CANCELLED"}, ending{failure: "the Slurm job was canceled outside chaperone"}},
		{"deadline", Final{State: "DEADLINE"}, ending{failure: "Slurm stopped the job at its deadline"}},
		{"failed", Final{State: "FAILED", ExitCode: "3:0"},
			ending{failure: "the Slurm job failed with exit code 3; the end of its output:\nline 2\nline 3\nline 4\nline 5\nTraceback: boom"}},
		{"killed by a signal", Final{State: "FAILED", ExitCode: "0:9"},
			ending{failure: "the Slurm job failed with exit code 0 (signal 9); the end of its output:\nline 2\nline 3\nline 4\nline 5\nTraceback: boom"}},
		{"ended without an outcome", Final{State: "COMPLETED", ExitCode: "0:0"},
			ending{failure: "the Slurm job ended without a result; the end of its output:\nline 2\nline 3\nline 4\nline 5\nTraceback: boom"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := judge(tc.final, output); got != tc.want {
				t.Errorf("judge(%+v) =\n %+v\nwant\n %+v", tc.final, got, tc.want)
			}
		})
	}
	if got := judge(Final{State: "FAILED", ExitCode: "1:0"}, ""); got.failure != "the Slurm job failed with exit code 1" {
		t.Errorf("a failure without output: %q", got.failure)
	}
}
