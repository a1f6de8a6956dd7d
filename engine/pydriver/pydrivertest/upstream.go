package pydrivertest

import (
	"fmt"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/chaperone-bio/chaperone/internal/realtools"
)

// Upstream is a script of the real-package tier (../testdata/upstream): models.py builds
// small models with the real packages, direct.py compares a job's files with direct calls.
func Upstream(script string) string {
	_, here, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(here), "..", "testdata", "upstream", script)
}

// Shape is a small model's size: the catalog's width, and few heads and layers.
type Shape struct{ Width, Heads, Layers int }

// Catalog widths with two layers: what the tier's ESM C and SaProt models are built as.
var (
	ESMC300M = Shape{960, 15, 2}
	ESMC600M = Shape{1152, 18, 2}
	SaProt   = Shape{1280, 20, 2}
	// ESMC6B has one layer: esmc-6b's width makes even that 320 MB.
	ESMC6B = Shape{2560, 40, 1}
)

// TinyModel is a folder holding a model of kind "esmc" (built in env, the esm package's
// environment) or "saprot" (the transformers environment) with random weights, saved the
// way the package loads it; made once per environment and models.py (realtools.Fixture).
func TinyModel(t testing.TB, env realtools.Env, kind string, s Shape) string {
	t.Helper()
	name := fmt.Sprintf("%s-%d-%d-%d", kind, s.Width, s.Heads, s.Layers)
	return env.Fixture(t, name, []string{Upstream("models.py")}, func(dir string) {
		env.Run(t, []string{"HF_HUB_OFFLINE=1"}, Upstream("models.py"), kind, dir,
			fmt.Sprint(s.Width), fmt.Sprint(s.Heads), fmt.Sprint(s.Layers))
	})
}

// TinyESMFold2 is a folder holding a small ESMFold2 with random weights, its ESM C backbone
// bundled, and the ccd.pkl of the standard residues, SEP and MSE (esmfold2.py), built in
// env, the esm package's environment.
func TinyESMFold2(t testing.TB, env realtools.Env) string {
	t.Helper()
	return env.Fixture(t, "esmfold2", []string{Upstream("esmfold2.py")}, func(dir string) {
		env.Run(t, []string{"HF_HUB_OFFLINE=1"}, Upstream("esmfold2.py"), dir)
	})
}
