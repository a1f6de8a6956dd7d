package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/chaperone-bio/chaperone/app"
)

// The Python client (clients/python) is proved by its own pytest suite, run here against
// real servers: go test ./... runs it, and so does .ci/run.
//
// Its tools (pytest, mypy, numpy, pandas, pyarrow, tqdm, build, ...) live in a virtual
// environment outside the repository, pinned by clients/python/requirements-test.txt and
// made by clients/python/tools/testenv.py under ~/.cache/chaperone/pyclient-<hash of the
// pins>. Without it the test skips, naming that command, except under CI (CI or
// CHAPERONE_TEST_PYCLIENT=required set), where a skip would hide a failure.
// CHAPERONE_TEST_PYCLIENT=off skips it on purpose (.ci/run's second pass, under the race
// detector, after the suite ran in the first).

// pythonClientDir is clients/python of this checkout.
func pythonClientDir(t *testing.T) string {
	_, here, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(here), "..", "clients", "python")
}

// pyclientPython returns the interpreter of the client's test environment.
func pyclientPython(t *testing.T, dir string) string {
	t.Helper()
	if os.Getenv("CHAPERONE_TEST_PYCLIENT") == "off" {
		t.Skip("CHAPERONE_TEST_PYCLIENT=off")
	}
	python := os.Getenv("CHAPERONE_PYCLIENT_PYTHON")
	if python == "" {
		pins, err := os.ReadFile(filepath.Join(dir, "requirements-test.txt"))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(pins)
		home, _ := os.UserHomeDir()
		env := filepath.Join(home, ".cache", "chaperone", "pyclient-"+hex.EncodeToString(sum[:])[:16])
		if _, err := os.Stat(filepath.Join(env, ".complete")); err == nil {
			python = filepath.Join(env, "bin", "python")
		}
	}
	var out []byte
	err := os.ErrNotExist
	if python != "" {
		out, err = exec.Command(python, "-c", "import pytest, httpx, numpy, pandas, pyarrow, mypy, tqdm, build, matplotlib").CombinedOutput()
	}
	if err != nil {
		msg := "the Python client's test environment is missing (%v; %s); make it with: python3 clients/python/tools/testenv.py"
		if os.Getenv("CI") != "" || os.Getenv("CHAPERONE_TEST_PYCLIENT") == "required" {
			t.Fatalf(msg, err, bytes.TrimSpace(out))
		}
		t.Skipf(msg, err, bytes.TrimSpace(out))
	}
	return python
}

// TestPythonClient runs the Python client's test suite against three real servers:
//   - one with the stand-in tools of every model family (boltz2, BoltzGen, RFdiffusion3,
//     the ESM and SaProt models through the real Python driver), whose quotas let one owner
//     hold and list a few hundred jobs; API keys of its own are issued for the tests that
//     need an owner of their own;
//   - one on the test engine with one active job per owner, where a second create is a real
//     429 that the client has to wait out;
//   - one whose store is closed, so that every call is a real 500.
//
// CHAPERONE_PYTEST_ARGS adds arguments to pytest (-k name, -x, -v).
func TestPythonClient(t *testing.T) {
	t.Parallel()
	dir := pythonClientDir(t)
	python := pyclientPython(t, dir)

	main := startServer(t, withEveryStandIn(t), withLimits(func(l *limitsT) {
		l.ActiveJobsPerOwner, l.CreatesPerMinute = 1000, 10000
	}))
	var keys []string
	for _, name := range []string{"paging", "listing", "idempotency", "many", "async-many", "readme"} {
		key, _ := main.issueKey("pyclient-" + name)
		keys = append(keys, name+"="+key)
	}
	limited := startServer(t, withLimits(func(l *limitsT) { l.ActiveJobsPerOwner = 1 }), func(c *app.Config) { c.Slots = 1 })
	broken := startServer(t, withoutWorker())
	broken.Store.Close() // every call that reads the store is now a 500

	args := []string{"-m", "pytest", "-p", "no:cacheprovider", "-ra"} // the tests of pyproject.toml
	args = append(args, strings.Fields(os.Getenv("CHAPERONE_PYTEST_ARGS"))...)
	cmd := exec.CommandContext(t.Context(), python, args...)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CHAPERONE_") && !strings.HasPrefix(kv, "PYTHON") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env,
		"CHAPERONE_TEST_URL="+main.URL,
		"CHAPERONE_TEST_KEYS="+strings.Join(keys, ","),
		"CHAPERONE_TEST_LIMITED_URL="+limited.URL,
		"CHAPERONE_TEST_BROKEN_URL="+broken.URL,
		"PYTHONPATH="+filepath.Join(dir, "src"),
		"PYTHONDONTWRITEBYTECODE=1",
		"MPLBACKEND=Agg",
	)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	t.Logf("pytest %s:\n%s", strings.Join(args[2:], " "), out.String())
	if err != nil {
		t.Fatalf("the Python client's tests failed: %v", err)
	}
}
