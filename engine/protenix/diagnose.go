package protenix

import (
	"context"
	"os"
	"path/filepath"

	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/pins"
	"github.com/chaperone-bio/chaperone/engine/toolkit"
)

var _ engine.Diagnoser = (*Engine)(nil)

// Diagnose reports the tool, its version, the checkpoint its model loads, and the GPU
// memory it needs.
func (e *Engine) Diagnose(ctx context.Context, tools engine.Tools) engine.Diagnosis {
	f := e.flavor
	d := e.tool.Diagnose(ctx, tools, f.command, pins.For(f.command).Version)
	models := e.Models()
	switch {
	case f.checkpoint != "":
		// An explicit --load_checkpoint_path is never downloaded by the tool.
		d.Weights = []engine.Weights{toolkit.FileWeights(models, f.checkpoint+" (OpenDDE's antibody-antigen checkpoint)",
			e.checkpoint(), false, "curl -LO "+openDDEWeights+f.checkpoint+" into checkpoint/ of OpenDDE's data root ($OPENDDE_ROOT_DIR or ~/.cache/opendde)")}
	case f.command == "opendde":
		d.Weights = []engine.Weights{toolkit.FileWeights(models, "opendde.pt (OpenDDE's general checkpoint)",
			filepath.Join(e.cfg.OpenDDERoot, "checkpoint", "opendde.pt"), true,
			"curl -LO "+openDDEWeights+"opendde.pt into checkpoint/ of OpenDDE's data root ($OPENDDE_ROOT_DIR or ~/.cache/opendde)")}
	default:
		root := protenixRoot()
		d.Weights = []engine.Weights{
			toolkit.FileWeights(models, "protenix-v2.pt (the checkpoint)", filepath.Join(root, "checkpoint", "protenix-v2.pt"), true,
				"curl -LO https://protenix.tos-cn-beijing.volces.com/checkpoint/protenix-v2.pt into checkpoint/ of $PROTENIX_ROOT_DIR (default your home folder)"),
			toolkit.FileWeights(models, "common/components.cif (the CCD, with the other files of common/)", filepath.Join(root, "common", "components.cif"), true,
				"run protenix pred once on a machine with internet and copy $PROTENIX_ROOT_DIR/common"),
		}
	}
	d.Memory = map[string]engine.Memory{f.model: f.memory}
	return d
}

// openDDEWeights is where OpenDDE's checkpoints are published, at the revision the engine
// was written against (research brief §5.1).
const openDDEWeights = "https://huggingface.co/aurekaresearch/OpenDDE/resolve/eddd563ce96571f784012edd8f045181c8f8627d/"

// protenixRoot is Protenix's data root as configs/configs_data.py finds it:
// $PROTENIX_ROOT_DIR, else the home folder.
func protenixRoot() string {
	if d := os.Getenv("PROTENIX_ROOT_DIR"); d != "" {
		return d
	}
	return toolkit.Home()
}
