package pydriver

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/chaperone-bio/chaperone/engine"
)

func TestAModelsFolderIsNamedByIdOrByItsEnvironmentSpelling(t *testing.T) {
	for _, tc := range []struct {
		tools engine.Tools
		id    string
		want  string
	}{
		{engine.Tools{"esmc-300m": "/m/a"}, "esmc-300m", "/m/a"},
		// CHAPERONE_TOOL_ESMC_300M and CHAPERONE_TOOL_SAPROT_1_3B, lower-cased by --tool's reader.
		{engine.Tools{"esmc_300m": "/m/b"}, "esmc-300m", "/m/b"},
		{engine.Tools{"saprot_1_3b": "/m/c"}, "saprot-1.3b", "/m/c"},
		{engine.Tools{"esmc-300m": "/m/flag", "esmc_300m": "/m/env"}, "esmc-300m", "/m/flag"},
		{engine.Tools{"esmc-600m": "/m/d"}, "esmc-300m", ""},
	} {
		if got := weightsFolder(tc.tools, tc.id); got != tc.want {
			t.Errorf("weightsFolder(%v, %s) = %q; want %q", tc.tools, tc.id, got, tc.want)
		}
	}
}

func TestASpecNamesTheFoldersAndSizesTheLoadByThem(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "model.safetensors"), make([]byte, 1234), 0o644); err != nil {
		t.Fatal(err)
	}
	eng := ESM()
	esmc, _ := eng.model("esmc-300m")
	if spec := esmc.spec(false, engine.Tools{"esmc-300m": dir}); spec["folder"] != dir || spec["bytes"] != int64(1234) || spec["d_model"] != 960 {
		t.Errorf("esmc-300m with a folder: %v; want the folder, its 1234 bytes and d_model 960", spec)
	}
	if spec := esmc.spec(true, nil); spec["folder"] != nil || spec["bytes"] != int64(600_000_000) || spec["name"] != "biohub/ESMC-300M" {
		t.Errorf("esmc-300m fast from the hub: %v; want the repository and 2 bytes a parameter", spec)
	}
	fold, _ := eng.model("esmfold2")
	if spec := fold.spec(false, engine.Tools{"esmc-6b": dir}); spec["backbone"] != dir || spec["folder"] != nil || spec["d_model"] != nil {
		t.Errorf("esmfold2 with an esmc-6b folder: %v; want it as the backbone", spec)
	}
}

func TestDoctorFindsESMFold2sChemicalComponentsWhereEsmReadsThem(t *testing.T) {
	hub := t.TempDir()
	t.Setenv("HF_HUB_CACHE", hub)
	t.Setenv("ESMCFOLD_CCD_PATH", "")
	folder := t.TempDir()
	cached := filepath.Join(hub, "models--biohub--ESMFold2", "snapshots", "abc123", "ccd.pkl")
	named := filepath.Join(t.TempDir(), "my.pkl")
	eng := ESM()
	for _, tc := range []struct {
		name  string
		env   string
		tools engine.Tools
		make  string // the file that exists
		path  string
		state engine.WeightsState
	}{
		{"nothing anywhere", "", nil, "", filepath.Join(hub, "models--biohub--ESMFold2", "snapshots", "<revision>", "ccd.pkl"), engine.WeightsMissing},
		{"the hub cache", "", nil, cached, cached, engine.WeightsPresent},
		{"the esmfold2 folder", "", engine.Tools{"esmfold2": folder}, filepath.Join(folder, "ccd.pkl"), filepath.Join(folder, "ccd.pkl"), engine.WeightsPresent},
		{"ESMCFOLD_CCD_PATH before the folder", named, engine.Tools{"esmfold2": folder}, named, named, engine.WeightsPresent},
		{"ESMCFOLD_CCD_PATH naming nothing (esm looks on)", filepath.Join(folder, "none.pkl"), engine.Tools{"esmfold2": folder},
			filepath.Join(folder, "ccd.pkl"), filepath.Join(folder, "ccd.pkl"), engine.WeightsPresent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("ESMCFOLD_CCD_PATH", tc.env)
			if tc.make != "" {
				if err := os.MkdirAll(filepath.Dir(tc.make), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(tc.make, []byte("x"), 0o644); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { os.Remove(tc.make) })
			}
			w, ok := eng.ccd(tc.tools)
			if !ok || w.Path != tc.path || w.State != tc.state {
				t.Errorf("ccd = %+v; want %s %s", w, tc.path, tc.state)
			}
		})
	}
	if _, ok := Transformers().ccd(nil); ok {
		t.Error("the transformers engine, which has no ESMFold2, reports a ccd.pkl")
	}
}
