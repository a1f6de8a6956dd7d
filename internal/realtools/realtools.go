// Package realtools gives the real-package test tier the pinned upstream tools: the virtual
// environment that realtools.py (beside this file) installed for a tool of engine/pins, in a
// cache folder outside the repository. `make realtools` installs them all and runs the tier;
// .ci/run does the same with CHAPERONE_REALTOOLS=required.
//
// A test of the tier (named TestUpstream…) calls Require. Without CHAPERONE_REALTOOLS it
// skips, naming the command that runs it: the tier installs about 8 GB and takes minutes, so
// a plain `go test ./...` leaves it out. With it, an environment that is missing fails the
// test: a tier that quietly skipped would prove nothing.
package realtools

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/chaperone-bio/chaperone/engine/pins"
)

// RequiredEnv turns the tier on.
const RequiredEnv = "CHAPERONE_REALTOOLS"

// Env is one tool's installed environment.
type Env struct {
	Dir string
	Pin pins.Pin
}

// Bin is a program of the environment, for example its console script "boltz".
func (e Env) Bin(name string) string { return filepath.Join(e.Dir, "bin", name) }

// Python is the environment's interpreter.
func (e Env) Python() string { return e.Bin("python") }

// Require returns the environment of tool, skipping the test unless the tier is on and
// failing it when the tier is on and the environment is not installed.
func Require(t testing.TB, tool string) Env {
	t.Helper()
	pin := pins.For(tool)
	if os.Getenv(RequiredEnv) == "" {
		t.Skipf("real-package test of %s: run `make realtools` (installs the pinned releases from PyPI and runs this tier)", pin.Requirement())
	}
	out, err := exec.Command("python3", Script(), "where", tool).CombinedOutput()
	if err != nil {
		t.Fatalf("%s is on but %s: %s\ninstall it with `python3 %s install %s` (or `make realtools`)",
			RequiredEnv, strings.TrimSpace(string(out)), err, Script(), tool)
	}
	dir := strings.TrimSpace(string(out))
	// Read here, the environment's record enters go test's cache key: a result cached for
	// one installation is not reused for another.
	if _, err := os.ReadFile(filepath.Join(dir, "pin.json")); err != nil {
		t.Fatal(err)
	}
	return Env{Dir: dir, Pin: pin}
}

// Script is realtools.py.
func Script() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "realtools.py")
}
