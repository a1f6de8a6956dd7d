package boltz

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/bio"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/boltz/boltztest"
	"github.com/chaperone-bio/chaperone/engine/proc"
	"github.com/chaperone-bio/chaperone/engine/toolkit"
	"github.com/chaperone-bio/chaperone/engine/toolkit/npy"
	"github.com/chaperone-bio/chaperone/internal/enginerun"
	"github.com/chaperone-bio/chaperone/job"
)

// standIn is the path of the stand-in boltz, built once for the package's tests.
var standIn string

func TestMain(m *testing.M) { os.Exit(enginerun.Main(m, boltztest.Build, &standIn)) }

// harness is one engine run against the stand-in, given the alignments the tests'
// alignment stage searched for the job (stage).
type harness struct {
	t       *testing.T
	engine  *Engine
	workDir string
	enginerun.Recorder
}

func newHarness(t *testing.T) *harness {
	return &harness{t: t, engine: New(Config{})}
}

func (h *harness) run(ctx context.Context, j *job.Job) (*engine.Output, error) {
	h.t.Helper()
	h.workDir = h.t.TempDir()
	return h.runIn(ctx, j, h.workDir)
}

func (h *harness) runIn(ctx context.Context, j *job.Job, workDir string) (*engine.Output, error) {
	return h.engine.Run(ctx, &engine.Run{
		Job: j, WorkDir: workDir, Tools: engine.Tools{"boltz": standIn}, Alignments: stage(j), Log: &h.Log,
		Report: h.Report, Exec: h.Exec(workDir),
	})
}

func (h *harness) mustRun(j *job.Job) *engine.Output {
	h.t.Helper()
	out, err := h.run(context.Background(), j)
	if err != nil {
		h.t.Fatalf("run: %v\nlog:\n%s", err, h.Log.String())
	}
	return out
}

// args is the command line the stand-in was given, from its first line of output.
func (h *harness) args() string {
	for line := range strings.Lines(h.Log.String()) {
		if rest, ok := strings.CutPrefix(line, "[boltz stand-in] predict "); ok {
			return strings.TrimSpace(rest)
		}
	}
	h.t.Fatalf("the stand-in did not run:\n%s", h.Log.String())
	return ""
}

func paths(files []engine.File) map[string]string {
	m := map[string]string{}
	for _, f := range files {
		m[f.Path] = f.Type
	}
	return m
}

func TestRunOneProtein(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	out := h.mustRun(enginerun.PredictJob(t, `{"sequence": "MKTAYIAKQRQISFVKSHFSRQ"}`))

	args := h.args()
	for _, want := range []string{"--accelerator cpu", "--diffusion_samples 1", "--output_format mmcif", "--override", "--seed 0"} {
		if !strings.Contains(args, want) {
			t.Errorf("args %q lack %q", args, want)
		}
	}
	for _, absent := range []string{"--recycling_steps", "--sampling_steps", "--no_kernels", "--write_full_pae", "--use_msa_server", "--msa_server_url"} {
		if strings.Contains(args, absent) {
			t.Errorf("args %q have %s, which the job left to Boltz", args, absent)
		}
	}
	// The alignment was searched ahead of the run: Boltz processes the input at once.
	if got, want := h.Stages(), []string{job.StageStarting, job.StageInference}; !reflect.DeepEqual(got, want) {
		t.Errorf("stages %v, want %v", got, want)
	}
	const note = "[chaperone] target_1: alignments of chain A searched by chaperone's alignment stage (server https://msa.example.org; mode env; pairing pairgreedy-env)\n"
	if read := readByBoltz(t, h.workDir, "target_1")["A"]; len(read) != 4 || !strings.Contains(h.Log.String(), note) {
		t.Errorf("Boltz read the alignment rows %v; the log says\n%s", read, h.Log.String())
	}
	reports := h.Reports()
	if last := reports[len(reports)-1]; *last.Fraction != 1 || last.Done != 1 || last.Total != 1 {
		t.Errorf("last progress %+v (fraction %v), want 1 of 1 done", last, *last.Fraction)
	}
	if len(out.Rows) != 1 {
		t.Fatalf("rows %v", out.Rows)
	}
	row := out.Rows[0]
	if row.ID != "target_1" || row.Status != job.RowOK || row.Error != "" || row.NChains != 1 || row.NResidues != 22 ||
		row.Samples != 1 || !row.MSA || row.RuntimeS <= 0 || row.Affinity != nil {
		t.Errorf("row %+v", row)
	}
	s := row.Scores
	if s == nil || s.IPTM != nil || s.ComplexPLDDT == nil || s.ConfidenceScore == nil || s.ComplexIPLDDT == nil || s.ComplexPDE == nil || s.ComplexIPDE == nil {
		t.Fatalf("scores %+v: want every score but iptm, which one chain lacks", s)
	}
	if s.PLDDT <= 0 || s.PLDDT > 1 || s.PLDDT != *s.ComplexPLDDT || s.PTM <= 0 {
		t.Errorf("plddt %v, complex_plddt %v, ptm %v", s.PLDDT, *s.ComplexPLDDT, s.PTM)
	}
	// Without write_pae, Boltz's arrays (which it writes all the same) stay out.
	want := map[string]string{
		"target_1.cif": job.ArtifactStructure,
		"target_1/confidence_target_1_model_0.json": job.ArtifactConfidence,
	}
	if got := paths(out.Files); !reflect.DeepEqual(got, want) {
		t.Errorf("files %v, want %v", got, want)
	}
	for _, f := range out.Files {
		if _, err := os.Stat(f.Local); err != nil || f.Target != "target_1" {
			t.Errorf("file %+v: %v", f, err)
		}
	}
	if b, _ := os.ReadFile(out.Files[0].Local); bio.StructureFormat(string(b)) != bio.MMCIF {
		t.Errorf("best structure is not mmCIF: %.80q", b)
	}
}

func TestRunParams(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	out := h.mustRun(enginerun.PredictJob(t, `{"sequence": "MKTAYIAK", "params": {"recycling_steps": 4, "sampling_steps": 50,
		"diffusion_samples": 3, "output_format": "pdb", "fast": false, "use_msa_server": false, "seed": 7, "write_pae": true}}`))
	args := h.args()
	for _, want := range []string{"--recycling_steps 4", "--sampling_steps 50", "--diffusion_samples 3", "--output_format pdb", "--no_kernels",
		"--seed 7", "--write_full_pae --write_full_pde"} {
		if !strings.Contains(args, want) {
			t.Errorf("args %q lack %q", args, want)
		}
	}
	row := out.Rows[0]
	if row.Samples != 3 || row.MSA {
		t.Errorf("row %v", row)
	}
	got := paths(out.Files)
	for _, p := range []string{"target_1.pdb", "target_1_sample_1.pdb", "target_1_sample_2.pdb"} {
		if got[p] != job.ArtifactStructure {
			t.Errorf("no structure %s in %v", p, got)
		}
	}
	// write_pae: Boltz's arrays of every sample, per token: the PAE and PDE tokens ×
	// tokens, the pLDDT one per token.
	for k := range 3 {
		for key, shape := range map[string][]int{"plddt": {8}, "pae": {8, 8}, "pde": {8, 8}} {
			path := fmt.Sprintf("target_1/%s_target_1_model_%d.npz", key, k)
			i := slices.IndexFunc(out.Files, func(f engine.File) bool { return f.Path == path })
			if i < 0 {
				t.Fatalf("no %s in %v", path, got)
			}
			arrays, err := npy.ReadNPZ(out.Files[i].Local)
			if a := arrays[key]; err != nil || a == nil || !reflect.DeepEqual(a.Shape, shape) {
				t.Errorf("%s: %v, %v; want %s of shape %v", path, arrays, err, key, shape)
			}
		}
	}
	// And the best sample's PAE and PDE, token by token, as <target>_pae.npz.
	i := slices.IndexFunc(out.Files, func(f engine.File) bool { return f.Path == "target_1_pae.npz" })
	if i < 0 || out.Files[i].Type != job.ArtifactPAE {
		t.Fatalf("no target_1_pae.npz of type pae in %v", got)
	}
	arrays, err := npy.ReadNPZ(out.Files[i].Local)
	if err != nil || arrays["pae"] == nil || arrays["pde"] == nil || !reflect.DeepEqual(arrays["pae"].Shape, []int{8, 8}) {
		t.Errorf("target_1_pae.npz: %v, %v; want pae and pde of 8 x 8", arrays, err)
	}
	// Samples keep Boltz's ranking: the best is the bare name, and the scores fall.
	var scores []float64
	for k := range 3 {
		var c confidence
		if err := toolkit.ReadPythonJSON(filepath.Join(h.workDir, "out/boltz_results_inputs/predictions/target_1",
			fmt.Sprintf("confidence_target_1_model_%d.json", k)), &c); err != nil {
			t.Fatal(err)
		}
		scores = append(scores, *c.ConfidenceScore)
	}
	if !slices.IsSortedFunc(scores, func(a, b float64) int { return int((b - a) * 1e6) }) || *row.Scores.ConfidenceScore != scores[0] {
		t.Errorf("scores %v by rank, row confidence_score %v", scores, *row.Scores.ConfidenceScore)
	}
	yaml, err := os.ReadFile(filepath.Join(h.workDir, "inputs/target_1.yaml"))
	if err != nil || !strings.Contains(string(yaml), `msa: "empty"`) {
		t.Errorf("without the server the chain must be single-sequence:\n%s (%v)", yaml, err)
	}
}

func TestRunTargetsAndFailures(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	started := time.Now()
	out := h.mustRun(enginerun.PredictJob(t, `{"targets": [
		{"name": "good", "content": ">A|protein|empty\nMKTAYIAK\n>B|protein|empty\nGGSGG\n"},
		{"name": "skip-me", "content": ">A|protein|empty\nMKTAYIAK\n"},
		{"name": "oom-big", "content": ">A|protein|empty\nMKTAYIAK\n"},
		{"content": ">x\nGGGG\n"}], "params": {"use_msa_server": false}}`))
	wall := time.Since(started).Seconds()
	rows := map[string]job.PredictionRow{}
	sum := 0.0
	for _, r := range out.Rows {
		rows[r.ID] = r
		sum += r.RuntimeS
	}
	if len(rows) != 4 || rows["good"].Status != job.RowOK || rows["target_4"].Status != job.RowOK {
		t.Fatalf("rows %+v", out.Rows)
	}
	if good := rows["good"]; good.NChains != 2 || good.Scores.IPTM == nil {
		t.Errorf("two-chain row %+v", good)
	}
	if e := rows["skip-me"]; e.Status != job.RowFailed || e.Scores != nil || e.Error != "Boltz could not process the input and skipped it: Invalid SMILES for ligand: simulated parse failure" {
		t.Errorf("skipped row %+v", e)
	}
	if e := rows["oom-big"]; e.Status != job.RowFailed || !strings.Contains(e.Error, `Boltz ran out of memory predicting it ("| WARNING: ran out of memory, skipping batch")`) {
		t.Errorf("out-of-memory row %+v", e)
	}
	for id, r := range rows {
		if r.NResidues == 0 || r.RuntimeS <= 0 {
			t.Errorf("%s: row %+v lacks n_residues or a positive runtime_s", id, r)
		}
	}
	// The rows share out the tool's wall time, which is within the engine's (give or take
	// the rounding of each row to a millisecond).
	if sum > wall+0.002 || sum < wall/2 {
		t.Errorf("runtime_s add up to %.3f s; the run took %.3f s", sum, wall)
	}
	for _, f := range out.Files {
		if f.Target == "skip-me" || f.Target == "oom-big" {
			t.Errorf("a failed target has file %s", f.Path)
		}
	}
}

func TestRunEveryTargetFailed(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	_, err := h.run(context.Background(), enginerun.PredictJob(t, `{"targets": [{"name": "skip-a", "content": ">a\nMK"}, {"name": "oom-b", "content": ">a\nMK"}]}`))
	if err == nil || !strings.Contains(err.Error(), "boltz predicted none of the 2 target(s): skip-a: Boltz could not process the input and skipped it: Invalid SMILES") ||
		!strings.Contains(err.Error(), "oom-b: Boltz ran out of memory") {
		t.Errorf("err = %v", err)
	}
}

func TestRunCrash(t *testing.T) {
	t.Parallel()
	t.Run("before any target", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		_, err := h.run(context.Background(), enginerun.PredictJob(t, `{"targets": [{"name": "crash", "content": ">a\nMK"}]}`))
		var exit *proc.ExitError
		if !errors.As(err, &exit) || exit.Code != 1 || !strings.Contains(err.Error(), "CUDA error: an illegal memory access") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("after a target", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		out := h.mustRun(enginerun.PredictJob(t, `{"targets": [{"name": "a", "content": ">a\nMK"}, {"name": "crash", "content": ">a\nGG"}]}`))
		if out.Rows[0].Status != job.RowOK || out.Rows[1].Status != job.RowFailed ||
			out.Rows[1].Error != "boltz exited before it finished this target (exit code 1); the run log has its output" {
			t.Errorf("rows %v", out.Rows)
		}
	})
}

const affinityYAML = `sequences:
  - protein: {id: A, sequence: MKTAYIAKQR, msa: empty}
  - ligand: {id: L, smiles: 'N[C@@H](Cc1ccc(O)cc1)C(=O)O'}
properties:
  - affinity: {binder: L}
`

func TestRunAffinity(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	content, _ := json.Marshal(affinityYAML)
	out := h.mustRun(enginerun.PredictJob(t, `{"targets": [{"name": "lig", "content": `+string(content)+`}, {"name": "affoom", "content": `+string(content)+`}]}`))
	if got, want := h.Stages(), []string{job.StageStarting, job.StageInference, job.StageAffinity}; !reflect.DeepEqual(got, want) {
		t.Errorf("stages %v, want %v", got, want)
	}
	ok, failed := out.Rows[0], out.Rows[1]
	if a := ok.Affinity; a == nil || a.PredValue1 == nil || a.ProbabilityBinary1 == nil || a.PredValue2 == nil || a.ProbabilityBinary2 == nil {
		t.Fatalf("row lacks an affinity value: %+v", a)
	}
	if p := ok.Affinity.ProbabilityBinary; p < 0 || p > 1 {
		t.Errorf("probability %v", p)
	}
	if got := paths(out.Files); got["lig/affinity_lig.json"] != job.ArtifactAffinity || got["affoom.cif"] != job.ArtifactStructure {
		t.Errorf("files %v", got)
	}
	if failed.Status != job.RowFailed || failed.Scores == nil || failed.Affinity != nil || failed.Error != `Boltz predicted the structure but no affinity: it ran out of memory in the affinity loop ("| WARNING: ran out of memory, skipping batch"); the structure files are kept` {
		t.Errorf("affinity failure row %+v", failed)
	}
}

// TestRunSameSequenceSharesItsAlignment: Boltz reads entries with the same sequence as
// copies of one molecule and skips the input unless they name the same MSA file, so an
// alignment sent inline for both is written once and named by both.
func TestRunSameSequenceSharesItsAlignment(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	content, _ := json.Marshal(`sequences:
  - protein:
      id: A
      sequence: MKTAYI
      msa: |
        >query
        MKTAYI
        >hit
        MK-AYI
  - ligand: {id: L, ccd: SAH}
  - protein:
      id: B
      sequence: MKTAYI
      msa: |
        >query
        MKTAYI
        >hit
        MK-AYI
`)
	out := h.mustRun(enginerun.PredictJob(t, `{"targets": [{"name": "dimer", "content": `+string(content)+`}]}`))
	if row := out.Rows[0]; row.Status != job.RowOK || row.NChains != 3 || !row.MSA {
		t.Errorf("row %v", row)
	}
	yaml, err := os.ReadFile(filepath.Join(h.workDir, "inputs", "dimer.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	msa := fmt.Sprintf("msa: %q", filepath.Join(h.workDir, "files", "dimer_msa1.a3m"))
	if strings.Count(string(yaml), msa) != 2 || strings.Count(string(yaml), "msa:") != 2 {
		t.Errorf("both copies must name one alignment file (%s):\n%s", msa, yaml)
	}
}
