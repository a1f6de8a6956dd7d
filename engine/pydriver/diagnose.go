package pydriver

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"

	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/toolkit"
)

var _ engine.Diagnoser = (*Engine)(nil)

// Diagnose reports the interpreter, the package's version in it, where each model's
// weights come from (the operator's folder, else the Hugging Face repository from_pretrained
// downloads into the hub cache on first use), ESMFold2's chemical components, and the
// memory the weights take.
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
	// A repository is looked for in the hub cache unless every model that loads it has a
	// folder of the operator's (weights.go).
	var repos []string
	for _, m := range e.models {
		// The driver loads a model in bf16 when fast (the default), so its weights take two
		// bytes a parameter; what a forward pass adds on top depends on the input.
		d.Memory[m.id] = engine.Memory{GB: float64(m.params*2) / 1e9,
			Basis: fmt.Sprintf("at least its weights: %s parameters at 2 bytes (bf16; fp32 doubles it), activations on top", count(m.params))}
		if dir := weightsFolder(tools, m.id); dir != "" {
			d.Weights = append(d.Weights, folderWeights(m.id, dir))
			continue
		}
		for _, r := range m.repos {
			if r == backboneRepo(m, e) && weightsFolder(tools, m.backbone) != "" {
				continue
			}
			if !slices.Contains(repos, r) {
				repos = append(repos, r)
			}
		}
	}
	for _, r := range repos {
		var models []string
		for _, m := range e.models {
			if slices.Contains(m.repos, r) && weightsFolder(tools, m.id) == "" {
				models = append(models, m.id)
			}
		}
		d.Weights = append(d.Weights, toolkit.HFWeights(models, r))
	}
	if ccd, ok := e.ccd(tools); ok {
		d.Weights = append(d.Weights, ccd)
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

// backboneRepo is the repository of m's backbone model, "" when m has none.
func backboneRepo(m model, e *Engine) string {
	if b, ok := e.model(m.backbone); ok && len(b.repos) > 0 {
		return b.repos[0]
	}
	return ""
}

// folderWeights is a model's weights folder as the operator named it: present when it
// holds a config.json and weights, as from_pretrained reads a folder.
func folderWeights(id, dir string) engine.Weights {
	w := engine.Weights{Models: []string{id}, Name: fmt.Sprintf("%s's weights folder", id), Path: dir, State: engine.WeightsMissing,
		Fetch: "copy the model's Hugging Face repository there (hf download REPO --local-dir DIR)"}
	_, err := os.Stat(filepath.Join(dir, "config.json"))
	switch {
	case err != nil:
		w.Note = "no config.json in it"
	case folderBytes(dir) == 0:
		w.Note = "no *.safetensors in it"
	default:
		w.State = engine.WeightsPresent
	}
	return w
}

// ccd is where ESMFold2 finds its chemical components (esm/models/esmfold2/conformers.py
// load_ccd): $ESMCFOLD_CCD_PATH when that file exists, else ccd.pkl in the folder the driver hands it (the
// operator's esmfold2 folder), else ccd.pkl of the biohub/ESMFold2 repository, which esm
// downloads into the hub cache. ok is false for an engine without ESMFold2.
func (e *Engine) ccd(tools engine.Tools) (engine.Weights, bool) {
	var folds []string
	for _, m := range e.models {
		if m.loader == "esmfold2" {
			folds = append(folds, m.id)
		}
	}
	if len(folds) == 0 {
		return engine.Weights{}, false
	}
	w := engine.Weights{Models: folds, Name: "ESMFold2's chemical components (ccd.pkl)", State: engine.WeightsMissing}
	present := func(path string) engine.Weights {
		w.Path = path
		if _, err := os.Stat(path); err == nil {
			w.State = engine.WeightsPresent
		}
		return w
	}
	if path := os.Getenv("ESMCFOLD_CCD_PATH"); path != "" {
		// esm reads the file only when it exists, and otherwise looks on as if unset.
		if _, err := os.Stat(path); err == nil {
			return present(path), true
		}
		w.Note = fmt.Sprintf("ESMCFOLD_CCD_PATH names %s, which does not exist; esm looks on as if it were unset", path)
	}
	if dir := weightsFolder(tools, "esmfold2"); dir != "" {
		w.Fetch = "copy biohub/ESMFold2's ccd.pkl into the esmfold2 weights folder, or name it with ESMCFOLD_CCD_PATH"
		return present(filepath.Join(dir, "ccd.pkl")), true
	}
	repo := filepath.Join(toolkit.HFCache(), "models--biohub--ESMFold2", "snapshots")
	w.Fetched = true
	w.Fetch = "hf download biohub/ESMFold2 ccd.pkl, then copy that folder to the same place on the worker (or name the file with ESMCFOLD_CCD_PATH)"
	found, _ := filepath.Glob(filepath.Join(repo, "*", "ccd.pkl"))
	if len(found) > 0 {
		return present(found[0]), true
	}
	w.Path = filepath.Join(repo, "<revision>", "ccd.pkl")
	return w, true
}
