package openfold3

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chaperone-bio/chaperone/bio"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/internal/enginerun"
	"github.com/chaperone-bio/chaperone/internal/execfile"
)

// TestKernels: fast uses upstream's kernels on a GPU, cuEquivariance's only where the
// worker's check found that the tool's Python can import it.
func TestKernels(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := execfile.Write(p, body); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// A "Python" that finds every module (python -c ...), and a console script that it
	// runs as a shell script.
	python := script("python", "#!/bin/sh\n[ \"$1\" = -c ] && exit 0\nexec /bin/sh \"$@\"\n")
	withKernels := script("run_openfold", "#!"+python+"\nexec "+standIn+` "$@"`+"\n")
	tests := []struct {
		name, tool, params string
		gpu                bool
		want               string
	}{
		{"fast on a GPU with cuEquivariance", withKernels, `{}`, true,
			"accelerator gpu, seeds [42], presets [predict], num_recycles 3, no_full_rollout_steps 200, use_deepspeed_evo_attention true, use_cueq_triangle_kernels true"},
		{"fast on a GPU without it", standIn, `{}`, true, "use_deepspeed_evo_attention true, use_cueq_triangle_kernels false"},
		{"fast off", withKernels, `{"fast": false}`, true, "use_deepspeed_evo_attention false, use_cueq_triangle_kernels false"},
		{"on the CPU", withKernels, `{}`, false, "accelerator cpu"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, Config{GPU: tt.gpu})
			tools := engine.Tools{"run_openfold": tt.tool, CheckpointTool: ckpt}
			if err := h.engine.Check(context.Background(), tools); err != nil {
				t.Fatal(err)
			}
			work := t.TempDir()
			var rec enginerun.Recorder
			_, err := h.engine.Run(context.Background(), &engine.Run{
				Job:     newJob(t, `{"input": ">A|protein|empty\nMK\n", "params": `+tt.params+`}`),
				WorkDir: work, Tools: tools, Log: &rec.Log, Report: rec.Report, Exec: rec.Exec(work),
			})
			if err != nil || !strings.Contains(rec.Log.String(), tt.want) {
				t.Errorf("err %v; want %q in\n%s", err, tt.want, rec.Log.String())
			}
		})
	}
}

// TestCheckpoint: the model is offered only while the checkpoint is where the tool will
// look, and the message names no server path.
func TestCheckpoint(t *testing.T) {
	// Not parallel: it sets OPENFOLD_CACHE.
	cache := t.TempDir()
	t.Setenv(cacheEnv, cache)
	e := New(Config{})
	check := func() error { return e.Check(context.Background(), engine.Tools{"run_openfold": standIn}) }
	err := check()
	if err == nil || strings.Contains(err.Error(), cache) || !strings.Contains(err.Error(), "the OpenFold3 checkpoint of3-ob-2025-06-30-174k.pt is not installed on this worker") {
		t.Errorf("no checkpoint: %v", err)
	}
	if err := os.WriteFile(filepath.Join(cache, checkpointName), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := check(); err != nil {
		t.Errorf("checkpoint in $OPENFOLD_CACHE: %v", err)
	}
	// ckpt_root, which setup_openfold writes, names the folder of the parameters.
	elsewhere := t.TempDir()
	if err := os.WriteFile(filepath.Join(cache, ckptRootFile), []byte(elsewhere+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := check(); err == nil {
		t.Error("ckpt_root names an empty folder, and the check passed")
	}
	if err := os.WriteFile(filepath.Join(elsewhere, checkpointName), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if p, err := checkpoint(nil); err != nil || p != filepath.Join(elsewhere, checkpointName) {
		t.Errorf("checkpoint() = %q, %v", p, err)
	}
	missing := filepath.Join(t.TempDir(), "of3.pt")
	err = e.Check(context.Background(), engine.Tools{"run_openfold": standIn, CheckpointTool: missing})
	if err == nil || strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), "--tool openfold3_checkpoint is not a file") {
		t.Errorf("the operator's checkpoint is missing: %v", err)
	}
}

func TestCheckInput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, input, want string
	}{
		{"a protein and a ligand", "sequences:\n  - protein: {id: A, sequence: MK}\n  - ligand: {id: L, ccd: ATP}\n", ""},
		{"a ligand of two CCD codes", "sequences:\n  - protein: {id: A, sequence: MK}\n  - ligand: {id: L, ccd: [NAG, NAG]}\n",
			"ligand L: OpenFold3 takes one CCD code per ligand chain, not 2 (NAG, NAG)"},
		{"DNA written like a protein", "sequences:\n  - protein: {id: A, sequence: ACGT}\n  - dna: {id: D, sequence: ACGT}\n",
			`chain D is dna written as "ACGT", the same text as a protein chain`},
	}
	for _, tt := range tests {
		cx, err := bio.ParseInput("t", tt.input)
		if err != nil {
			t.Fatal(err)
		}
		err = New(Config{}).CheckInput("openfold3", cx, map[string]any{})
		if (tt.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
}
