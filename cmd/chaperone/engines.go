package main

import "github.com/chaperone-bio/chaperone/engine"

// builtinEngines are the engines of real upstream tools that this build offers. The first,
// boltz for boltz2, comes with its own issue; until then the server runs with none, and
// every create answers 503 naming the missing tool.
func builtinEngines() []engine.Engine { return nil }
