package openfold3

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/toolkit"
	"github.com/chaperone-bio/chaperone/job"
)

// complexYAML has a protein in two copies, a SMILES ligand, a CCD ligand and DNA.
const complexYAML = "sequences:\n  - protein: {id: [A, B], sequence: MKTAYIAKQRQISFVKSHFSRQ}\n" +
	"  - ligand: {id: L, smiles: 'N[C@@H](Cc1ccc(O)cc1)C(=O)O'}\n  - ligand: {id: M, ccd: ATP}\n" +
	"  - dna: {id: D, sequence: ACGTAC}\n"

func TestRunsEveryTargetInOneRun(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{})
	j := newJob(t, `{"targets": [{"name": "mono", "content": ">A|protein|empty\nMKTAYIAKQRQISFVKSHFSRQ\n"},
		{"name": "cx", "content": `+jsonText(complexYAML)+`}],
		"params": {"diffusion_samples": 3, "use_msa_server": false}}`)
	out, err := h.run(j)
	if err != nil {
		t.Fatalf("%v\n%s", err, h.Log.String())
	}
	log := h.Log.String()
	if n := strings.Count(log, "[run_openfold stand-in] predict"); n != 1 {
		t.Errorf("want one predict run, got %d:\n%s", n, log)
	}
	rows := map[string]job.PredictionRow{}
	for _, r := range out.Rows {
		rows[r.ID] = r
	}
	mono, cx := rows["mono"], rows["cx"]
	if mono.Status != job.RowOK || mono.Samples != 3 || mono.NChains != 1 || mono.NResidues != 22 || mono.MSA || mono.Scores.IPTM != nil {
		t.Errorf("mono row %+v scores %+v", mono, mono.Scores)
	}
	if cx.Status != job.RowOK || cx.NChains != 5 || cx.NResidues != 22*2+1+1+6 || cx.Scores.IPTM == nil {
		t.Errorf("cx row %+v scores %+v", cx, cx.Scores)
	}
	for _, r := range out.Rows {
		if s := r.Scores; s.PLDDT <= 0 || s.PLDDT > 1 || *s.ComplexPLDDT != s.PLDDT || s.ConfidenceScore == nil || r.RuntimeS <= 0 {
			t.Errorf("row %s: scores %+v runtime %v", r.ID, s, r.RuntimeS)
		}
	}
	// The structures are served in the order of sample_ranking_score, best first, whatever
	// order OpenFold3 generated them in.
	var scores []float64
	reordered := false
	for _, path := range []string{"cx.cif", "cx_sample_1.cif", "cx_sample_2.cif"} {
		f := fileOf(t, out, path)
		if f.Type != job.ArtifactStructure || f.Target != "cx" {
			t.Errorf("%s: %+v", path, f.Artifact)
		}
		var agg aggregated
		if err := toolkit.ReadPythonJSON(strings.TrimSuffix(f.Local, "_model.cif")+"_confidences_aggregated.json", &agg); err != nil {
			t.Fatal(err)
		}
		scores = append(scores, *agg.SampleRankingScore)
		rank := len(scores) - 1
		reordered = reordered || !strings.HasSuffix(f.Local, "_sample_"+string(rune('1'+rank))+"_model.cif")
		conf := fileOf(t, out, "cx/cx_model_"+string(rune('0'+rank))+"_confidences_aggregated.json")
		if filepath.Dir(conf.Local) != filepath.Dir(f.Local) || !strings.HasPrefix(filepath.Base(conf.Local), strings.TrimSuffix(filepath.Base(f.Local), "_model.cif")) {
			t.Errorf("rank %d: structure %s, confidences %s", rank, f.Local, conf.Local)
		}
	}
	if !slices.IsSortedFunc(scores, func(a, b float64) int { return cmpFloat(b, a) }) || scores[0] != *cx.Scores.ConfidenceScore {
		t.Errorf("samples in the order of scores %v; row confidence %v", scores, *cx.Scores.ConfidenceScore)
	}
	if !reordered {
		t.Error("the stand-in generated the samples in rank order, so this test does not show that the engine ranks them")
	}
	// The caller's chain ids name the chains of the structure.
	b, err := os.ReadFile(fileOf(t, out, "cx.cif").Local)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{" LIG0 L 1 L ", " ATP M 1 M ", " DA D 1 D ", " MET B 1 B "} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the structure lacks %q:\n%.400s", want, b)
		}
	}
	for _, want := range []string{"--num_diffusion_samples 3", "--use_msa_server false --use_templates false", "--inference_ckpt_path " + ckpt,
		"seeds [42], presets [predict], num_recycles 3, no_full_rollout_steps 200", "accelerator cpu",
		"use_deepspeed_evo_attention false, use_cueq_triangle_kernels false", "mono chains A (protein): single-sequence (use_msas false)",
		"cx chains D (dna)"} {
		if !strings.Contains(log, want) {
			t.Errorf("the log lacks %q:\n%s", want, log)
		}
	}
	reports := h.Reports()
	last := reports[len(reports)-1]
	if last.Stage != job.StageInference || last.Done != 2 || last.Total != 2 || *last.Fraction != 1 {
		t.Errorf("last progress %+v", last)
	}
}

func jsonText(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// fileOf is the output's artifact at path.
func fileOf(t *testing.T, out *engine.Output, path string) engine.File {
	t.Helper()
	for _, f := range out.Files {
		if f.Path == path {
			return f
		}
	}
	var paths []string
	for _, f := range out.Files {
		paths = append(paths, f.Path)
	}
	t.Fatalf("no artifact %s among %v", path, paths)
	return engine.File{}
}

// TestSeed runs with the caller's seed and reads its results from that seed's folder.
func TestSeed(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{})
	out, err := h.run(newJob(t, `{"sequence": "MKTAYIAK", "params": {"seed": 7, "use_msa_server": false}}`))
	if err != nil {
		t.Fatalf("%v\n%s", err, h.Log.String())
	}
	if log := h.Log.String(); !strings.Contains(log, "seeds [7]") {
		t.Errorf("the run was not seeded with 7:\n%s", log)
	}
	if len(out.Rows) != 1 || out.Rows[0].Status != job.RowOK {
		t.Errorf("rows %+v", out.Rows)
	}
}
