package doctor_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/boltz"
	"github.com/chaperone-bio/chaperone/engine/boltzgen"
	"github.com/chaperone-bio/chaperone/engine/openfold3"
	"github.com/chaperone-bio/chaperone/engine/protenix"
	"github.com/chaperone-bio/chaperone/engine/pydriver"
	"github.com/chaperone-bio/chaperone/engine/rfd3"
)

// TestWeightsWhereEachToolKeepsThem: every engine finds its weights where its tool keeps
// them, following the tool's own environment variables, and says missing, with how to
// fetch them, where they are not.
func TestWeightsWhereEachToolKeepsThem(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", filepath.Join(dir, "home"))
	env := map[string]string{
		"BOLTZ_CACHE": filepath.Join(dir, "boltz"), "OPENFOLD_CACHE": filepath.Join(dir, "of3"),
		"PROTENIX_ROOT_DIR": filepath.Join(dir, "protenix"), "OPENDDE_ROOT_DIR": filepath.Join(dir, "opendde"),
		"HF_HOME": filepath.Join(dir, "hf"), "HF_HUB_CACHE": "", "XDG_CACHE_HOME": "",
		"FOUNDRY_CHECKPOINT_DIRS": filepath.Join(dir, "nowhere") + ":" + filepath.Join(dir, "foundry"),
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	place := func(rel, content string) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// OpenFold3's ckpt_root file moves its parameters to another folder.
	ofRoot := filepath.Join(dir, "of3-params")
	place("of3/ckpt_root", ofRoot+"\n")
	hub := filepath.Join(dir, "hf", "hub")
	tests := []struct {
		engine  engine.Engine
		tools   engine.Tools
		present []string // files to put in place, relative to dir
		want    map[string]engine.WeightsState
	}{
		// mols/ unpacked without mols.tar: boltz predict downloads the tar all the same.
		{boltz.New(boltz.Config{}), nil, []string{"boltz/boltz2_conf.ckpt", "boltz/mols/ALA.pkl"}, map[string]engine.WeightsState{
			filepath.Join(dir, "boltz", "boltz2_conf.ckpt"): engine.WeightsPresent,
			filepath.Join(dir, "boltz", "boltz2_aff.ckpt"):  engine.WeightsMissing,
			filepath.Join(dir, "boltz", "mols.tar"):         engine.WeightsMissing}},
		{openfold3.New(openfold3.Config{}), nil, []string{"of3-params/of3_ft3_v1.pt"}, map[string]engine.WeightsState{
			filepath.Join(ofRoot, "of3_ft3_v1.pt"): engine.WeightsPresent}},
		{openfold3.New(openfold3.Config{}), engine.Tools{openfold3.CheckpointTool: filepath.Join(dir, "elsewhere.pt")}, nil,
			map[string]engine.WeightsState{filepath.Join(dir, "elsewhere.pt"): engine.WeightsMissing}},
		{protenix.New(protenix.Config{}), nil, []string{"protenix/checkpoint/protenix-v2.pt"}, map[string]engine.WeightsState{
			filepath.Join(dir, "protenix", "checkpoint", "protenix-v2.pt"): engine.WeightsPresent,
			filepath.Join(dir, "protenix", "common", "components.cif"):     engine.WeightsMissing}},
		{protenix.NewOpenDDE(protenix.Config{}), nil, nil, map[string]engine.WeightsState{
			filepath.Join(dir, "opendde", "checkpoint", "opendde.pt"): engine.WeightsMissing}},
		{protenix.NewOpenDDEAbAg(protenix.Config{}), nil, []string{"opendde/checkpoint/opendde_abag.pt"}, map[string]engine.WeightsState{
			filepath.Join(dir, "opendde", "checkpoint", "opendde_abag.pt"): engine.WeightsPresent}},
		{boltzgen.New(boltzgen.Config{}), nil, []string{"hf/hub/models--boltzgen--boltzgen-1/snapshots/a1/config.json"}, map[string]engine.WeightsState{
			filepath.Join(hub, "models--boltzgen--boltzgen-1"): engine.WeightsPresent}},
		{rfd3.New(), nil, []string{"foundry/rfd3_latest.ckpt"}, map[string]engine.WeightsState{
			filepath.Join(dir, "foundry", "rfd3_latest.ckpt"): engine.WeightsPresent}},
		{pydriver.Transformers(), nil, []string{"hf/hub/models--westlake-repl--SaProt_650M_AF2/snapshots/b2/model.safetensors"}, map[string]engine.WeightsState{
			filepath.Join(hub, "models--westlake-repl--SaProt_650M_AF2"): engine.WeightsPresent,
			filepath.Join(hub, "models--westlake-repl--SaProt_1.3B_AF2"): engine.WeightsMissing}},
	}
	for _, tt := range tests {
		for _, rel := range tt.present {
			place(rel, "weights")
		}
		d := tt.engine.(engine.Diagnoser).Diagnose(context.Background(), tt.tools)
		got := map[string]engine.WeightsState{}
		for _, w := range d.Weights {
			got[w.Path] = w.State
			if w.State != engine.WeightsPresent && w.Fetch == "" {
				t.Errorf("%s: %s is %s and says not how to fetch it", tt.engine.Name(), w.Name, w.State)
			}
		}
		for path, state := range tt.want {
			if got[path] != state {
				t.Errorf("%s: %s is %q, want %s (found %v)", tt.engine.Name(), path, got[path], state, got)
			}
		}
		for _, m := range tt.engine.Models() {
			if mem, ok := d.Memory[m]; !ok || mem.Basis == "" {
				t.Errorf("%s: no GPU memory figure or basis for %s", tt.engine.Name(), m)
			}
		}
	}
}
