package protenix

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/toolkit/npy"
	"github.com/chaperone-bio/chaperone/internal/enginerun"
	"github.com/chaperone-bio/chaperone/job"
)

func TestRunOneProtein(t *testing.T) {
	t.Parallel()
	const seq = "MKTAYIAKQRQISFVKSHFSRQ"
	h := newHarness(t, fakeSearch(seq))
	out := h.mustRun(enginerun.PredictJob(t, `{"model": "protenix-v2", "sequence": "`+seq+`"}`))

	args := h.args()
	for _, want := range []string{"--seeds 101", "--sample 1", "--model_name protenix-v2", "--dtype bf16", "--use_msa true",
		"--trimul_kernel torch --triatt_kernel torch", "--need_atom_confidence true"} {
		if !strings.Contains(args, want) {
			t.Errorf("args %q lack %q", args, want)
		}
	}
	for _, absent := range []string{"--cycle", "--step", "--device", "--load_checkpoint_path", "--msa_server_mode"} {
		if strings.Contains(args, absent) {
			t.Errorf("args %q have %s", args, absent)
		}
	}
	if got, want := h.Stages(), []string{job.StageInference}; !reflect.DeepEqual(got, want) {
		t.Errorf("stages %v, want %v", got, want)
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
		row.Samples != 1 || !row.MSA || row.RuntimeS <= 0 {
		t.Errorf("row %+v", row)
	}
	s := row.Scores
	if s == nil || s.IPTM != nil || s.ComplexPLDDT == nil || s.ConfidenceScore == nil {
		t.Fatalf("scores %+v: want plddt, ptm, complex_plddt and confidence_score, and no iptm for one chain", s)
	}
	if s.PLDDT < 0.55 || s.PLDDT > 0.95 || s.PTM <= 0 {
		t.Errorf("plddt %v (the tool writes 55..95 on 0..100), ptm %v", s.PLDDT, s.PTM)
	}
	want := map[string]string{"target_1.cif": job.ArtifactStructure,
		"target_1/target_1_summary_confidence_sample_0.json": job.ArtifactConfidence,
		"target_1/target_1_full_data_sample_0.json":          job.ArtifactPAE}
	if got := paths(out.Files); !reflect.DeepEqual(got, want) {
		t.Errorf("files %v, want %v", got, want)
	}
	// The tool read the search's four distinct rows (the chain heads both blocks).
	if !strings.Contains(h.Log.String(), "N_msa 4\n") {
		t.Errorf("the tool did not read the searched alignment:\n%s", h.Log.String())
	}
}

func TestCommandLine(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "checkpoint"), 0o755); err != nil {
		t.Fatal(err)
	}
	ckpt := filepath.Join(root, "checkpoint", "opendde_abag.pt")
	if err := os.WriteFile(ckpt, []byte("w"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		engine  *Engine
		params  string
		want    []string
		without []string
	}{
		{"protenix fast on a GPU", New(Config{GPU: true}), `{}`,
			[]string{"--dtype bf16", "--trimul_kernel cuequivariance --triatt_kernel cuequivariance", "--sample 1"}, []string{"--device"}},
		{"protenix plain", New(Config{GPU: true}), `{"fast": false, "recycling_steps": 3, "sampling_steps": 20, "diffusion_samples": 3}`,
			[]string{"--dtype fp32", "--trimul_kernel torch --triatt_kernel torch", "--cycle 3", "--step 20", "--sample 3"}, nil},
		{"protenix single-sequence", New(Config{}), `{"use_msa_server": false}`, []string{"--use_msa false"}, nil},
		{"protenix with the caller's seed", New(Config{}), `{"seed": 7}`, []string{"--seeds 7 "}, nil},
		{"opendde fast on a GPU", NewOpenDDE(Config{GPU: true}), `{}`,
			[]string{"--model_name opendde_v1", "--dtype bf16", "--trimul_kernel auto --triatt_kernel auto", "--device cuda", "--seeds 101 "},
			[]string{"--load_checkpoint_path"}},
		{"opendde plain on the CPU", NewOpenDDE(Config{}), `{"fast": false}`,
			[]string{"--dtype bf16", "--trimul_kernel torch --triatt_kernel torch", "--device cpu"}, nil},
		{"opendde-abag", NewOpenDDEAbAg(Config{OpenDDERoot: root}), `{}`,
			[]string{"--model_name opendde_v1", "--load_checkpoint_path " + ckpt}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarnessOf(t, tt.engine, fakeSearch("MKTAYIAK"))
			h.mustRun(enginerun.PredictJob(t, `{"model": "`+tt.engine.Models()[0]+`", "sequence": "MKTAYIAK", "params": `+tt.params+`}`))
			args := h.args()
			for _, w := range tt.want {
				if !strings.Contains(args, w) {
					t.Errorf("args %q lack %q", args, w)
				}
			}
			// No tool is ever sent to an alignment server.
			for _, w := range append(tt.without, "--msa_server_mode") {
				if strings.Contains(args, w) {
					t.Errorf("args %q have %q", args, w)
				}
			}
		})
	}
}

func TestSamplesInRankOrder(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	out := h.mustRun(enginerun.PredictJob(t, `{"model": "protenix-v2", "targets": [{"name": "pair", "content": ">A|protein|empty\nMKTAYIAK\n>B|protein|empty\nGGSGGS\n"}],
		"params": {"diffusion_samples": 3, "output_format": "pdb"}}`))
	row := out.Rows[0]
	if row.Samples != 3 || row.Scores.IPTM == nil || row.MSA {
		t.Fatalf("row %+v scores %+v", row, row.Scores)
	}
	var scores []float64
	for k := range 3 {
		s := readSummary(t, h.workDir, k)
		scores = append(scores, float64(*s.RankingScore))
	}
	if scores[0] < scores[1] || scores[1] < scores[2] || *row.Scores.ConfidenceScore != scores[0] {
		t.Errorf("ranking scores %v in file order, row confidence %v: want best first", scores, *row.Scores.ConfidenceScore)
	}
	for _, f := range out.Files {
		if f.Type != job.ArtifactStructure {
			continue
		}
		if !strings.HasSuffix(f.Path, ".pdb") {
			t.Errorf("structure %s with output_format pdb", f.Path)
		}
		b, err := os.ReadFile(f.Local)
		if err != nil || !strings.HasPrefix(string(b), "ATOM ") || !strings.HasSuffix(string(b), "END\n") {
			t.Errorf("%s is no PDB file: %v\n%s", f.Path, err, b)
		}
	}
	if got := paths(out.Files); got["pair.pdb"] == "" || got["pair_sample_1.pdb"] == "" || got["pair_sample_2.pdb"] == "" {
		t.Errorf("files %v", got)
	}
}

func TestWritePAE(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakeSearch("MKTAYIAK"))
	out := h.mustRun(enginerun.PredictJob(t, `{"model": "protenix-v2", "sequence": "MKTAYIAK", "params": {"write_pae": true, "diffusion_samples": 2}}`))
	i := slices.IndexFunc(out.Files, func(f engine.File) bool { return f.Path == "target_1_pae.npz" })
	if i < 0 || out.Files[i].Type != job.ArtifactPAE || out.Files[i].Target != "target_1" {
		t.Fatalf("no target_1_pae.npz of type pae in %v", paths(out.Files))
	}
	arrays, err := npy.ReadNPZ(out.Files[i].Local)
	if err != nil || arrays["pae"] == nil || !reflect.DeepEqual(arrays["pae"].Shape, []int{8, 8}) {
		t.Errorf("target_1_pae.npz: %v, %v; want pae of 8 x 8 tokens", arrays, err)
	}
}

// readSummary reads the summary the engine lists as sample k of the target pair.
func readSummary(t *testing.T, work string, k int) summary {
	t.Helper()
	all, _ := filepath.Glob(filepath.Join(work, "out", "pair", "seed_101", "predictions", "pair_summary_confidence_sample_*.json"))
	o := &outcome{out: filepath.Join(work, "out"), tool: "protenix"}
	samples, err := o.samplesOf("pair")
	if err != nil || len(samples) != len(all) || k >= len(samples) {
		t.Fatalf("samples %v, %v", samples, err)
	}
	return samples[k].scores
}

// TestRankAcrossSeeds ranks the samples of several seed folders by ranking_score, the
// tools ranking within a seed only.
func TestRankAcrossSeeds(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	write := func(seed, rank, score string) {
		dir := filepath.Join(out, "x", "seed_"+seed, "predictions")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, text := range map[string]string{
			"x_summary_confidence_sample_" + rank + ".json": `{"plddt": [80.0], "ptm": 0.5, "iptm": NaN, "ranking_score": ` + score + `}`,
			"x_sample_" + rank + ".cif":                     "data_x\n",
		} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	write("101", "0", "0.7")
	write("101", "1", "0.2")
	write("7", "0", "0.9")
	write("7", "1", "0.5")
	samples, err := (&outcome{out: out, tool: "protenix"}).samplesOf("x")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range samples {
		rel, _ := filepath.Rel(out, s.structure)
		got = append(got, rel)
		if s.scores.IPTM != nil || s.scores.PLDDT == nil || *s.scores.PLDDT != 80 {
			t.Errorf("scores %+v: want plddt from a list of one, iptm NaN as missing", s.scores)
		}
	}
	want := []string{"x/seed_7/predictions/x_sample_0.cif", "x/seed_101/predictions/x_sample_0.cif",
		"x/seed_7/predictions/x_sample_1.cif", "x/seed_101/predictions/x_sample_1.cif"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
}

func TestFailedTargets(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		targets string
		rows    map[string]string // target → what its error says; "" for ok
		jobErr  string
	}{
		{"a data error and out of memory beside a good target",
			`{"name": "good", "content": ">A|protein|empty\nMKTAYIAK"}, {"name": "fail1", "content": ">A|protein|empty\nMKTAYIAK"},
			 {"name": "oom1", "content": ">A|protein|empty\nMKTAYIAK"}`,
			map[string]string{"good": "", "fail1": "protenix failed on it: Could not parse ligand SMILES",
				"oom1": "protenix failed on it: CUDA out of memory. Tried to allocate 20.00 GiB (fewer residues"}, ""},
		{"a crash after a good target",
			`{"name": "a", "content": ">A|protein|empty\nMKTAYIAK"}, {"name": "crash", "content": ">A|protein|empty\nMKTAYIAK"},
			 {"name": "z", "content": ">A|protein|empty\nMKTAYIAK"}`,
			map[string]string{"a": "", "crash": "protenix exited before it finished this target (exit code 1); the run log has its output", "z": "protenix exited before"}, ""},
		{"every target fails",
			`{"name": "fail1", "content": ">A|protein|empty\nMKTAYIAK"}, {"name": "oom2", "content": ">A|protein|empty\nMKTAYIAK"}`,
			nil, "protenix predicted none of the 2 target(s): fail1: protenix failed on it: Could not parse"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			out, err := h.run(context.Background(), enginerun.PredictJob(t, `{"model": "protenix-v2", "targets": [`+tt.targets+`]}`))
			if tt.jobErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.jobErr) {
					t.Fatalf("job error %v, want %q\n%s", err, tt.jobErr, h.Log.String())
				}
				if strings.Contains(err.Error(), h.workDir) {
					t.Errorf("the error %q names the run's folder", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("run: %v\n%s", err, h.Log.String())
			}
			for _, row := range out.Rows {
				want := tt.rows[row.ID]
				switch {
				case want == "" && row.Status != job.RowOK:
					t.Errorf("row %s: %+v, want ok", row.ID, row)
				case want != "" && (row.Status != job.RowFailed || !strings.HasPrefix(row.Error, want)):
					t.Errorf("row %s: %q, want failed with %q", row.ID, row.Error, want)
				}
				if row.RuntimeS < 0 || want == "" && row.RuntimeS <= 0 {
					t.Errorf("row %s: runtime %v", row.ID, row.RuntimeS)
				}
			}
		})
	}
}

func TestAbAgCheckpoint(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	e := NewOpenDDEAbAg(Config{OpenDDERoot: root})
	tools := engine.Tools{"opendde": standIns["opendde"]}
	err := e.Check(context.Background(), tools)
	if public := engine.PublicReason(err); err == nil || !strings.Contains(public, "opendde_abag.pt") || strings.Contains(public, root) || !strings.Contains(err.Error(), root) {
		t.Errorf("Check without the checkpoint = %v (public: %q); want it named, with the server's path only in the detail", err, public)
	}
	if err := NewOpenDDE(Config{OpenDDERoot: root}).Check(context.Background(), tools); err != nil {
		t.Errorf("opendde needs no antibody-antigen checkpoint: %v", err)
	}
	if err := os.MkdirAll(filepath.Join(root, "checkpoint"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "checkpoint", "opendde_abag.pt"), []byte("w"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := e.Check(context.Background(), tools); err != nil {
		t.Errorf("Check with the checkpoint: %v", err)
	}
	if e.Name() != "opendde" || !reflect.DeepEqual(e.Models(), []string{"opendde-abag"}) {
		t.Errorf("engine %s serves %v", e.Name(), e.Models())
	}
}

func TestDefaultOpenDDERoot(t *testing.T) {
	t.Setenv("OPENDDE_ROOT_DIR", "")
	t.Setenv("XDG_CACHE_HOME", "/var/cache/x")
	if got := defaultOpenDDERoot(); got != "/var/cache/x/opendde" {
		t.Errorf("root %q under XDG_CACHE_HOME", got)
	}
	t.Setenv("OPENDDE_ROOT_DIR", "/data/opendde")
	if got := defaultOpenDDERoot(); got != "/data/opendde" {
		t.Errorf("root %q with OPENDDE_ROOT_DIR", got)
	}
}
