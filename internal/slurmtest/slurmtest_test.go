package slurmtest

import (
	"os/exec"
	"strings"
	"testing"
)

func TestRequireFindsAClusterThatRunsJobs(t *testing.T) {
	Require(t)
	out, err := exec.Command("srun", "--quiet", "--time=1", "echo", "ran under Slurm").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ran under Slurm" {
		t.Fatalf("srun: %v %s", err, out)
	}
}

func TestRunningSaysWhyWithoutACluster(t *testing.T) {
	t.Setenv("SLURM_CONF", "")
	if why := Running(); why != "SLURM_CONF is not set" {
		t.Fatalf("Running() = %q", why)
	}
}
