package realtools

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// deadProxy is a closed port on this machine: a tool that tries to download anything from
// outside fails at once instead of leaving the machine.
const deadProxy = "http://127.0.0.1:9"

// Isolate points the environment that a test's tools inherit (the worker passes its own on)
// at nothing of this machine's: HOME and the caches Python tools use at a new temporary
// home, and every proxy variable at a closed port, loopback excepted, so that weights or
// data a tool would fetch are never fetched and a test server on 127.0.0.1 is still reached.
// It returns the home. It uses t.Setenv, so the test must not be parallel.
//
// Go's own folders stay where they were: a test that builds a stand-in after Isolate must
// find its module and build caches, which Go places under HOME by default.
func Isolate(t *testing.T) string {
	t.Helper()
	for k, v := range goFolders(t) {
		t.Setenv(k, v)
	}
	home := t.TempDir()
	for k, v := range map[string]string{
		"HOME": home, "XDG_CACHE_HOME": filepath.Join(home, ".cache"), "TORCH_HOME": filepath.Join(home, "torch"),
		"HF_HOME": filepath.Join(home, "hf"), "HF_HUB_CACHE": filepath.Join(home, "hf", "hub"),
		"http_proxy": deadProxy, "https_proxy": deadProxy, "HTTP_PROXY": deadProxy, "HTTPS_PROXY": deadProxy,
		"no_proxy": "127.0.0.1,localhost", "NO_PROXY": "127.0.0.1,localhost",
	} {
		t.Setenv(k, v)
	}
	return home
}

// Run runs one of our scripts with the environment's Python and returns what it printed on
// standard output; the test fails with the end of its standard error when it fails. extra
// is added to the process environment.
func (e Env) Run(t testing.TB, extra []string, script string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(e.Python(), append([]string{script}, args...)...)
	cmd.Env = append(os.Environ(), extra...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(script), strings.Join(args, " "), err, LastLines(stderr.String(), 30))
	}
	return out
}

// RunJSON is Run of a script that answers in JSON, decoded into out.
func (e Env) RunJSON(t testing.TB, out any, script string, args ...string) {
	t.Helper()
	b := e.Run(t, nil, script, args...)
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s %s answered %q: %v", filepath.Base(script), strings.Join(args, " "), b, err)
	}
}

// Fixture is a folder that make fills once and that is kept beside the tier's environments,
// for what takes long to build and never changes between runs (a molecules folder, a
// checkpoint of random weights). Its name changes with the environment, kind and the
// content of the files it is made from, so it is made again when any of them changes (and
// the fixture it replaces is removed). make fills the folder it is given; a failure of make
// fails the test and keeps nothing.
func (e Env) Fixture(t testing.TB, kind string, from []string, make func(dir string)) string {
	t.Helper()
	h := sha256.New()
	h.Write([]byte(e.Dir + "\x00" + kind + "\x00"))
	for _, f := range from {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		h.Write(b)
	}
	dir := filepath.Join(filepath.Dir(e.Dir), ".fixtures", kind+"-"+hex.EncodeToString(h.Sum(nil))[:12])
	if _, err := os.Stat(dir); err == nil {
		return dir
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".making-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	make(tmp)
	// Another test binary may have made it meanwhile; either copy will do.
	if err := os.Rename(tmp, dir); err != nil {
		if _, statErr := os.Stat(dir); statErr != nil {
			t.Fatal(err)
		}
	}
	// Fixtures of the same kind for an older environment or script are of no more use.
	old, _ := filepath.Glob(filepath.Join(filepath.Dir(dir), kind+"-*"))
	for _, o := range old {
		if o != dir && len(filepath.Base(o)) == len(filepath.Base(dir)) {
			os.RemoveAll(o)
		}
	}
	return dir
}

var goEnv = sync.OnceValues(func() ([]byte, error) {
	return exec.Command("go", "env", "-json", "GOPATH", "GOMODCACHE", "GOCACHE").Output()
})

// goFolders are Go's module and build folders as this machine has them.
func goFolders(t testing.TB) map[string]string {
	t.Helper()
	b, err := goEnv()
	if err != nil {
		t.Fatalf("go env: %v", err)
	}
	var folders map[string]string
	if err := json.Unmarshal(b, &folders); err != nil {
		t.Fatalf("go env answered %q: %v", b, err)
	}
	return folders
}

// LastLines is the end of a tool's output, for a message.
func LastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
