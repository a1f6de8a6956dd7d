package toolkit

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chaperone-bio/chaperone/engine"
)

// TestToolDiagnose: where the tool was looked for and found, and its package's version as
// the interpreter its #! line names reports it, against the versions tested.
func TestToolDiagnose(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	python := func(name, body string) string { return script(t, dir, name, body) }
	tested := python("python3", `echo 2.2.1`)
	newer := python("python3.12", `echo 3.0.0`)
	broken := python("python3.11", `echo "OSError: [Errno 13] Permission denied: 'METADATA'" >&2; exit 1`)
	console := func(name, interpreter string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!"+interpreter+"\nimport sys\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good, old, unreadable := console("fold", tested), console("fold-new", newer), console("fold-broken", broken)
	viaEnv := console("fold-env", "/usr/bin/env "+tested)
	// Debian's own Python, which has no package named fold.
	without := console("fold-without", "/usr/bin/python3")
	binary := script(t, dir, "fold-sh", "exit 0")

	tests := []struct {
		name        string
		tools       engine.Tools
		tool        string // Diagnosis.Tool
		looked      string
		version     string
		tested      bool
		unknownPart string
	}{
		{"found with --tool, a tested version", engine.Tools{"fold": good}, good, "--tool fold=" + good, "2.2.1", true, ""},
		{"a #! line through env", engine.Tools{"fold": viaEnv}, viaEnv, "--tool fold=" + viaEnv, "2.2.1", true, ""},
		{"a version the engine was not tested with", engine.Tools{"fold": old}, old, "--tool fold=" + old, "3.0.0", false, ""},
		{"--tool names no file", engine.Tools{"fold": filepath.Join(dir, "nope")}, "", "--tool fold=" + filepath.Join(dir, "nope"), "", false, "the tool was not found"},
		{"not on PATH", nil, "", "fold on PATH", "", false, "the tool was not found"},
		{"not a Python script", engine.Tools{"fold": binary}, binary, "--tool fold=" + binary, "", false, "is not a Python console script"},
		{"its Python cannot read the package", engine.Tools{"fold": unreadable}, unreadable, "--tool fold=" + unreadable, "", false, "could not tell the version of fold (exit status 1): OSError"},
		{"the package is not in its Python", engine.Tools{"fold": without}, without, "--tool fold=" + without, "", false, "fold is not installed for /usr/bin/python3"},
	}
	for _, tt := range tests {
		tl := &Tool{Name: "fold"}
		if tt.tools == nil {
			tl.Name = "chaperone-test-no-such-fold"
			tt.looked = tl.Name + " on PATH"
		}
		d := tl.Diagnose(context.Background(), tt.tools, "fold", "2.2")
		if d.Tool != tt.tool || d.Looked != tt.looked || d.Version != tt.version || d.VersionTested() != tt.tested ||
			(tt.unknownPart == "") != (d.VersionUnknown == "") || !strings.Contains(d.VersionUnknown, tt.unknownPart) {
			t.Errorf("%s: got tool %q looked %q version %q (tested %v, unknown %q); want %q, %q, %q (%v, %q)", tt.name,
				d.Tool, d.Looked, d.Version, d.VersionTested(), d.VersionUnknown, tt.tool, tt.looked, tt.version, tt.tested, tt.unknownPart)
		}
	}
}

func TestVersionTested(t *testing.T) {
	t.Parallel()
	tests := []struct {
		version string
		tested  []string
		want    bool
	}{
		{"2.2.0", []string{"2.2"}, true},
		{"2.2", []string{"2.2"}, true},
		{"2.20.1", []string{"2.2"}, false},
		{"1.0.2", []string{"1.0.2"}, true},
		{"1.2.0", []string{"1.0.2"}, false},
		{"", []string{"2.2"}, false},
		{"4.1", nil, false},
	}
	for _, tt := range tests {
		if got := (engine.Diagnosis{Version: tt.version, Tested: tt.tested}).VersionTested(); got != tt.want {
			t.Errorf("%q against %v: %v, want %v", tt.version, tt.tested, got, tt.want)
		}
	}
}

// TestWeights: a file is present or missing where the tool keeps it; a Hugging Face model
// is present when the hub cache holds a snapshot of it.
func TestWeights(t *testing.T) {
	hub := t.TempDir()
	t.Setenv("HF_HUB_CACHE", hub)
	t.Setenv("HF_HOME", "")
	if err := os.MkdirAll(filepath.Join(hub, "models--org--have", "snapshots", "abc123"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(hub, "models--org--partial", "blobs"), 0o755); err != nil {
		t.Fatal(err)
	}
	ckpt := filepath.Join(hub, "model.ckpt")
	if err := os.WriteFile(ckpt, []byte("w"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		w    engine.Weights
		path string
		want engine.WeightsState
	}{
		{"a file in place", FileWeights(nil, "ckpt", ckpt, false, ""), ckpt, engine.WeightsPresent},
		{"a file missing", FileWeights(nil, "ckpt", ckpt+".gone", false, ""), ckpt + ".gone", engine.WeightsMissing},
		{"a cached model", HFWeights(nil, "org/have"), filepath.Join(hub, "models--org--have"), engine.WeightsPresent},
		{"a download that never finished", HFWeights(nil, "org/partial"), filepath.Join(hub, "models--org--partial"), engine.WeightsMissing},
		{"a model never downloaded", HFWeights(nil, "org/none"), filepath.Join(hub, "models--org--none"), engine.WeightsMissing},
	}
	for _, tt := range tests {
		if tt.w.State != tt.want || tt.w.Path != tt.path {
			t.Errorf("%s: %s at %s, want %s at %s", tt.name, tt.w.State, tt.w.Path, tt.want, tt.path)
		}
	}
	if w := HFWeights(nil, "org/none"); !w.Fetched || !strings.Contains(w.Fetch, "org/none") {
		t.Errorf("a Hugging Face model says neither that it is fetched nor how: %+v", w)
	}
}
