package openfold3

import (
	"testing"

	"github.com/chaperone-bio/chaperone/engine/conformance"
)

func TestConformance(t *testing.T) {
	// Not parallel: the suite empties PATH for one of its checks.
	conformance.Run(t, conformance.Harness{
		Engine: New(Config{MSAServerURL: server}),
		Tools:  tools(),
		// Every option the engine passes: a search on the server, steps and samples.
		OK: newJob(t, `{"targets": [{"name": "mono", "content": ">A|protein\nMKTAYIAKQRQISFVKSHFSRQ\n"},
			{"name": "lig", "content": "sequences:\n  - protein: {id: A, sequence: MKTAYIAK, msa: empty}\n  - ligand: {id: L, smiles: CCO}\n"}],
			"params": {"recycling_steps": 4, "sampling_steps": 50, "diffusion_samples": 2, "fast": false}}`),
		Mixed: newJob(t, `{"targets": [{"name": "good", "content": ">A|protein|empty\nMKTAYIAK\n"},
			{"name": "fail-me", "content": ">A|protein|empty\nMKTAYIAK\n"}, {"name": "oom-big", "content": ">A|protein|empty\nGGSGG\n"},
			{"name": "alignfail", "content": ">A|protein\nGGSGG\n"}]}`),
		Failing: []string{"fail-me", "oom-big", "alignfail"},
		Hang:    newJob(t, `{"targets": [{"name": "slow", "content": ">a\nMK"}], "params": {"use_msa_server": false}}`),
		Busy:    "slow: diffusion step 1 of 300",
	})
}
