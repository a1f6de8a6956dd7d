// Package slurmtest gives tests a running Slurm cluster: the one-node cluster that
// .ci/slurm starts on this machine, named by SLURM_CONF as Slurm's own commands find it.
//
// .ci/run starts that cluster and sets CHAPERONE_TEST_SLURM=required, so under CI a
// missing cluster fails the test: a check that quietly skipped there would count for
// nothing. Elsewhere it skips, saying how to start one.
package slurmtest

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Require returns once SLURM_CONF names a cluster whose controller answers and whose node
// takes work, and otherwise fails the test when CHAPERONE_TEST_SLURM=required and skips it
// elsewhere.
func Require(t testing.TB) {
	t.Helper()
	if err := Running(); err != "" {
		msg := "no Slurm cluster: %s (start one: .ci/slurm start DIR; export SLURM_CONF=DIR/slurm.conf)"
		if os.Getenv("CHAPERONE_TEST_SLURM") == "required" {
			t.Fatalf(msg, err)
		}
		t.Skipf(msg, err)
	}
}

// Running says why no cluster is usable, or "" when one is.
func Running() string {
	if os.Getenv("SLURM_CONF") == "" {
		return "SLURM_CONF is not set"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "sinfo", "-h", "-N", "-o", "%T").CombinedOutput()
	if err != nil {
		return "sinfo: " + strings.TrimSpace(string(out)) + " " + err.Error()
	}
	// A node that runs jobs, or is finishing one (completing), takes work; one that is
	// down, drained, failing or not yet known does not.
	for state := range strings.FieldsSeq(string(out)) {
		for _, usable := range []string{"idle", "mix", "alloc", "completing", "planned"} {
			if strings.HasPrefix(state, usable) {
				return ""
			}
		}
	}
	return "no node takes work (sinfo: " + strings.TrimSpace(string(out)) + ")"
}
