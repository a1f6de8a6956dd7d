package boltz

import (
	"encoding/json"
	"testing"

	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/conformance"
	"github.com/chaperone-bio/chaperone/internal/enginerun"
)

func TestConformance(t *testing.T) {
	// Not parallel: the suite empties PATH for one of its checks.
	affinity, _ := json.Marshal(affinityYAML)
	conformance.Run(t, conformance.Harness{
		Engine:     New(Config{}),
		Tools:      engine.Tools{"boltz": standIn},
		Alignments: stage,
		// Every option the engine passes: steps, samples, kernels off; and a search.
		OK: enginerun.PredictJob(t, `{"targets": [{"name": "mono", "content": ">A|protein\nMKTAYIAKQRQISFVKSHFSRQ\n"},
			{"name": "lig", "content": `+string(affinity)+`}],
			"params": {"recycling_steps": 4, "sampling_steps": 50, "diffusion_samples": 2, "fast": false}}`),
		Mixed: enginerun.PredictJob(t, `{"targets": [{"name": "good", "content": ">A|protein|empty\nMKTAYIAK\n"},
			{"name": "skip-me", "content": ">A|protein|empty\nMKTAYIAK\n"}, {"name": "oom-big", "content": ">A|protein|empty\nGGSGG\n"},
			{"name": "affoom", "content": `+string(affinity)+`}]}`),
		Failing: []string{"skip-me", "oom-big", "affoom"},
		Hang:    enginerun.PredictJob(t, `{"targets": [{"name": "slow", "content": ">a\nMK"}]}`),
		Busy:    "slow: step 1 of 300",
	})
}
