package main

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/chaperone-bio/chaperone/app"
	"github.com/chaperone-bio/chaperone/catalog"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/boltz"
	"github.com/chaperone-bio/chaperone/engine/boltzgen"
	"github.com/chaperone-bio/chaperone/engine/openfold3"
	"github.com/chaperone-bio/chaperone/engine/protenix"
	"github.com/chaperone-bio/chaperone/engine/pydriver"
	"github.com/chaperone-bio/chaperone/engine/rfd3"
)

// builtinEngines are the engines of real upstream tools that this build offers, set up
// for this machine: its GPUs, and the operator's alignment server.
func builtinEngines(msaServer string) []engine.Engine {
	gpu := len(app.GPUs()) > 0
	pc := protenix.Config{MSAServerURL: msaServer, GPU: gpu}
	return []engine.Engine{
		boltz.New(boltz.Config{MSAServerURL: msaServer, GPU: gpu}),
		openfold3.New(openfold3.Config{MSAServerURL: msaServer, GPU: gpu}),
		protenix.New(pc), protenix.NewOpenDDE(pc), protenix.NewOpenDDEAbAg(pc),
		boltzgen.New(boltzgen.Config{Binders: catalog.Default().Binders()}),
		rfd3.New(),
		pydriver.ESM(pydriver.Config{MSAServerURL: msaServer}),
		pydriver.Transformers(),
	}
}

// msaServerURL checks the --msa-server setting and returns it without a trailing slash,
// as the tools append their endpoints to it.
func msaServerURL(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("--msa-server: want the http or https URL of a ColabFold-compatible MMseqs2 server, got %q", s)
	}
	return strings.TrimRight(s, "/"), nil
}
