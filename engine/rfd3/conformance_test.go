package rfd3

import (
	"testing"

	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/conformance"
	"github.com/chaperone-bio/chaperone/engine/rfd3/rfd3test"
)

func TestConformance(t *testing.T) {
	// Not parallel: the suite empties PATH for one of its checks.
	conformance.Run(t, conformance.Harness{
		Engine: New(),
		Tools:  engine.Tools{"rfd3": standIn},
		OK:     newJob(t, "rfd3-binder", targetPDB(""), "20-30,/0,A1-12", `{"num_designs": 3, "num_timesteps": 20, "seed": 1}`),
		Hang:   newJob(t, "rfd3-scaffold", targetPDB(rfd3test.Hang), "A1-5,10", `{"num_designs": 2}`),
		Busy:   "Sampling diffusion step 1 of",
	})
}
