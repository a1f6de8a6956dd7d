package bio

import (
	"errors"
	"strings"
	"testing"

	"github.com/chaperone-bio/chaperone/job"
)

func TestComplexes(t *testing.T) {
	t.Parallel()
	got, err := Complexes(job.Input{Targets: []job.Target{{Name: "a", Content: ">x\nMK\n"}, {Name: "b", Content: "sequences:\n  - protein: {id: A, sequence: MKTAYI}\n  - ligand: {id: L, smiles: CCO}\n"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Name != "a" || got[1].Name != "b" || got[1].NumChains() != 2 {
		t.Errorf("complexes %+v %+v", got[0], got[1])
	}
	for _, in := range []job.Input{{Sequence: "MKT"}, {Input: ">x\nMKT\n"}} {
		got, err := Complexes(in)
		if err != nil || len(got) != 1 || got[0].Name != SingleTarget || got[0].Entities[0].Sequence != "MKT" {
			t.Errorf("Complexes(%+v) = %+v, %v", in, got, err)
		}
	}
	tests := []struct {
		in            job.Input
		field, reason string
	}{
		{job.Input{Targets: []job.Target{{Name: "a", Content: ">x\nMK\n"}, {Name: "b", Content: "sequences: 3"}}},
			"targets[1].content", "line 1, column 12: sequences must be a list"},
		{job.Input{Sequence: "MK1"}, "sequence", "position 3: '1' is not an amino-acid letter"},
		{job.Input{Input: ">x\nM*K\n"}, "input", "line 1: record x: protein sequence position 2"},
	}
	for _, tt := range tests {
		_, err := Complexes(tt.in)
		var inv *job.InvalidError
		if !errors.As(err, &inv) || inv.Field != tt.field || !strings.Contains(inv.Reason, tt.reason) {
			t.Errorf("Complexes(%+v) = %v, want field %s and %q", tt.in, err, tt.field, tt.reason)
		}
	}
}
