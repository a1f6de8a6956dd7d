package slurm

import (
	"maps"
	"slices"
	"testing"

	"github.com/chaperone-bio/chaperone/doctor"
)

func TestProbedOffersWhatRunsAndSaysWhyNot(t *testing.T) {
	report := &doctor.Report{Models: []doctor.ModelReport{
		{Model: "boltz2", Status: doctor.OK},
		{Model: "rfd3", Status: doctor.Warn, Reason: "weights not downloaded yet"},
		{Model: "protenix-v2", Status: doctor.No, Reason: "the protenix command is not installed"},
		{Model: "esmc-6b", Status: doctor.No, Reason: "not asked for"},
	}}
	offered, missing := probed(report, []string{"rfd3", "boltz2", "protenix-v2", "newer-model"})
	if want := []string{"boltz2", "rfd3"}; !slices.Equal(offered, want) {
		t.Errorf("offered %q, want %q (ok and warn run; only configured models)", offered, want)
	}
	want := map[string]string{
		"protenix-v2": "the protenix command is not installed",
		"newer-model": "the compute nodes' chaperone does not know this model",
	}
	if !maps.Equal(missing, want) {
		t.Errorf("missing %q, want %q", missing, want)
	}
}
