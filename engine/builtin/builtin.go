// Package builtin is the one list of the engines of real upstream tools that this build
// offers. The server, the worker, the Slurm batch job, doctor and the tests that need every
// engine all take it from here, so a new engine is added in one place.
package builtin

import (
	"github.com/chaperone-bio/chaperone/catalog"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/boltz"
	"github.com/chaperone-bio/chaperone/engine/boltzgen"
	"github.com/chaperone-bio/chaperone/engine/openfold3"
	"github.com/chaperone-bio/chaperone/engine/protenix"
	"github.com/chaperone-bio/chaperone/engine/pydriver"
	"github.com/chaperone-bio/chaperone/engine/rfd3"
)

// Config is what the engines need to know of the machine and its operator.
type Config struct {
	// GPU says whether the machine has a GPU, which decides the tools' kernel flags.
	GPU bool
}

// Engines returns every built-in engine, set up for cfg.
func Engines(cfg Config) []engine.Engine {
	pc := protenix.Config{GPU: cfg.GPU}
	return []engine.Engine{
		boltz.New(boltz.Config{GPU: cfg.GPU}),
		openfold3.New(openfold3.Config{GPU: cfg.GPU}),
		protenix.New(pc), protenix.NewOpenDDE(pc), protenix.NewOpenDDEAbAg(pc),
		boltzgen.New(boltzgen.Config{Binders: catalog.Default().Binders(), GPU: cfg.GPU}),
		rfd3.New(),
		pydriver.ESM(),
		pydriver.Transformers(),
	}
}
