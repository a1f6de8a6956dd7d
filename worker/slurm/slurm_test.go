package slurm

import (
	"os"
	"path/filepath"
	"testing"
)

// The outputs under testdata were recorded from the one-node cluster of .ci/slurm
// (Debian's Slurm 22.05).
func recorded(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestParseQueue(t *testing.T) {
	got := parseQueue(recorded(t, "squeue.txt"))
	want := map[string]QueueEntry{
		"15": {ID: "15", State: "PENDING", Reason: "Resources", Partition: "debug"},
		"16": {ID: "16", State: "PENDING", Reason: "JobHeldUser", Partition: "debug"},
		"17": {ID: "17", State: "PENDING", Reason: "Priority", Partition: "debug"},
	}
	if len(got) != len(want) {
		t.Fatalf("parseQueue = %v, want %v", got, want)
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("job %s: %+v, want %+v", id, got[id], w)
		}
	}
}

func TestParseShowJob(t *testing.T) {
	tests := []struct {
		file string
		want Final
	}{
		{"scontrol-completed.txt", Final{State: "COMPLETED", Reason: "None", ExitCode: "0:0", TimeLimit: "00:05:00"}},
		{"scontrol-failed.txt", Final{State: "FAILED", Reason: "NonZeroExitCode", ExitCode: "3:0", TimeLimit: "00:05:00"}},
		{"scontrol-cancelled.txt", Final{State: "CANCELLED", Reason: "Priority", ExitCode: "0:0", TimeLimit: "00:05:00"}},
		{"scontrol-timeout.txt", Final{State: "TIMEOUT", Reason: "TimeLimit", ExitCode: "0:15", TimeLimit: "00:01:00"}},
	}
	for _, tc := range tests {
		got, ok := parseShowJob(recorded(t, tc.file))
		if !ok || got != tc.want {
			t.Errorf("%s: %+v %v, want %+v", tc.file, got, ok, tc.want)
		}
	}
	if _, ok := parseShowJob("slurm_load_jobs error: Invalid job id specified\n"); ok {
		t.Error("an unknown job parsed as a record")
	}
}

// sacct needs slurmdbd, which the test cluster does not run: these lines are in the
// format sacct -n -P -X -o State,ExitCode,Reason prints.
func TestParseAcct(t *testing.T) {
	tests := []struct {
		out  string
		want Final
		ok   bool
	}{
		{"TIMEOUT|0:0|None\n", Final{State: "TIMEOUT", ExitCode: "0:0", Reason: "None"}, true},
		{"CANCELLED by 0|0:0|None\n", Final{State: "CANCELLED", ExitCode: "0:0", Reason: "None"}, true},
		{"", Final{}, false},
	}
	for _, tc := range tests {
		got, ok := parseAcct(tc.out)
		if ok != tc.ok || got != tc.want {
			t.Errorf("parseAcct(%q) = %+v %v, want %+v %v", tc.out, got, ok, tc.want, tc.ok)
		}
	}
}

func TestRefusal(t *testing.T) {
	tests := []struct {
		file    string
		msg     string
		refused bool
	}{
		{"sbatch-invalid-partition.txt", "invalid partition specified: gpux", true},
		// A controller out of reach says nothing about the job: it is submitted again.
		{"sbatch-no-controller.txt", "", false},
	}
	for _, tc := range tests {
		msg, refused := refusal(recorded(t, tc.file))
		if msg != tc.msg || refused != tc.refused {
			t.Errorf("%s: %q %v, want %q %v", tc.file, msg, refused, tc.msg, tc.refused)
		}
	}
}
