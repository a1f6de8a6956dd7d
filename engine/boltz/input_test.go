package boltz

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/align"
	"github.com/chaperone-bio/chaperone/bio"
	"github.com/chaperone-bio/chaperone/engine/toolkit"
	"github.com/chaperone-bio/chaperone/internal/testpython"
	"github.com/chaperone-bio/chaperone/job"
)

const python = testpython.Path

// pythonHas makes sure that Debian's Python has the modules (see testpython.Require).
func pythonHas(t *testing.T, modules ...string) {
	t.Helper()
	testpython.Require(t, modules...)
}

// writeInput writes the Boltz input of a target with use_msa_server on, given the
// alignments searched ahead of the run, into a folder for the YAML and one for the files
// it names.
func writeInput(t *testing.T, cx *bio.Complex, searched ...align.Result) (dir, files string) {
	t.Helper()
	dir, files = t.TempDir(), t.TempDir()
	tg, err := planTarget(cx, true, searched, files)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeYAML(dir, files, tg); err != nil {
		t.Fatal(err)
	}
	return dir, files
}

// TestWrittenYAMLReadsInPyYAML reads the YAML the engine writes with PyYAML's safe_load,
// the reader Boltz itself uses, and compares what it sees with what was meant: ids that
// PyYAML would take for booleans or numbers stay strings, distances are floats, and every
// inline file is where the YAML says.
func TestWrittenYAMLReadsInPyYAML(t *testing.T) {
	t.Parallel()
	pythonHas(t, "yaml")
	cx, err := bio.ParseInput("mix", `sequences:
  - protein:
      id: ["NO", "1"]
      sequence: MKTAYI
      msa: |
        >query
        MKTAYI
        MK-AYI
      modifications: [{position: 2, ccd: sep}]
      cyclic: true
  - rna: {id: R, sequence: ACGU}
  - ligand: {id: L, ccd: [SAH, ATP]}
  - ligand: {id: Y, smiles: "C[C@@H](O)C#N"}
constraints:
  - bond: {atom1: ["NO", 1, CA], atom2: [L, 2, C1]}
  - pocket: {binder: Y, contacts: [[R, 2], [L, N1]], max_distance: 5, force: true}
  - contact: {token1: ["1", 3], token2: [Y, C2]}
templates:
  - pdb: |
      ATOM      1  CA  ALA A   1      11.104   6.134  -6.504  1.00  0.00           C
    chain_id: ["NO"]
    template_id: [A]
    force: true
    threshold: 2
properties:
  - affinity: {binder: Y}
`)
	if err != nil {
		t.Fatal(err)
	}
	dir, files := writeInput(t, cx)
	out, err := exec.Command(python, "-c", "import yaml, json, sys; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))",
		filepath.Join(dir, "mix.yaml")).CombinedOutput()
	if err != nil {
		t.Fatalf("PyYAML: %v\n%s", err, out)
	}
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	msaPath := filepath.Join(files, "mix_msa1.a3m")
	tmplPath := filepath.Join(files, "mix_template1.pdb")
	want := map[string]any{
		"version": 1.0,
		"sequences": []any{
			map[string]any{"protein": map[string]any{"id": []any{"NO", "1"}, "sequence": "MKTAYI", "msa": msaPath,
				"modifications": []any{map[string]any{"position": 2.0, "ccd": "SEP"}}, "cyclic": true}},
			map[string]any{"rna": map[string]any{"id": []any{"R"}, "sequence": "ACGU"}},
			map[string]any{"ligand": map[string]any{"id": []any{"L"}, "ccd": []any{"SAH", "ATP"}}},
			map[string]any{"ligand": map[string]any{"id": []any{"Y"}, "smiles": "C[C@@H](O)C#N"}},
		},
		"constraints": []any{
			map[string]any{"bond": map[string]any{"atom1": []any{"NO", 1.0, "CA"}, "atom2": []any{"L", 2.0, "C1"}}},
			map[string]any{"pocket": map[string]any{"binder": "Y", "contacts": []any{[]any{"R", 2.0}, []any{"L", "N1"}},
				"max_distance": 5.0, "force": true}},
			map[string]any{"contact": map[string]any{"token1": []any{"1", 3.0}, "token2": []any{"Y", "C2"}}},
		},
		// Boltz names chain A of a PDB template A1 (its PDB reader renames the chains' parts).
		"templates":  []any{map[string]any{"pdb": tmplPath, "chain_id": []any{"NO"}, "template_id": []any{"A1"}, "force": true, "threshold": 2.0}},
		"properties": []any{map[string]any{"affinity": map[string]any{"binder": "Y"}}},
	}
	if !reflect.DeepEqual(got, want) {
		gb, _ := json.MarshalIndent(got, "", " ")
		t.Errorf("PyYAML read\n%s", gb)
	}
	// Python prints max_distance 5.0 and threshold 2.0: floats, not ints.
	if !strings.Contains(string(out), `"max_distance": 5.0`) || !strings.Contains(string(out), `"threshold": 2.0`) {
		t.Errorf("distances are not floats to PyYAML: %s", out)
	}
	// The template gains the SEQRES that Boltz needs.
	for path, text := range map[string]string{msaPath: ">query\nMKTAYI\nMK-AYI\n", tmplPath: "SEQRES   1 A    1  ALA\n" + cx.Templates[0].Text} {
		if b, err := os.ReadFile(path); err != nil || string(b) != text {
			t.Errorf("%s = %q, %v; want %q", path, b, err, text)
		}
	}
}

func TestBoltzEntities(t *testing.T) {
	t.Parallel()
	cx, err := bio.ParseInput("t", `sequences:
  - ligand: {id: L, ccd: CO}
  - protein: {id: A, sequence: MK}
  - protein: {id: B, sequence: GG}
  - protein: {id: C, sequence: MK}
  - rna: {id: R, sequence: ACG}
  - dna: {id: D, sequence: ACG}
  - ligand: {id: M, ccd: [CO]}
  - ligand: {id: N, smiles: CO}
  - ligand: {id: P, ccd: [CO, ATP]}
`)
	if err != nil {
		t.Fatal(err)
	}
	// As Boltz groups them: same type and the same text, SMILES and CCD alike.
	if got, want := boltzEntities(cx), []int{0, 1, 2, 1, 3, 4, 0, 0, 5}; !reflect.DeepEqual(got, want) {
		t.Errorf("entities %v, want %v", got, want)
	}
}

// TestMonitor feeds the monitor lines as Boltz, tqdm and Lightning print them.
func TestMonitor(t *testing.T) {
	t.Parallel()
	var reports []job.Progress
	m := newMonitor(func(p job.Progress) { reports = append(reports, p) }, 2, true)
	for _, line := range []string{
		"Checking input data.",
		"Processing 2 inputs with 2 threads.",
		" 50%|█████     | 1/2 [00:03<00:03,  3.10s/it]",
		"Failed to process /w/inputs/b.v2.yaml. Skipping. Error: Missing MSA's in input and --use_msa_server flag not set..",
		"100%|██████████| 2/2 [00:06<00:00,  3.10s/it]",
		"Running structure prediction for 1 input.",
		"Predicting DataLoader 0:   0%|          | 0/1 [00:00<?, ?it/s]",
		"| WARNING: ran out of memory, skipping batch",
		"Predicting DataLoader 0: 100%|██████████| 1/1 [00:05<00:00,  0.20it/s]",
		"Number of failed examples: 1",
		"Predicting property: affinity",
		"Predicting DataLoader 0:   0%|          | 0/1 [00:00<?, ?it/s]",
		"Predicting DataLoader 0: 100%|██████████| 1/1 [00:02<00:00,  0.50it/s]",
	} {
		m.line(line)
	}
	var stages []string
	last := 0.0
	for _, r := range reports {
		if len(stages) == 0 || stages[len(stages)-1] != r.Stage {
			stages = append(stages, r.Stage)
		}
		if *r.Fraction < last {
			t.Errorf("progress went back from %v to %v", last, *r.Fraction)
		}
		last = *r.Fraction
	}
	if want := []string{job.StageStarting, job.StageInference, job.StageAffinity}; !reflect.DeepEqual(stages, want) {
		t.Errorf("stages %v, want %v", stages, want)
	}
	if last != 1 || reports[len(reports)-1].Done != 1 {
		t.Errorf("last report %+v (fraction %v)", reports[len(reports)-1], last)
	}
	if got := m.skipped["b.v2"]; got != "Missing MSA's in input and --use_msa_server flag not set." {
		t.Errorf("skipped %v", m.skipped)
	}
	if m.oom[phaseStructure] != 1 || m.oom[phaseAffinity] != 0 || m.loopStart[phaseStructure].IsZero() || m.loopStart[phaseAffinity].IsZero() {
		t.Errorf("oom %v, loop starts %v", m.oom, m.loopStart)
	}
}

// Boltz's messages reach the monitor after a progress bar's text on the same line when the
// bar was drawn last (tqdm redraws start with a carriage return and end with nothing).
func TestMonitorReadsMessagesAfterABar(t *testing.T) {
	t.Parallel()
	m := newMonitor(func(job.Progress) {}, 2, false)
	for _, line := range []string{
		" 50%|█████     | 1/2 [00:03<00:03,  3.10s/it]Failed to process /w/inputs/b.yaml. Skipping. Error: bad residue.",
		"Running structure prediction for 1 input.",
		"Predicting DataLoader 0:   0%|          | 0/1 [00:00<?, ?it/s]| WARNING: ran out of memory, skipping batch",
	} {
		m.line(line)
	}
	if m.skipped["b"] != "bad residue" {
		t.Errorf("skipped %v, want b's error", m.skipped)
	}
	if m.oom[phaseStructure] != 1 {
		t.Errorf("out-of-memory batches %v, want one in the structure loop", m.oom)
	}
}

// TestStandInIsStrict checks the fixture itself: it refuses what the real CLI refuses.
func TestStandInIsStrict(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"predict", dir, "--recycle_steps", "3"}, "Error: No such option: --recycle_steps"},
		{[]string{"predict", dir, "--accelerator", "xpu"}, "Error: Invalid value for '--accelerator': 'xpu' is not one of 'gpu', 'cpu', 'tpu'."},
		{[]string{"predict", dir, "--diffusion_samples", "two"}, "'two' is not a valid integer."},
		{[]string{"predict", dir, "--override=yes"}, "Option '--override' does not take a value."},
		{[]string{"predict", "--out_dir", dir}, "Error: Missing argument 'DATA'."},
		{[]string{"predict", filepath.Join(dir, "none")}, "Path '" + filepath.Join(dir, "none") + "' does not exist."},
		{[]string{"fold", dir}, "No such command 'fold'."},
		// Not Boltz's answer: the stand-in's, so that every run on it proves the engine
		// never lets Boltz search alignments on a server.
		{[]string{"predict", dir, "--use_msa_server"}, "refused --use_msa_server"},
	}
	for _, tt := range tests {
		out, err := exec.Command(standIn, tt.args...).CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), tt.want) {
			t.Errorf("boltz %v: %v\n%s\nwant exit 2 and %q", tt.args, err, out, tt.want)
		}
	}
}

// TestRuntimes: each target gets its own time in the loops, measured between the moments
// consecutive targets were written, and an equal share of the rest of the run; an affinity
// row splits it into its structure's time and its affinity's.
func TestRuntimes(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	m := &monitor{}
	m.loopStart[phaseStructure], m.loopStart[phaseAffinity] = at(2), at(9.5)
	results := []*result{
		{ended: [numPhases]time.Time{phaseStructure: at(9), phaseAffinity: at(11)}, Target: toolkit.Target{Row: job.PredictionRow{Affinity: &job.Affinity{}}}},
		{ended: [numPhases]time.Time{phaseStructure: at(5)}},
		{}, // failed: no loop wrote anything for it
	}
	o := &outcome{mon: m, wall: 12 * time.Second}
	o.runtimes(results)
	// Structure loop: 3 s and 4 s; affinity loop: 1.5 s; the other 3.5 s are shared.
	want := []float64{4 + 1.5 + 3.5/3, 3 + 3.5/3, 3.5 / 3}
	sum := 0.0
	for i, r := range results {
		got := r.Row.RuntimeS
		if d := got - want[i]; d > 0.001 || d < -0.001 {
			t.Errorf("target %d: runtime_s %v, want %.3f", i, got, want[i])
		}
		sum += got
	}
	if sum < 11.999 || sum > 12.001 {
		t.Errorf("runtime_s add up to %v, want the wall time 12", sum)
	}
	if a := results[0].Row.Affinity; a.StructureRuntimeS == nil || a.RuntimeS == nil ||
		*a.RuntimeS != 1.5 || *a.StructureRuntimeS != results[0].Row.RuntimeS-1.5 {
		t.Errorf("the affinity row's split: structure %v, affinity %v; want %.3f and 1.5",
			a.StructureRuntimeS, a.RuntimeS, results[0].Row.RuntimeS-1.5)
	}
	if results[1].Row.Affinity != nil {
		t.Errorf("a row without affinity got one: %+v", results[1].Row.Affinity)
	}
}
