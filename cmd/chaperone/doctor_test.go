package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chaperone-bio/chaperone/engine/pydriver/pydrivertest"
)

// TestDoctorExitCodes: 0 when a model can run, 1 when none can, 2 on a usage error; the
// table and the JSON say the same.
func TestDoctorExitCodes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// Every tool at a path where nothing is, so that nothing on this machine's PATH counts.
	var nothing []string
	for _, name := range []string{"boltz", "run_openfold", "protenix", "opendde", "boltzgen", "rfd3", "esm", "transformers"} {
		nothing = append(nothing, "--tool", name+"="+filepath.Join(dir, "absent", name))
	}
	base := append([]string{"doctor", "--data", dir}, nothing...)
	python := pydrivertest.Interpreter(t, dir)
	tests := []struct {
		name string
		args []string
		code int
		out  string
	}{
		{"nothing can run", base, 1, "0 of 14 models can run on this worker."},
		{"SaProt can run", append(base[:len(base):len(base)], "--tool", "transformers="+python), 0, "2 of 14 models can run on this worker."},
		{"help", []string{"doctor", "--help"}, 0, "Usage:\n  chaperone doctor"},
		{"an unknown flag", []string{"doctor", "--bogus"}, 2, ""},
		{"an argument", []string{"doctor", "boltz2"}, 2, ""},
		{"an alignment server to check", append(base[:len(base):len(base)], "--msa-server", "http://127.0.0.1:1"), 1, "not reachable"},
		{"a bad alignment server", []string{"doctor", "--msa-server", "ftp://msa"}, 2, ""},
	}
	for _, tt := range tests {
		code, out, errOut := chaperone(t, tt.args...)
		if code != tt.code || !strings.Contains(out, tt.out) {
			t.Errorf("%s: exit %d, want %d; stdout:\n%s\nstderr:\n%s", tt.name, code, tt.code, out, errOut)
		}
	}

	code, out, _ := chaperone(t, append(base[:len(base):len(base)], "--tool", "transformers="+python, "--json")...)
	var r struct {
		Runnable int `json:"runnable"`
		Models   []struct {
			Model, Status, Reason string
		} `json:"models"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != 0 || r.Runnable != 2 || len(r.Models) != 14 {
		t.Fatalf("--json: exit %d, %v: %s", code, err, out)
	}
	for _, m := range r.Models {
		if runs := m.Status != "no"; runs != strings.HasPrefix(m.Model, "saprot") || (!runs && m.Reason == "") {
			t.Errorf("--json: %s is %s (%q)", m.Model, m.Status, m.Reason)
		}
	}
}
