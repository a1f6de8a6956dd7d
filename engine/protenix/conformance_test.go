package protenix

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/conformance"
	"github.com/chaperone-bio/chaperone/internal/enginerun"
)

// TestConformance runs the engine suite for each of the three models. Not parallel: the
// suite empties PATH for one of its checks.
func TestConformance(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "checkpoint"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "checkpoint", "opendde_abag.pt"), []byte("weights"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := Config{OpenDDERoot: root}
	for _, e := range []*Engine{New(cfg), NewOpenDDE(cfg), NewOpenDDEAbAg(cfg)} {
		model := e.Models()[0]
		t.Run(model, func(t *testing.T) {
			conformance.Run(t, conformance.Harness{
				Engine:     e,
				Tools:      engine.Tools{e.Name(): standIns[e.Name()]},
				Alignments: searchedFor,
				// Every option the engine passes: steps, samples, plain numerics, alignments
				// (sent and searched).
				OK: enginerun.PredictJob(t, `{"model": "`+model+`", "targets": [{"name": "mono", "content": "sequences:\n  - protein:\n      id: A\n      sequence: MKTAYIAK\n      msa: |\n        >q\n        MKTAYIAK\n        >hit\n        MKTAYLAK\n"},
					{"name": "dimer", "content": ">A|protein\nMKTAYIAK\n>B|protein\nGGSGGSLL\n"}],
					"params": {"recycling_steps": 4, "sampling_steps": 50, "diffusion_samples": 2, "fast": false}}`),
				Mixed: enginerun.PredictJob(t, `{"model": "`+model+`", "targets": [{"name": "good", "content": ">A|protein|empty\nMKTAYIAK\n"},
					{"name": "fail-me", "content": ">A|protein|empty\nMKTAYIAK\n"}, {"name": "oom-big", "content": ">A|protein|empty\nGGSGG\n"}]}`),
				Failing: []string{"fail-me", "oom-big"},
				Hang:    enginerun.PredictJob(t, `{"model": "`+model+`", "targets": [{"name": "slow", "content": ">a\nMK"}], "params": {"use_msa_server": false}}`),
				Busy:    "slow: step 1 of 300",
			})
		})
	}
}
