package main

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/chaperone-bio/chaperone/app"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/builtin"
)

// builtinEngines are the engines of real upstream tools that this build offers, set up
// for this machine: its GPUs.
func builtinEngines() []engine.Engine {
	return builtin.Engines(builtin.Config{GPU: len(app.GPUs()) > 0})
}

// msaServerURL checks the --msa-server setting and returns it without a trailing slash,
// as the searcher appends its endpoints to it.
func msaServerURL(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("--msa-server: want the http or https URL of a ColabFold-compatible MMseqs2 server, got %q", s)
	}
	return strings.TrimRight(s, "/"), nil
}
