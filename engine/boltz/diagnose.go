package boltz

import (
	"context"
	"os"
	"path/filepath"

	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/pins"
	"github.com/chaperone-bio/chaperone/engine/toolkit"
)

var _ engine.Diagnoser = (*Engine)(nil)

// Diagnose reports the boltz command, its version against the pinned release (the one the
// real-package tier runs), and the files of Boltz's cache ($BOLTZ_CACHE, else ~/.boltz:
// main.py's get_cache_path). Before every run boltz predict's download_boltz2
// (boltz/main.py:198-258 in 2.2.1) downloads each of mols.tar, boltz2_conf.ckpt and
// boltz2_aff.ckpt that is missing, even when mols/ is already unpacked, so a worker without
// internet needs all three files; mols/ it unpacks from mols.tar itself.
func (e *Engine) Diagnose(ctx context.Context, tools engine.Tools) engine.Diagnosis {
	d := e.tool.Diagnose(ctx, tools, "boltz", pins.For("boltz").Version)
	cache := os.Getenv("BOLTZ_CACHE")
	if cache == "" {
		cache = filepath.Join(toolkit.Home(), ".boltz")
	}
	models := e.Models()
	const hub = "https://huggingface.co/boltz-community/boltz-2/resolve/main/"
	d.Weights = []engine.Weights{
		toolkit.FileWeights(models, "boltz2_conf.ckpt (the structure model)", filepath.Join(cache, "boltz2_conf.ckpt"), true,
			"curl -LO "+hub+"boltz2_conf.ckpt into the cache folder ($BOLTZ_CACHE or ~/.boltz)"),
		toolkit.FileWeights(models, "boltz2_aff.ckpt (the affinity model)", filepath.Join(cache, "boltz2_aff.ckpt"), true,
			"curl -LO "+hub+"boltz2_aff.ckpt into the cache folder ($BOLTZ_CACHE or ~/.boltz)"),
		toolkit.FileWeights(models, "mols.tar (the CCD molecules; boltz unpacks it into mols/ and needs the file itself every run)",
			filepath.Join(cache, "mols.tar"), true, "curl -LO "+hub+"mols.tar into the cache folder ($BOLTZ_CACHE or ~/.boltz)"),
	}
	d.Memory = map[string]engine.Memory{
		// No official figure: Boltz's maintainer says 24 GB is not enough for 1,400 residues
		// (jwohlwend/boltz#236), and users fold about 1,200 on a 40 GB A100 (#104).
		"boltz2": {GB: 40, Basis: "about 1,200 residues fit 40 GB and 24 GB is too little for 1,400 (Boltz issues #104, #236; no official figure)"},
	}
	return d
}
