package pydriver

import (
	"context"
	"fmt"
	"os/exec"
	"slices"

	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/toolkit"
)

var _ engine.Diagnoser = (*Engine)(nil)

// Diagnose reports the interpreter, the package's version in it, the Hugging Face
// repositories the models load (from_pretrained downloads them into the hub cache on first
// use), and the memory their weights take.
func (e *Engine) Diagnose(ctx context.Context, tools engine.Tools) engine.Diagnosis {
	d := engine.Diagnosis{Looked: "python3 on PATH"}
	if e.tested != "" {
		d.Tested = []string{e.tested}
	}
	if p := tools[e.name]; p != "" {
		d.Looked = fmt.Sprintf("--tool %s=%s", e.name, p)
	}
	if python, err := e.interpreterPath(tools); err == nil {
		if _, err := exec.LookPath(python); err == nil {
			d.Tool = python
		}
	}
	if d.Tool == "" {
		d.VersionUnknown = "no interpreter was found"
	} else {
		d.Version, d.VersionUnknown = toolkit.PackageVersion(ctx, d.Tool, e.name)
	}
	d.Memory = map[string]engine.Memory{}
	var repos []string
	for _, m := range e.models {
		// The driver loads a model in bf16 when fast (the default), so its weights take two
		// bytes a parameter; what a forward pass adds on top depends on the input.
		d.Memory[m.id] = engine.Memory{GB: float64(m.params*2) / 1e9,
			Basis: fmt.Sprintf("at least its weights: %s parameters at 2 bytes (bf16; fp32 doubles it), activations on top", count(m.params))}
		for _, r := range m.repos {
			if !slices.Contains(repos, r) {
				repos = append(repos, r)
			}
		}
	}
	for _, r := range repos {
		var models []string
		for _, m := range e.models {
			if slices.Contains(m.repos, r) {
				models = append(models, m.id)
			}
		}
		d.Weights = append(d.Weights, toolkit.HFWeights(models, r))
	}
	return d
}

// count is a parameter count in words: "650 million", "6.5 billion".
func count(n int64) string {
	if n < 1_000_000_000 {
		return fmt.Sprintf("%d million", n/1_000_000)
	}
	return fmt.Sprintf("%.2g billion", float64(n)/1e9)
}
