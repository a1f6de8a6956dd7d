package boltztest

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/chaperone-bio/chaperone/internal/realtools"
)

// CCD codes of the molecules folder that Cache makes: the 21 canonical residues Boltz loads
// for every input (const.canonical_tokens), the nucleotides, and every ligand and modified
// residue of the test inputs (bio/testdata/inputs, engine/boltz/testdata/yaml, the tier's
// own jobs).
var CCD = []string{
	"ALA", "ARG", "ASN", "ASP", "CYS", "GLN", "GLU", "GLY", "HIS", "ILE", "LEU", "LYS", "MET", "PHE", "PRO", "SER",
	"THR", "TRP", "TYR", "VAL", "UNK",
	"A", "C", "G", "U", "DA", "DC", "DG", "DT",
	"ADP", "NAG", "NAD", "HEM", "SEP", "PSU", "SAH", "BMA", "MG", "5MC",
}

// Unpreparable is a CCD code whose molecule Cache writes without a conformer: a single
// heavy atom, which Boltz parses without one (schema.py's parse_ccd_residue), and whose
// featurizer then draws a conformer from none (featurizerv2.py), so Boltz processes the
// input and then cannot prepare it for the model.
const Unpreparable = "ZN"

// Cache is a Boltz cache folder for the real-package tier, as $BOLTZ_CACHE: the files
// boltz predict's download_boltz2 (main.py:198-258) wants before it runs, none downloaded.
// mols/ holds a molecule per code of CCD, built from biotite's CCD by our
// testdata/tier/mols.py, and Unpreparable. With model, boltz2_conf.ckpt is a Boltz-2 of
// random weights (testdata/tier/randomckpt.py) that predicts for real; without it, and
// always for boltz2_aff.ckpt and mols.tar, the file is a placeholder that passes the check
// and fails to load. The molecules and the model are made once per tier environment and
// kept beside the tier's environments.
func Cache(t testing.TB, env realtools.Env, model bool) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"boltz2_conf.ckpt", "boltz2_aff.ckpt", "mols.tar"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("placeholder, not weights\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mols := fixture(t, env, "mols", func(out string) []string {
		return append([]string{script("mols.py"), out}, append(CCD, Unpreparable+":noconf")...)
	})
	if err := os.Symlink(mols, filepath.Join(dir, "mols")); err != nil {
		t.Fatal(err)
	}
	if model {
		ckpt := fixture(t, env, "model", func(out string) []string {
			return []string{script("randomckpt.py"), filepath.Join(out, "boltz2_conf.ckpt")}
		})
		if err := os.Remove(filepath.Join(dir, "boltz2_conf.ckpt")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(ckpt, "boltz2_conf.ckpt"), filepath.Join(dir, "boltz2_conf.ckpt")); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// script is one of our scripts in engine/boltz/testdata/tier.
func script(name string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "testdata", "tier", name)
}

// fixture is a folder that the environment's Python made with args(folder), made again when
// the environment or our scripts change.
func fixture(t testing.TB, env realtools.Env, kind string, args func(out string) []string) string {
	t.Helper()
	return env.Fixture(t, "boltz-"+kind, []string{script("mols.py"), script("randomckpt.py")}, func(dir string) {
		a := args(dir)
		env.Run(t, nil, a[0], a[1:]...)
	})
}

// Isolate points a test's environment, which the worker passes to boltz, at the cache and
// at nothing outside (realtools.Isolate). It uses t.Setenv, so the test must not be parallel.
func Isolate(t *testing.T, cache string) {
	t.Helper()
	realtools.Isolate(t)
	t.Setenv("BOLTZ_CACHE", cache)
}
