package doctor_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/chaperone-bio/chaperone/doctor"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/internal/execfile"
)

// fakeEngine is an engine whose check and diagnosis the test sets.
type fakeEngine struct {
	models []string
	check  error
	diag   engine.Diagnosis
}

func (e *fakeEngine) Name() string                                            { return "fold" }
func (e *fakeEngine) Models() []string                                        { return e.models }
func (e *fakeEngine) Check(context.Context, engine.Tools) error               { return e.check }
func (e *fakeEngine) Diagnose(context.Context, engine.Tools) engine.Diagnosis { return e.diag }
func (e *fakeEngine) Run(context.Context, *engine.Run) (*engine.Output, error) {
	return nil, errors.New("not run in these tests")
}

// gpus is a GPUFinder of fixed GPUs.
type gpus []doctor.GPU

func (g gpus) Find(context.Context) doctor.GPUReport {
	return doctor.GPUReport{Line: doctor.Line{Status: doctor.OK}, Source: "nvidia-smi", GPUs: g}
}

// TestModelVerdicts: a model's status and its one reason, from its engine's check and
// diagnosis and the GPUs: a failed check says what the catalog says; what may stop a
// model that passed is a warning, the most pressing first.
func TestModelVerdicts(t *testing.T) {
	t.Parallel()
	fine := engine.Diagnosis{Tool: "/bin/fold", Version: "2.2.1", Tested: []string{"2.2"},
		Weights: []engine.Weights{{Models: []string{"fold"}, Name: "fold.ckpt", State: engine.WeightsPresent}},
		Memory:  map[string]engine.Memory{"fold": {GB: 30, Basis: "the fold docs"}}}
	with := func(change func(d *engine.Diagnosis)) engine.Diagnosis {
		d := fine
		d.Weights = slices.Clone(fine.Weights)
		change(&d)
		return d
	}
	big := gpus{{Index: 0, Name: "A100", MemoryTotalMB: 81920}}
	small := gpus{{Index: 0, Name: "T4", MemoryTotalMB: 15360}}
	tests := []struct {
		name   string
		check  error
		diag   engine.Diagnosis
		gpus   gpus
		status doctor.Status
		reason string
	}{
		{"everything in place", nil, fine, big, doctor.OK, ""},
		{"the tool is missing", &engine.CheckError{Public: "the fold command is not installed", Detail: "not on PATH"},
			with(func(d *engine.Diagnosis) { d.Tool, d.Version = "", "" }), big, doctor.No, "the fold command is not installed"},
		{"a check error that says nothing public", errors.New("/secret/path: boom"), fine, big, doctor.No, "self-check failed"},
		{"weights the tool fetches are not there yet", nil,
			with(func(d *engine.Diagnosis) { d.Weights[0].State, d.Weights[0].Fetched = engine.WeightsMissing, true }), big, doctor.Warn,
			"weights not downloaded yet: fold.ckpt (the tool fetches them on first use, which needs internet)"},
		{"weights the tool does not fetch are missing", nil,
			with(func(d *engine.Diagnosis) { d.Weights[0].State = engine.WeightsMissing }), big, doctor.Warn, "weights missing: fold.ckpt"},
		{"weights of another model do not count", nil,
			with(func(d *engine.Diagnosis) {
				d.Weights[0].State, d.Weights[0].Models = engine.WeightsMissing, []string{"other"}
			}), big, doctor.OK, ""},
		{"too little GPU memory", nil, fine, small, doctor.Warn, "needs about 30 GB of GPU memory; the largest GPU here has 16 GB"},
		{"no GPU", nil, fine, gpus{}, doctor.Warn, "no GPU found"},
		{"an untested version", nil, with(func(d *engine.Diagnosis) { d.Version = "3.0.0" }), big, doctor.Warn, "untested version 3.0.0 (tested with 2.2)"},
		{"an unknown version is no warning", nil, with(func(d *engine.Diagnosis) { d.Version = "" }), big, doctor.OK, ""},
		{"weights before memory before version", nil, with(func(d *engine.Diagnosis) {
			d.Version, d.Weights[0].State = "3.0.0", engine.WeightsMissing
		}), small, doctor.Warn, "weights missing: fold.ckpt"},
	}
	for _, tt := range tests {
		e := &fakeEngine{models: []string{"fold"}, check: tt.check, diag: tt.diag}
		got := doctor.Models(context.Background(), []engine.Engine{e}, nil, tt.gpus)
		if len(got) != 1 || got[0].Status != tt.status || got[0].Reason != tt.reason {
			t.Errorf("%s: got %+v; want %s %q", tt.name, got, tt.status, tt.reason)
		}
	}
}

// TestGPUs: nvidia-smi's answer when it gives one, else the NVIDIA device files, else none;
// of those, the ones CUDA_VISIBLE_DEVICES lists when it is set.
func TestGPUs(t *testing.T) {
	dir := t.TempDir()
	smi := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := execfile.Write(p, "#!/bin/sh\n"+body+"\n"); err != nil {
			t.Fatal(err)
		}
		return p
	}
	two := smi("two", `[ "$*" = "--query-gpu=index,name,memory.total,memory.used --format=csv,noheader,nounits" ] || exit 9
echo "0, NVIDIA A100-SXM4-80GB, 81920, 1024"
echo "1, NVIDIA L4, 23034, 0"`)
	broken := smi("broken", `echo "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver." >&2; exit 9`)
	garbled := smi("garbled", `echo "No devices were found"`)
	devices := filepath.Join(dir, "dev")
	if err := os.MkdirAll(devices, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"nvidia1", "nvidia0", "nvidiactl", "nvidia-uvm"} {
		if err := os.WriteFile(filepath.Join(devices, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	empty := t.TempDir()
	tests := []struct {
		name    string
		visible string // CUDA_VISIBLE_DEVICES; "unset" for none
		finder  doctor.SystemGPUs
		source  string
		indices []int
		memory  []int
	}{
		{"nvidia-smi", "unset", doctor.SystemGPUs{NvidiaSMI: two, Dev: empty}, "nvidia-smi", []int{0, 1}, []int{81920, 23034}},
		{"nvidia-smi fails: the device files", "unset", doctor.SystemGPUs{NvidiaSMI: broken, Dev: devices}, "/dev/nvidia*", []int{0, 1}, []int{0, 0}},
		{"nvidia-smi answers nonsense: the device files", "unset", doctor.SystemGPUs{NvidiaSMI: garbled, Dev: devices}, "/dev/nvidia*", []int{0, 1}, []int{0, 0}},
		{"neither", "unset", doctor.SystemGPUs{NvidiaSMI: broken, Dev: empty}, "none", nil, nil},
		{"CUDA_VISIBLE_DEVICES picks one", "1", doctor.SystemGPUs{NvidiaSMI: two, Dev: empty}, "nvidia-smi", []int{1}, []int{23034}},
		{"CUDA_VISIBLE_DEVICES hides all", "", doctor.SystemGPUs{NvidiaSMI: two, Dev: empty}, "nvidia-smi", nil, nil},
	}
	for _, tt := range tests {
		t.Setenv("CUDA_VISIBLE_DEVICES", tt.visible)
		if tt.visible == "unset" {
			os.Unsetenv("CUDA_VISIBLE_DEVICES")
		}
		r := tt.finder.Find(context.Background())
		var indices, memory []int
		for _, g := range r.GPUs {
			indices, memory = append(indices, g.Index), append(memory, g.MemoryTotalMB)
		}
		if r.Source != tt.source || !slices.Equal(indices, tt.indices) || !slices.Equal(memory, tt.memory) || r.Reason == "" {
			t.Errorf("%s: %+v; want %s GPUs %v with %v MiB", tt.name, r, tt.source, tt.indices, tt.memory)
		}
	}
}
