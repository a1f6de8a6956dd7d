package boltzgen

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

// What BoltzGen downloads on first run (cli/boltzgen.py:120-139, ARTIFACTS): the design,
// inverse-folding, folding and affinity checkpoints of the model repo boltzgen/boltzgen-1,
// and the molecules (mols.zip) of the dataset boltzgen/inference-data, both through
// huggingface_hub.hf_hub_download into the Hugging Face cache (cli/boltzgen.py:1360-1388).
// Offline, a run needs every one of them there: the moldir is resolved first, by every
// subcommand (cli/boltzgen.py:633, 715).
const (
	modelRepo   = "boltzgen/boltzgen-1"
	dataRepo    = "boltzgen/inference-data"
	molsFile    = "mols.zip"
	fetchAdvice = "boltzgen download all (into the Hugging Face cache, $HF_HOME or ~/.cache/huggingface; copy it to the worker)"
)

var checkpoints = []string{"boltzgen1_diverse.ckpt", "boltzgen1_adherence.ckpt", "boltzgen1_ifold.ckpt",
	"boltz2_conf_final.ckpt", "boltz2_aff.ckpt"}

// Diagnose reports the boltzgen command, its version against the pinned release
// (engine/pins), and its weights: the model repo's checkpoints and the molecules file,
// about 6 GB that `boltzgen download all` fetches ahead.
func (e *Engine) Diagnose(ctx context.Context, tools engine.Tools) engine.Diagnosis {
	d := e.tool.Diagnose(ctx, tools, "boltzgen", pins.For("boltzgen").Version)
	model := toolkit.HFWeights(e.Models(), modelRepo)
	model.Fetch = fetchAdvice
	if model.State == engine.WeightsPresent {
		if missing := missingFiles(model.Path, checkpoints...); len(missing) > 0 {
			model.State = engine.WeightsMissing
			model.Note = "the snapshot lacks " + strings.Join(missing, ", ")
		}
	}
	mols := engine.Weights{Models: e.Models(), Name: "Hugging Face dataset " + dataRepo + " (" + molsFile + ", BoltzGen's molecules)",
		Path: filepath.Join(toolkit.HFCache(), "datasets--"+strings.ReplaceAll(dataRepo, "/", "--")), State: engine.WeightsMissing,
		Fetched: true, Fetch: fetchAdvice}
	if len(missingFiles(mols.Path, molsFile)) == 0 {
		mols.State = engine.WeightsPresent
	}
	d.Weights = []engine.Weights{model, mols}
	d.Memory = map[string]engine.Memory{
		"boltzgen": {Basis: "unknown: BoltzGen publishes no figure; a 1,700-residue target ran out of memory on a 16 GB V100 (HannesStark/boltzgen#32)"},
	}
	return d
}

// missingFiles are the files of names that no snapshot of a Hugging Face cache folder
// (repo/snapshots/<revision>/) holds; all of them when it has no snapshot.
func missingFiles(repo string, names ...string) []string {
	snaps, _ := filepath.Glob(filepath.Join(repo, "snapshots", "*"))
	var missing []string
	for _, name := range names {
		found := false
		for _, s := range snaps {
			if info, err := os.Stat(filepath.Join(s, name)); err == nil && info.Mode().IsRegular() {
				found = true
				break
			}
		}
		if !found {
			missing = append(missing, name)
		}
	}
	return missing
}
