package openfold3

import (
	"testing"

	"github.com/chaperone-bio/chaperone/engine/conformance"
)

func TestConformance(t *testing.T) {
	// Not parallel: the suite empties PATH for one of its checks.
	conformance.Run(t, conformance.Harness{
		Engine:     New(Config{}),
		Tools:      tools(),
		Alignments: searchedFor,
		// Every option the engine passes: alignment files (searched and sent), steps and
		// samples.
		OK: newJob(t, `{"targets": [{"name": "mono", "content": "sequences:\n  - protein: {id: A, sequence: MKTAYIAK, msa: \">q\\nMKTAYIAK\\n\"}\n"},
			{"name": "dimer", "content": ">A|protein\nMKTAYIAK\n>B|protein\nGGSGGSLL\n"},
			{"name": "lig", "content": "sequences:\n  - protein: {id: A, sequence: MKTAYIAK, msa: empty}\n  - ligand: {id: L, smiles: CCO}\n"}],
			"params": {"recycling_steps": 4, "sampling_steps": 50, "diffusion_samples": 2, "fast": false}}`),
		Mixed: newJob(t, `{"targets": [{"name": "good", "content": ">A|protein|empty\nMKTAYIAK\n"},
			{"name": "fail-me", "content": ">A|protein|empty\nMKTAYIAK\n"}, {"name": "oom-big", "content": ">A|protein|empty\nGGSGG\n"}]}`),
		Failing: []string{"fail-me", "oom-big"},
		Hang:    newJob(t, `{"targets": [{"name": "slow", "content": ">a\nMK"}], "params": {"use_msa_server": false}}`),
		Busy:    "slow: diffusion step 1 of 300",
	})
}
