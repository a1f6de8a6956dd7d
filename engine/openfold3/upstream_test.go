package openfold3

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/chaperone-bio/chaperone/bio"
	"github.com/chaperone-bio/chaperone/catalog"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/pins"
	"github.com/chaperone-bio/chaperone/internal/realtools"
	"github.com/chaperone-bio/chaperone/job"
)

// upstreamTools are the real run_openfold with a placeholder checkpoint: Check and Diagnose
// only look for the file (predict is the only step that loads it).
func upstreamTools(t *testing.T, env realtools.Env) engine.Tools {
	t.Helper()
	ckpt := filepath.Join(t.TempDir(), checkpointName)
	if err := os.WriteFile(ckpt, []byte("placeholder"), 0o644); err != nil {
		t.Fatal(err)
	}
	return engine.Tools{"run_openfold": env.Bin("run_openfold"), CheckpointTool: ckpt}
}

// isolate points the tool's home and caches at the test's folders and keeps it off the
// network (realtools.Isolate).
func isolate(t *testing.T) {
	t.Helper()
	home := realtools.Isolate(t)
	t.Setenv(cacheEnv, filepath.Join(home, "openfold_cache"))
}

// TestUpstreamCheck: the engine's self-check passes on the real command line (both --helps
// list every option it passes), doctor reports the pinned release as installed and tested,
// and the engine counts the cuEquivariance kernels as there only when OpenFold3's imports of
// them succeed. The tier's environment has the package (the pin's [cuequivariance] extra)
// but, on a machine without a CUDA driver, not loadable ops, where a probe that only finds
// the package says yes.
func TestUpstreamCheck(t *testing.T) {
	env := realtools.Require(t, "run_openfold")
	isolate(t)
	tools := upstreamTools(t, env)
	e := New(Config{GPU: true})
	if err := e.Check(context.Background(), tools); err != nil {
		t.Fatalf("Check: %v", err)
	}
	d := e.Diagnose(context.Background(), tools)
	pin := pins.For("run_openfold")
	if !slices.Equal(d.Tested, []string{pin.Version}) || d.Version != pin.Version || !d.VersionTested() {
		t.Errorf("doctor: tool %q version %q (%s) tested %v; want %s installed and tested", d.Tool, d.Version, d.VersionUnknown, d.Tested, pin.Version)
	}
	if len(d.Weights) != 1 || d.Weights[0].State != engine.WeightsPresent || d.Weights[0].Path != tools[CheckpointTool] {
		t.Errorf("doctor's weights %+v", d.Weights)
	}

	script := `import importlib.util
print(importlib.util.find_spec("cuequivariance_torch") is not None)
try:
    import cuequivariance_ops_torch.triangle_attention
    print(True)
except Exception:
    print(False)
`
	out, err := exec.Command(env.Python(), "-c", script).Output()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	found, loads, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	if found != "True" {
		t.Fatal("the [cuequivariance] extra is not installed in the tier's environment")
	}
	if got := e.cuEquivariance(tools["run_openfold"]); got != (loads == "True") {
		t.Errorf("the engine counts cuEquivariance as usable: %t; its ops load: %s", got, loads)
	}
}

// TestUpstreamDefaultCheckpoint: the checkpoint the engine and doctor look for is the one
// OpenFold3 itself selects and looks for when predict is given none
// (validator.py:487-523 with parameters.py:54).
func TestUpstreamDefaultCheckpoint(t *testing.T) {
	env := realtools.Require(t, "run_openfold")
	isolate(t)
	script := `from openfold3.entry_points.parameters import DEFAULT_CHECKPOINT_NAME as n, OPENFOLD_MODEL_CHECKPOINT_REGISTRY as r
from openfold3.entry_points.validator import InferenceExperimentConfig
print(r[n].file_name)
try:
    InferenceExperimentConfig()
except ValueError as e:
    print(e)
`
	out, err := exec.Command(env.Python(), "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// The registry's file of the default name, and "Default checkpoint <name> not found in
	// <dir>": the engine wants that file in that folder.
	file, _, _ := strings.Cut(string(out), "\n")
	if file != checkpointName {
		t.Errorf("OpenFold3's default checkpoint is %s; the engine looks for %s", file, checkpointName)
	}
	want, err := checkpointPlace(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "not found in "+filepath.Dir(want)) {
		t.Errorf("OpenFold3 looks for its default checkpoint elsewhere than %s:\n%s", want, out)
	}
}

// TestUpstreamStandInOptions: every option the stand-in accepts, the real command takes.
func TestUpstreamStandInOptions(t *testing.T) {
	env := realtools.Require(t, "run_openfold")
	option := regexp.MustCompile(`--[a-z][a-z_-]*`)
	for _, cmd := range []string{"predict"} {
		real, err := exec.Command(env.Bin("run_openfold"), cmd, "--help").CombinedOutput()
		if err != nil {
			t.Fatalf("run_openfold %s --help: %v\n%s", cmd, err, real)
		}
		fake, err := exec.Command(standIn, cmd, "--help").CombinedOutput()
		if err != nil {
			t.Fatalf("stand-in %s --help: %v\n%s", cmd, err, fake)
		}
		realOpts := option.FindAllString(string(real), -1)
		fakeOpts := option.FindAllString(string(fake), -1)
		if len(fakeOpts) < 3 {
			t.Fatalf("the stand-in's %s --help lists %v", cmd, fakeOpts)
		}
		for _, o := range fakeOpts {
			if !slices.Contains(realOpts, o) {
				t.Errorf("the stand-in's %s takes %s, the real one does not (it takes %v)", cmd, o, realOpts)
			}
		}
	}
}

// TestUpstreamInputsAccepted: for every input of the corpus (bio/testdata/inputs, this
// engine's testdata requests, and the cases below) that openfold3 accepts at submit, the
// query JSON, runner YAML and alignment files the engine writes are read and featurised
// by OpenFold3's own classes (testdata/accept_inputs.py).
func TestUpstreamInputsAccepted(t *testing.T) {
	env := realtools.Require(t, "run_openfold")
	isolate(t)
	requests := map[string]string{}
	corpus, err := filepath.Glob(filepath.Join("..", "..", "bio", "testdata", "inputs", "*"))
	if err != nil || len(corpus) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	for _, path := range corpus {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := json.Marshal(map[string]any{"input": string(b)})
		requests["bio/"+filepath.Base(path)] = string(req)
	}
	own, _ := filepath.Glob(filepath.Join("testdata", "*.json"))
	for _, path := range own {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		requests["openfold3/"+filepath.Base(path)] = string(b)
	}
	for name, req := range map[string]string{
		"rna and dna":        `{"input": "sequences:\n  - rna: {id: R, sequence: GACUUCGG}\n  - dna: {id: [D, E], sequence: ACGTTA}\n", "params": {"use_msa_server": false}}`,
		"empty alignments":   `{"input": ">A|protein|empty\nMKTAYIAK\n>B|protein|empty\nGSHMLE\n"}`,
		"ligand codes":       `{"input": "sequences:\n  - protein: {id: A, sequence: MKTAYIAK, msa: empty}\n  - ligand: {id: H, ccd: HEM}\n  - ligand: {id: [M1, M2], ccd: MG}\n"}`,
		"ligand smiles only": `{"input": "sequences:\n  - protein: {id: A, sequence: MKTAYIAK, msa: empty}\n  - ligand: {id: L, smiles: 'c1ccccc1O'}\n"}`,
	} {
		requests["case/"+name] = req
	}

	var works, accepted []string
	for _, name := range slices.Sorted(maps.Keys(requests)) {
		var r catalog.PredictRequest
		if err := catalog.Decode([]byte(requests[name]), &r); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if r.Model == "" {
			r.Model = "openfold3"
		}
		j, err := catalog.Default().NewPredict(&r)
		if err == nil {
			err = checkInputs(j.Input)
		}
		if err != nil {
			t.Logf("%s: refused at submit: %v", name, err)
			continue
		}
		// The runner YAML of a GPU worker differs from the CPU's in its kernels and
		// accelerator only: one input checks it.
		gpus := []bool{false}
		if name == "openfold3/ligands_dna_steps.json" {
			gpus = append(gpus, true)
		}
		for _, gpu := range gpus {
			h := newHarness(t, Config{GPU: gpu})
			if _, err := h.run(newJob(t, requests[name])); err != nil {
				t.Fatalf("%s: %v\n%s", name, err, h.Log.String())
			}
			works = append(works, h.workDir)
		}
		accepted = append(accepted, name)
	}
	placeholder := filepath.Join(t.TempDir(), checkpointName)
	if err := os.WriteFile(placeholder, []byte("placeholder"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(env.Python(), append([]string{filepath.Join("testdata", "accept_inputs.py"), placeholder}, works...)...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("accept_inputs.py: %v\n%s", err, out)
	}
	ok := 0
	for line := range strings.Lines(string(out)) {
		if strings.HasPrefix(line, "ok ") {
			ok++
		} else if strings.HasPrefix(line, "refused ") {
			t.Error(strings.TrimSpace(line))
		}
	}
	if ok != len(works) {
		t.Errorf("OpenFold3 accepted %d of the %d runs' inputs", ok, len(works))
	}
	t.Logf("OpenFold3 read and featurised %d/%d runs' inputs (%d inputs accepted at submit, one also as a GPU worker writes it): %v",
		ok, len(works), len(accepted), accepted)
}

// checkInputs applies the engine's own input rules, as the server does at submit.
func checkInputs(input job.Input) error {
	complexes, err := bio.Complexes(input)
	if err != nil {
		return err
	}
	for _, cx := range complexes {
		if err := New(Config{}).CheckInput("openfold3", cx, nil); err != nil {
			return err
		}
	}
	return nil
}
