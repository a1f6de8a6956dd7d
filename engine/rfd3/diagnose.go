package rfd3

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/toolkit"
)

// testedVersion is the rc-foundry release whose source the engine was written against
// (research brief §7).
const testedVersion = "0.2"

var _ engine.Diagnoser = (*Engine)(nil)

// Diagnose reports the rfd3 command, its version, and RFdiffusion3's checkpoint, which
// `foundry install rfd3` puts in ~/.foundry/checkpoints or a folder of
// $FOUNDRY_CHECKPOINT_DIRS (colon-separated), where rfd3 looks for it.
func (e *Engine) Diagnose(ctx context.Context, tools engine.Tools) engine.Diagnosis {
	d := e.tool.Diagnose(ctx, tools, "rc-foundry", testedVersion)
	dirs := []string{filepath.Join(toolkit.Home(), ".foundry", "checkpoints")}
	for _, dir := range strings.Split(os.Getenv("FOUNDRY_CHECKPOINT_DIRS"), ":") {
		if dir != "" {
			dirs = append(dirs, dir)
		}
	}
	// foundry's registry names the file; installs seen in the wild call it rfd3_latest.ckpt,
	// so any rfd3*.ckpt in those folders counts.
	w := engine.Weights{Models: e.Models(), Name: "rfd3*.ckpt (the RFdiffusion3 checkpoint)", Path: strings.Join(dirs, ":"),
		State: engine.WeightsMissing,
		Fetch: "foundry install rfd3 --checkpoint-dir DIR, then FOUNDRY_CHECKPOINT_DIRS=DIR in the worker's environment"}
	for _, dir := range dirs {
		if found, _ := filepath.Glob(filepath.Join(dir, "rfd3*.ckpt")); len(found) > 0 {
			w.Path, w.State = found[0], engine.WeightsPresent
			break
		}
	}
	d.Weights = []engine.Weights{w}
	d.Memory = map[string]engine.Memory{
		"rfd3": {Basis: "unknown: rc-foundry publishes no figure (it offers low_memory_mode)"},
	}
	return d
}
