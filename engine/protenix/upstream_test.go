package protenix

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/chaperone-bio/chaperone/align"
	"github.com/chaperone-bio/chaperone/doctor"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/internal/enginerun"
	"github.com/chaperone-bio/chaperone/internal/realtools"
)

// Tests of the real-package tier (internal/realtools): the pinned protenix and opendde
// releases, installed from PyPI, run on the CPU with no weights and no internet.

// TestUpstreamDoctor runs chaperone doctor's verdict on the three engines against the real
// tools: each self-check runs the real `pred --help` and finds every option the engine
// passes, the installed version is the pin, and with placeholder weight files (the engines
// only look for them) and a large GPU every model is ok. Protenix 2.0.0's --help fails
// without LAYERNORM_TYPE=torch on a machine without nvcc.
func TestUpstreamDoctor(t *testing.T) {
	tools := engine.Tools{}
	for _, tool := range []string{"protenix", "opendde"} {
		tools[tool] = realtools.Require(t, tool).Bin(tool)
	}
	isolate(t)
	protenixRoot, openDDERoot := t.TempDir(), t.TempDir()
	t.Setenv("PROTENIX_ROOT_DIR", protenixRoot)
	for _, f := range []string{
		filepath.Join(protenixRoot, "checkpoint", "protenix-v2.pt"),
		filepath.Join(protenixRoot, "common", "components.cif"),
		filepath.Join(openDDERoot, "checkpoint", "opendde.pt"),
		filepath.Join(openDDERoot, "checkpoint", "opendde_abag.pt"),
	} {
		placeholder(t, f)
	}
	cfg := Config{OpenDDERoot: openDDERoot}
	engines := []engine.Engine{New(cfg), NewOpenDDE(cfg), NewOpenDDEAbAg(cfg)}
	models := doctor.Models(context.Background(), engines, tools, bigGPU{})
	if len(models) != 3 {
		t.Fatalf("doctor judged %d models, want 3", len(models))
	}
	for _, m := range models {
		if m.Status != doctor.OK {
			t.Errorf("%s: %s: %s (%s); warnings %q", m.Model, m.Status, m.Reason, m.Detail, m.Warnings)
		}
	}
	for _, e := range engines {
		d := e.(engine.Diagnoser).Diagnose(context.Background(), tools)
		if !d.VersionTested() {
			t.Errorf("%s: version %q (%s) is not the tested %q", e.Models()[0], d.Version, d.VersionUnknown, d.Tested)
		}
	}
}

// bigGPU is a GPU large enough for every model, as doctor.GPUFinder.
type bigGPU struct{}

func (bigGPU) Find(context.Context) doctor.GPUReport {
	return doctor.GPUReport{Line: doctor.Line{Status: doctor.OK}, Source: "test",
		GPUs: []doctor.GPU{{Name: "test GPU", MemoryTotalMB: 96 * 1024}}}
}

// TestUpstreamStandInOptions checks the stand-in against the real tools' `pred --help`:
// every option the stand-in accepts is the real tool's, with the same short name, type or
// choices, and default, so that the stand-in cannot drift from the pinned release.
func TestUpstreamStandInOptions(t *testing.T) {
	for _, tool := range []string{"protenix", "opendde"} {
		t.Run(tool, func(t *testing.T) {
			env := realtools.Require(t, tool)
			e := New(Config{})
			if tool == "opendde" {
				e = NewOpenDDE(Config{})
			}
			real := helpOptions(t, help(t, env.Bin(tool), e.checkEnv()))
			fake := helpOptions(t, help(t, standIns[tool], nil))
			if len(fake) < len(e.flavor.options) {
				t.Fatalf("the stand-in's help lists %d options, fewer than the engine passes: %v", len(fake), fake)
			}
			for name, f := range fake {
				r, ok := real[name]
				switch {
				case !ok:
					t.Errorf("the stand-in accepts %s, which the real %s pred does not", name, tool)
				case f.short != r.short || f.meta != r.meta:
					t.Errorf("%s: the stand-in has %q %q, the real tool %q %q", name, f.short, f.meta, r.short, r.meta)
				case f.def != "" && !strings.EqualFold(f.def, r.def):
					t.Errorf("%s: the stand-in's default is %q, the real tool's %q", name, f.def, r.def)
				}
			}
		})
	}
}

// helpOption is an option as click's help lists it.
type helpOption struct{ short, meta, def string }

var (
	optionLine = regexp.MustCompile(`^  (?:(-\w), )?(--\w+)(?: (\[[^\]]*\]|[A-Z]+))?`)
	defaultOf  = regexp.MustCompile(`\[default:\s*([^\]]*)\]`)
)

// helpOptions reads the options of a click help text, each with the text that follows it
// up to the next (where a wrapped "[default: …]" lies).
func helpOptions(t *testing.T, text string) map[string]helpOption {
	t.Helper()
	opts := map[string]helpOption{}
	var name, body string
	flush := func() {
		if name == "" {
			return
		}
		o := opts[name]
		if m := defaultOf.FindStringSubmatch(strings.Join(strings.Fields(body), " ")); m != nil {
			o.def = strings.Trim(m[1], `"`)
		}
		opts[name] = o
	}
	_, options, ok := strings.Cut(text, "\nOptions:\n")
	if !ok {
		t.Fatalf("no Options: in the help:\n%s", text)
	}
	for line := range strings.Lines(options) {
		if m := optionLine.FindStringSubmatch(line); m != nil {
			flush()
			name, body = m[2], line
			opts[name] = helpOption{short: m[1], meta: m[3]}
			continue
		}
		body += line
	}
	flush()
	delete(opts, "--help")
	return opts
}

// help is `<path> pred --help`, with env added to the environment.
func help(t *testing.T, path string, env []string) string {
	t.Helper()
	cmd := exec.Command(path, "pred", "--help")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s pred --help: %v\n%s", path, err, out)
	}
	return string(out)
}

// isolate points the tools' home and caches at the test's own folders and keeps them off
// the network (realtools.Isolate), OpenDDE's root among them.
func isolate(t *testing.T) {
	t.Helper()
	home := realtools.Isolate(t)
	t.Setenv("OPENDDE_ROOT_DIR", filepath.Join(home, "opendde"))
}

// placeholder writes a one-byte file at path, for a weights file the engine only looks for.
func placeholder(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("0"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// resolveKernels is OpenDDE's own policy for the triangle kernels asked for on the command
// line (opendde/config/inference.py, apply_runtime_compatibility), on a CUDA device where
// cuEquivariance's kernels cannot run (here: none at all, so its probe fails).
const resolveKernels = `
import sys, torch
from opendde.config.inference import apply_runtime_compatibility, build_inference_config
configs = build_inference_config(model_name="opendde_v1")
configs.triangle_multiplicative, configs.triangle_attention = sys.argv[1], sys.argv[2]
configs = apply_runtime_compatibility(configs, torch.device("cuda:0"))
print(configs.triangle_multiplicative, configs.triangle_attention)
`

// TestUpstreamOpenDDEKernels: the kernels the engine asks OpenDDE for on a GPU with fast
// numerics must run where cuEquivariance's do not (a GPU without them, or too old for
// them): OpenDDE 1.2.0 raises for an explicit cuequivariance there
// (config/inference.py:185-196) and resolves auto to what runs.
func TestUpstreamOpenDDEKernels(t *testing.T) {
	env := realtools.Require(t, "opendde")
	isolate(t)
	work := t.TempDir()
	j := enginerun.PredictJob(t, `{"model": "opendde", "sequence": "MKTAYIAK", "params": {"fast": true}}`)
	steps, err := NewOpenDDE(Config{GPU: true}).plan(&engine.Run{Job: j, WorkDir: work, Log: io.Discard,
		Alignments: []align.Result{fakeSearch("MKTAYIAK")}}, work)
	if err != nil {
		t.Fatal(err)
	}
	args := steps.(*prediction).Command().Args
	kernel := func(opt string) string {
		i := slices.Index(args, opt)
		if i < 0 || i+1 >= len(args) {
			t.Fatalf("the command %q has no %s", args, opt)
		}
		return args[i+1]
	}
	cmd := exec.Command(env.Python(), "-c", resolveKernels, kernel("--trimul_kernel"), kernel("--triatt_kernel"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("OpenDDE refuses the kernels the engine asks for (%s, %s): %v\n%s", kernel("--trimul_kernel"), kernel("--triatt_kernel"), err, lastLines(string(out), 3))
	}
	if got := strings.TrimSpace(string(out)); !strings.HasSuffix(got, "torch torch") {
		t.Errorf("OpenDDE resolved them to %q, want torch torch", got)
	}
}
