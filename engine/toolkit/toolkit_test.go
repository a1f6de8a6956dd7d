package toolkit

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/internal/execfile"
	"github.com/chaperone-bio/chaperone/internal/testpython"
	"github.com/chaperone-bio/chaperone/job"
)

func TestUnmarshalPythonJSON(t *testing.T) {
	t.Parallel()
	in := `{"a": NaN, "b": -Infinity, "c": Infinity, "d": 0.5, "e": "NaN and \"Infinity\"", "f": [NaN, 1], "g": {"h": NaN}}`
	var got map[string]any
	if err := UnmarshalPythonJSON([]byte(in), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"a": nil, "b": nil, "c": nil, "d": 0.5, "e": `NaN and "Infinity"`, "f": []any{nil, 1.0}, "g": map[string]any{"h": nil}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	var scores struct {
		A *float64 `json:"a"`
		D *float64 `json:"d"`
		C float64  `json:"c"`
	}
	if err := UnmarshalPythonJSON([]byte(in), &scores); err != nil || scores.A != nil || scores.D == nil || *scores.D != 0.5 || scores.C != 0 {
		t.Errorf("scores %+v, %v", scores, err)
	}
	if err := UnmarshalPythonJSON([]byte(`{"a": Nan}`), &got); err == nil {
		t.Error("a misspelt NaN was read")
	}
}

// TestReadPythonJSONReadsPython reads what Python's json.dump itself writes.
func TestReadPythonJSONReadsPython(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "c.json")
	script := `import json, sys; json.dump({"ptm": float("nan"), "iptm": float("inf"), "pde": -float("inf"), "plddt": 0.75, "chains": [float("nan")]}, open(sys.argv[1], "w"), indent=4)`
	if out, err := exec.Command(testpython.Require(t), "-c", script, path).CombinedOutput(); err != nil {
		t.Fatalf("python: %v %s", err, out)
	}
	var got struct {
		PTM, IPTM, PDE, PLDDT *float64
		Chains                []*float64
	}
	if err := ReadPythonJSON(path, &got); err != nil {
		t.Fatal(err)
	}
	if got.PTM != nil || got.IPTM != nil || got.PDE != nil || got.PLDDT == nil || *got.PLDDT != 0.75 || len(got.Chains) != 1 || got.Chains[0] != nil {
		t.Errorf("read %+v", got)
	}
}

func TestDecodeParams(t *testing.T) {
	t.Parallel()
	type params struct {
		Samples int     `json:"samples"`
		Scale   float64 `json:"scale"`
		Name    string  `json:"name"`
		Steps   *int    `json:"steps"`
	}
	tests := []struct {
		name string
		in   map[string]any
		want params
		err  string
	}{
		{"as the catalog accepted them", map[string]any{"samples": 3, "scale": 1.5, "steps": 200}, params{Samples: 3, Scale: 1.5, Name: "kept", Steps: ptr(200)}, ""},
		{"as the store gives them back", map[string]any{"samples": 3.0, "scale": 2.0}, params{Samples: 3, Scale: 2, Name: "kept"}, ""},
		{"a fraction is no integer", map[string]any{"samples": 2.5}, params{}, "params: json: cannot unmarshal number 2.5"},
		{"a param the engine does not know", map[string]any{"samples": 1, "seed": 7}, params{}, `params: json: unknown field "seed"`},
	}
	for _, tt := range tests {
		got := params{Name: "kept"}
		err := DecodeParams(tt.in, &got)
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.err)
		case tt.err == "" && (err != nil || !reflect.DeepEqual(got, tt.want)):
			t.Errorf("%s: got %+v (steps %v), %v; want %+v", tt.name, got, got.Steps, err, tt.want)
		}
	}
	p, err := NewPredictParams(map[string]any{"use_msa_server": true, "recycling_steps": 4.0})
	if want := (PredictParams{UseMSAServer: true, Fast: true, RecyclingSteps: ptr(4), DiffusionSamples: 1, OutputFormat: "cif"}); err != nil || !reflect.DeepEqual(p, want) {
		t.Errorf("NewPredictParams = %+v, %v; want %+v", p, err, want)
	}
}

func ptr[T any](v T) *T { return &v }

func TestPredictions(t *testing.T) {
	t.Parallel()
	ok := func(id string, paths ...string) Target {
		tg := Target{Row: job.PredictionRow{ID: id, Status: job.RowOK}}
		for _, p := range paths {
			tg.Files = append(tg.Files, Artifact(p, id, job.ArtifactStructure, "/w/"+p))
		}
		return tg
	}
	failed := func(id, why string) Target {
		return Target{Row: job.PredictionRow{ID: id, Status: job.RowFailed, Error: why}}
	}
	crash := errors.New("exit code 1")
	out, err := Predictions("tool", []Target{ok("a", "a.cif", "a/conf.json"), failed("b", "out of memory")}, crash)
	if err != nil || len(out.Rows) != 2 || out.Rows[1].Error != "out of memory" || len(out.Files) != 2 || out.Files[1].Path != "a/conf.json" {
		t.Errorf("a job with one good target: %+v, %v", out, err)
	}
	if _, err := Predictions("tool", []Target{failed("a", "x"), failed("b", "y")}, crash); !errors.Is(err, crash) || err.Error() != "tool failed: exit code 1" {
		t.Errorf("every target failed after a crash: %v", err)
	}
	if _, err := Predictions("tool", []Target{failed("a", "x"), failed("b", "y")}, nil); err == nil || err.Error() != "tool predicted none of the 2 target(s): a: x; b: y" {
		t.Errorf("every target failed: %v", err)
	}
	if _, err := Predictions("tool", []Target{ok("a", "x.cif"), ok("b", "X.cif")}, nil); err == nil || !strings.Contains(err.Error(), "targets a and b both have a result file X.cif") {
		t.Errorf("two targets with one file: %v", err)
	}
}

// script writes an executable shell script.
func script(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := execfile.Write(p, "#!/bin/sh\n"+body+"\n"); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestToolCheck(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	help := `echo "Usage: fold run [OPTIONS] INPUT"; echo "  -o, --out=PATH"; echo "  [--steps]"`
	newTool := func() *Tool {
		return &Tool{Name: "fold", Install: "Fold (pip install fold)", Subcommand: []string{"run"}, Options: []string{"--out", "--steps"},
			Needs: "Fold 2 (pip install -U fold)"}
	}
	ctx := context.Background()
	good := script(t, dir, "good", `[ "$1 $2" = "run --help" ] || exit 9; `+help)
	if err := newTool().Check(ctx, engine.Tools{"fold": good}); err != nil {
		t.Errorf("a tool with every option fails the check: %v", err)
	}
	tests := []struct {
		name  string
		tools engine.Tools
		want  string
	}{
		{"missing file", engine.Tools{"fold": filepath.Join(dir, "nope")}, "the fold command " + filepath.Join(dir, "nope") + ": "},
		{"help fails", engine.Tools{"fold": script(t, dir, "broken", `echo "ModuleNotFoundError: No module named 'torch'" >&2; exit 1`)},
			filepath.Join(dir, "broken") + " run --help failed (exit status 1): ModuleNotFoundError: No module named 'torch'"},
		{"an old version without an option", engine.Tools{"fold": script(t, dir, "old", `echo "  --out PATH"`)},
			filepath.Join(dir, "old") + " run has no --steps option; this engine needs Fold 2 (pip install -U fold)"},
		{"an option only as the start of a longer one", engine.Tools{"fold": script(t, dir, "prefix", `echo "  --out PATH"; echo "  --steps_extra INTEGER  [--steps-x]"`)},
			filepath.Join(dir, "prefix") + " run has no --steps option"},
	}
	for _, tt := range tests {
		if err := newTool().Check(ctx, tt.tools); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.want)
		}
	}

	// A command that passed is not run again until it changes.
	log := filepath.Join(dir, "runs")
	counting := script(t, dir, "counting", `echo run >> `+log+`; `+help)
	tool := newTool()
	for range 3 {
		if err := tool.Check(ctx, engine.Tools{"fold": counting}); err != nil {
			t.Fatal(err)
		}
	}
	later := time.Now().Add(time.Minute)
	if err := os.Chtimes(counting, later, later); err != nil {
		t.Fatal(err)
	}
	if err := tool.Check(ctx, engine.Tools{"fold": counting}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(log); strings.Count(string(b), "run") != 2 {
		t.Errorf("the self-check ran %d times, want 2 (once, and once after the file changed)", strings.Count(string(b), "run"))
	}
}

func TestToolPath(t *testing.T) {
	// Not parallel: it sets PATH.
	dir := t.TempDir()
	onPath := script(t, dir, "fold", "exit 0")
	t.Setenv("PATH", dir)
	tool := &Tool{Name: "fold", Install: "Fold (pip install fold)"}
	if p, err := tool.Path(nil); err != nil || p != onPath {
		t.Errorf("Path = %q, %v; want the command on PATH %s", p, err, onPath)
	}
	if p, err := tool.Path(engine.Tools{"fold": "/opt/fold/bin/fold"}); err != nil || p != "/opt/fold/bin/fold" {
		t.Errorf("Path = %q, %v; want the operator's path", p, err)
	}
	t.Setenv("PATH", t.TempDir())
	_, err := tool.Path(engine.Tools{"other": onPath})
	if want := "the fold command is not on PATH; install Fold (pip install fold) or give its path with --tool fold=PATH"; err == nil || err.Error() != want {
		t.Errorf("err = %v, want %q", err, want)
	}
}
