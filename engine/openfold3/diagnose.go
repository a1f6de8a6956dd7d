package openfold3

import (
	"context"

	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/pins"
	"github.com/chaperone-bio/chaperone/engine/toolkit"
)

var _ engine.Diagnoser = (*Engine)(nil)

// Diagnose reports run_openfold, its version against the pinned release (engine/pins), and
// the checkpoint, which the real tool would only download after asking on a terminal
// (entry_points/parameters.py:87-107), so a worker needs it in place.
func (e *Engine) Diagnose(ctx context.Context, tools engine.Tools) engine.Diagnosis {
	d := e.predict.Diagnose(ctx, tools, "openfold3", pins.For(e.predict.Name).Version)
	const fetch = fetchCheckpoint + ", into $" + cacheEnv + " (default ~/.openfold3) or anywhere given with --tool " + CheckpointTool + "=PATH"
	w := engine.Weights{Models: e.Models(), Name: checkpointName + " (OpenBind-0, the checkpoint)", State: engine.WeightsUnknown, Fetch: fetch}
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
