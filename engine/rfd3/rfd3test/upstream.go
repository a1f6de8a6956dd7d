package rfd3test

import (
	"path/filepath"
	"runtime"
	"testing"

	"github.com/chaperone-bio/chaperone/internal/realtools"
)

// Upstream is rfd3's environment of the real-package tier, with the machine isolated
// (realtools.Isolate) and foundry's checkpoint folders unset, so that only the test's own
// checkpoints are found. It returns the isolated home. It uses t.Setenv, so the test must
// not be parallel.
func Upstream(t *testing.T) (realtools.Env, string) {
	t.Helper()
	env := realtools.Require(t, "rfd3")
	home := realtools.Isolate(t)
	t.Setenv("FOUNDRY_CHECKPOINT_DIRS", "")
	t.Setenv("FOUNDRY_CHECKPOINTS_DIR", "")
	return env, home
}

// Script runs the rfd3 engine's tier script (engine/rfd3/testdata/upstream.py), which
// drives rc-foundry's own code, and decodes its JSON answer into out.
func Script(t *testing.T, env realtools.Env, out any, args ...string) {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	env.RunJSON(t, out, filepath.Join(filepath.Dir(file), "..", "testdata", "upstream.py"), args...)
}
