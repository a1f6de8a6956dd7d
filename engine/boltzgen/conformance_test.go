package boltzgen

import (
	"testing"

	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/boltzgen/boltzgentest"
	"github.com/chaperone-bio/chaperone/engine/conformance"
)

func TestConformance(t *testing.T) {
	// Not parallel: the suite empties PATH for one of its checks.
	spec := "entities:\n  - protein: {id: B, sequence: 12..20}\n  - file:\n      path: target.cif\n      include:\n        - chain: {id: A}\n"
	hang := boltzgentest.Marker + boltzgentest.Hang + "\nentities:\n  - protein: {id: B, sequence: 12..20}\n  - ligand: {id: L, ccd: SAH}\n"
	conformance.Run(t, conformance.Harness{
		Engine: newEngine(),
		Tools:  engine.Tools{"boltzgen": standIn},
		// Every option the engine passes, with a structure beside the spec.
		OK: newJob(t, `{"protocol": "nanobody-anything", "spec": `+jsonText(spec)+`, "structure": `+jsonText(targetCIF)+
			`, "params": {"num_designs": 3, "budget": 2, "fast": false}}`),
		Hang: newJob(t, `{"protocol": "protein-anything", "spec": `+jsonText(hang)+`, "params": {"num_designs": 3}}`),
		Busy: "designing slowly",
	})
}
