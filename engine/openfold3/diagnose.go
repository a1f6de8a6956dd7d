package openfold3

import (
	"context"

	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/toolkit"
)

// testedVersion is the OpenFold3 release whose source the engine was written against
// (0.3.1, research brief §3).
const testedVersion = "0.3"

var _ engine.Diagnoser = (*Engine)(nil)

// Diagnose reports run_openfold, its version, and the checkpoint, which the real tool
// would only download after asking on a terminal, so a worker needs it in place.
func (e *Engine) Diagnose(ctx context.Context, tools engine.Tools) engine.Diagnosis {
	d := e.predict.Diagnose(ctx, tools, "openfold3", testedVersion)
	const fetch = "aws s3 cp s3://openfold/openfold3_params/" + checkpointName + " . --no-sign-request " +
		"(or setup_openfold), into $" + cacheEnv + " (default ~/.openfold3) or anywhere given with --tool " + CheckpointTool + "=PATH"
	w := engine.Weights{Models: e.Models(), Name: checkpointName + " (the checkpoint)", State: engine.WeightsUnknown, Fetch: fetch}
	if place, err := checkpointPlace(tools); err != nil {
		w.Note = err.Error()
	} else {
		w = toolkit.FileWeights(e.Models(), w.Name, place, false, fetch)
	}
	d.Weights = []engine.Weights{w}
	d.Memory = map[string]engine.Memory{
		"openfold3": {GB: 32, Basis: "OpenFold3's stated minimum: CUDA 12.1 and 32 GB of GPU memory (docs/source/Installation.md)"},
	}
	return d
}
