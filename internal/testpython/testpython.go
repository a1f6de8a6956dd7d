// Package testpython gives tests Debian's Python, the independent reader that files we write
// are checked against (numpy for npy/npz, PyYAML for YAML, zipfile for archives). Debian's
// packages belong to /usr/bin/python3, not to whichever python3 is first on PATH.
//
// .ci/run installs what these tests need, so under CI (the CI variable set) a missing
// interpreter or module fails the test: a check that quietly skipped in CI would count for
// nothing. Elsewhere it skips, naming the package to install.
package testpython

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Path is Debian's Python.
const Path = "/usr/bin/python3"

// Require returns Path once it imports every module, and otherwise fails the test under CI
// and skips it elsewhere.
func Require(t testing.TB, modules ...string) string {
	t.Helper()
	script := "pass"
	if len(modules) > 0 {
		script = "import " + strings.Join(modules, ", ")
	}
	out, err := exec.Command(Path, "-c", script).CombinedOutput()
	if err == nil {
		return Path
	}
	msg := "%s cannot run %q (apt-get install python3 python3-numpy python3-yaml): %v %s"
	if os.Getenv("CI") != "" {
		t.Fatalf(msg, Path, script, err, out)
	}
	t.Skipf(msg, Path, script, err, out)
	return ""
}
