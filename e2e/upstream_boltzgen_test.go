package e2e

import (
	"net/http"
	"testing"

	"github.com/chaperone-bio/chaperone/app"
	"github.com/chaperone-bio/chaperone/catalog"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/boltzgen"
	"github.com/chaperone-bio/chaperone/internal/realtools"
)

// TestUpstreamBoltzGenOnlyOnAWorkerWithAGPU: with the real boltzgen 0.3.2 installed, a
// worker without a GPU offers none of the six BoltzGen protocols and says why, in the
// catalog and in the 503 of a create (BoltzGen has no CPU path: cli/boltzgen.py:921,942);
// the same worker with a GPU passes the engine's self-check against the real tool and
// offers them. A design cannot run here end to end: this machine has no CUDA.
func TestUpstreamBoltzGenOnlyOnAWorkerWithAGPU(t *testing.T) {
	env := realtools.Require(t, "boltzgen")
	serve := func(gpu bool) *server {
		return startServer(t, func(c *app.Config) {
			c.Engines = []engine.Engine{boltzgen.New(boltzgen.Config{Binders: catalog.Default().Binders(), GPU: gpu})}
			c.Tools = engine.Tools{"boltzgen": env.Bin("boltzgen")}
		})
	}
	cpu, gpu := serve(false), serve(true)
	if why := catalogReasons(cpu)["boltzgen"]; why != boltzgen.NoGPU {
		t.Errorf("a worker without a GPU: boltzgen's unavailable_reason %q, want %q", why, boltzgen.NoGPU)
	}
	if why := catalogReasons(gpu)["boltzgen"]; why != "" {
		t.Errorf("a worker with a GPU and the real boltzgen: unavailable (%q)", why)
	}
	n := 0
	for _, p := range catalog.Default().Protocols {
		if p.Model != "boltzgen" {
			continue
		}
		n++
		body := map[string]any{"protocol": p.ID, "spec": "entities:\n  - protein: {id: B, sequence: 12..20}\n  - ligand: {id: L, ccd: SAH}\n"}
		if p.ID == "protein-redesign" {
			body = map[string]any{"protocol": p.ID, "structure": designTarget(""),
				"spec": "entities:\n  - file:\n      path: target.pdb\n      design:\n        - chain: {id: A, res_index: 10..20}\n"}
		}
		detail := cpu.post("/v1/designs", body).problem(http.StatusServiceUnavailable, "unavailable")
		if want := "No live worker can run model boltzgen (protocol " + p.ID + "): " + boltzgen.NoGPU + "."; detail != want {
			t.Errorf("%s on a worker without a GPU: 503 detail %q, want %q", p.ID, detail, want)
		}
	}
	if n != 6 {
		t.Errorf("%d BoltzGen protocols in the catalog, want 6", n)
	}
}
