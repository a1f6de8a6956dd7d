package rfd3

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/pins"
	"github.com/chaperone-bio/chaperone/engine/toolkit"
)

var _ engine.Diagnoser = (*Engine)(nil)

// checkpointFile is the file rfd3 loads for its default checkpoint "rfd3" (the engine
// passes no ckpt_path): foundry/inference_engines/checkpoint_registry.py:86-89 at 0.2.0.
// rfd3na_1190.ckpt, beside it after `foundry install base-models`, is another model's.
const checkpointFile = "rfd3_latest.ckpt"

// checkpointDirs are the folders rfd3 searches for checkpointFile, in its order
// (checkpoint_registry.py:25-41): those of $FOUNDRY_CHECKPOINT_DIRS (colon-separated), or
// when that is empty of the older $FOUNDRY_CHECKPOINTS_DIR, then ~/.foundry/checkpoints.
func checkpointDirs() []string {
	env := os.Getenv("FOUNDRY_CHECKPOINT_DIRS")
	if env == "" {
		env = os.Getenv("FOUNDRY_CHECKPOINTS_DIR")
	}
	var dirs []string
	for _, dir := range strings.Split(env, ":") {
		if dir = strings.TrimSpace(dir); dir != "" {
			dirs = append(dirs, dir)
		}
	}
	return append(dirs, filepath.Join(toolkit.Home(), ".foundry", "checkpoints"))
}

// Diagnose reports the rfd3 command, its version, and RFdiffusion3's checkpoint where
// rfd3 itself would find it: the first of checkpointDirs that holds checkpointFile.
func (e *Engine) Diagnose(ctx context.Context, tools engine.Tools) engine.Diagnosis {
	pin := pins.For(e.tool.Name)
	d := e.tool.Diagnose(ctx, tools, pin.Package, pin.Version)
	dirs := checkpointDirs()
	w := engine.Weights{Models: e.Models(), Name: checkpointFile + " (the RFdiffusion3 checkpoint)", Path: strings.Join(dirs, ":"),
		State: engine.WeightsMissing,
		Fetch: "foundry install rfd3 --checkpoint-dir DIR, then FOUNDRY_CHECKPOINT_DIRS=DIR in the worker's environment"}
	for _, dir := range dirs {
		p := filepath.Join(dir, checkpointFile)
		if _, err := os.Stat(p); err == nil {
			w.Path, w.State = p, engine.WeightsPresent
			break
		}
	}
	d.Weights = []engine.Weights{w}
	d.Memory = map[string]engine.Memory{
		"rfd3": {Basis: "unknown: rc-foundry publishes no figure (it offers low_memory_mode)"},
	}
	return d
}
