package boltzgen

import (
	"context"

	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/toolkit"
)

// testedVersion is the BoltzGen release whose command line and output layout the engine
// follows (the package doc).
const testedVersion = "0.3"

var _ engine.Diagnoser = (*Engine)(nil)

// Diagnose reports the boltzgen command, its version, and its weights: BoltzGen downloads
// its checkpoints (Hugging Face boltzgen/boltzgen-1) and molecules (the dataset
// boltzgen/inference-data) into the Hugging Face cache on first run, about 6 GB;
// `boltzgen download all` fetches them ahead.
func (e *Engine) Diagnose(ctx context.Context, tools engine.Tools) engine.Diagnosis {
	d := e.tool.Diagnose(ctx, tools, "boltzgen", testedVersion)
	const fetch = "boltzgen download all (into the Hugging Face cache, $HF_HOME or ~/.cache/huggingface; copy it to the worker)"
	checkpoints := toolkit.HFWeights(e.Models(), "boltzgen/boltzgen-1")
	checkpoints.Fetch = fetch
	d.Weights = []engine.Weights{checkpoints}
	d.Memory = map[string]engine.Memory{
		"boltzgen": {Basis: "unknown: BoltzGen publishes no figure; a 1,700-residue target ran out of memory on a 16 GB V100 (HannesStark/boltzgen#32)"},
	}
	return d
}
