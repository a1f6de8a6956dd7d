package boltzgen

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chaperone-bio/chaperone/catalog"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/boltzgen/boltzgentest"
	"github.com/chaperone-bio/chaperone/internal/enginerun"
	"github.com/chaperone-bio/chaperone/internal/execfile"
	"github.com/chaperone-bio/chaperone/job"
)

// standIn is the path of the stand-in boltzgen, built once for the package's tests.
var standIn string

func TestMain(m *testing.M) {
	code := enginerun.Main(m, boltzgentest.Build, &standIn)
	removeSharedMols()
	os.Exit(code)
}

// newEngine is the engine of a worker with a GPU, as the stand-in pretends to use one.
func newEngine() *Engine { return New(Config{Binders: catalog.Default().Binders(), GPU: true}) }

func newJob(t *testing.T, req string) *job.Job { return enginerun.DesignJob(t, req) }

func run(t *testing.T, j *job.Job) *enginerun.Result { return runWith(t, j, standIn) }

func runWith(t *testing.T, j *job.Job, tool string) *enginerun.Result {
	return enginerun.Run(t, newEngine(), j, engine.Tools{"boltzgen": tool})
}

func mustRun(t *testing.T, j *job.Job) *enginerun.Result {
	return enginerun.MustRun(t, newEngine(), j, engine.Tools{"boltzgen": standIn})
}

// targetCIF is a target structure with protein chain A (residues 1-30), with the
// _entity_poly_seq loop BoltzGen needs.
var targetCIF = func() string {
	var b strings.Builder
	b.WriteString("data_target\nloop_\n_entity_poly_seq.entity_id\n_entity_poly_seq.num\n_entity_poly_seq.mon_id\n")
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&b, "1 %d GLY\n", i)
	}
	b.WriteString("loop_\n_atom_site.group_PDB\n_atom_site.label_atom_id\n_atom_site.label_comp_id\n" +
		"_atom_site.label_asym_id\n_atom_site.label_seq_id\n_atom_site.auth_seq_id\n_atom_site.auth_asym_id\n")
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&b, "ATOM CA GLY A %d %d A\n", i, i)
	}
	return b.String()
}()

func jsonText(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestDesignsComeFromTheFinalRankedSetRankOneFirst(t *testing.T) {
	t.Parallel()
	spec := "entities:\n  - protein: {id: B, sequence: 20..30}\n  - file:\n      path: target.cif\n      include:\n        - chain: {id: A}\n"
	j := newJob(t, `{"protocol": "protein-anything", "spec": `+jsonText(spec)+`, "structure": `+jsonText(targetCIF)+
		`, "params": {"num_designs": 6, "budget": 3}}`)
	r := mustRun(t, j)
	if len(r.Out.Designs) != 3 {
		t.Fatalf("%d designs, want the budget of 3: %+v", len(r.Out.Designs), r.Out.Designs)
	}
	var finalRanks []float64
	for i, d := range r.Out.Designs {
		if d.Rank == nil || *d.Rank != i+1 {
			t.Errorf("design %d has rank %v, want %d", i, d.Rank, i+1)
		}
		if len(d.Sequence) != 20 || strings.Trim(d.Sequence, "ACDEFGHIKLMNPQRSTVWY") != "" {
			t.Errorf("design %s has the sequence %q; want the designed chain's 20 residues", d.ID, d.Sequence)
		}
		if want := fmt.Sprintf("designs/rank%02d_%s.cif", i+1, d.ID); d.File != want {
			t.Errorf("design file %q, want %q", d.File, want)
		}
		for _, k := range []string{"design_to_target_iptm", "design_ptm", "min_design_to_target_pae", "quality_score", "pass_filters"} {
			if _, ok := d.Metrics[k]; !ok {
				t.Errorf("design %s lacks the metric %s: %v", d.ID, k, d.Metrics)
			}
		}
		if d.Metrics["liability_score"] != nil || d.Metrics["pass_filters"] != true {
			t.Errorf("an empty cell is null and True is true: %v", d.Metrics)
		}
		if _, ok := d.Metrics["file_name"]; ok {
			t.Errorf("metrics hold the file name: %v", d.Metrics)
		}
		finalRanks = append(finalRanks, d.Metrics["final_rank"].(float64))
	}
	// The stand-in's diverse set passes over the second best: ranks by position, not by
	// BoltzGen's final_rank among all designs.
	if !slices.Equal(finalRanks, []float64{1, 3, 4}) {
		t.Errorf("final_rank of the designs %v, want [1 3 4]", finalRanks)
	}
	var paths []string
	for _, f := range r.Out.Files {
		paths = append(paths, f.Path)
		b, err := os.ReadFile(f.Local)
		if err != nil || len(b) == 0 {
			t.Errorf("artifact %s: %v", f.Path, err)
		}
	}
	if !slices.Contains(paths, "final_designs_metrics.csv") || !slices.Contains(paths, "all_designs_metrics.csv") {
		t.Errorf("artifacts %v lack the metrics tables", paths)
	}
	structure, err := os.ReadFile(filepath.Join(r.WorkDir, "inputs", "target.cif"))
	if err != nil || string(structure) != targetCIF {
		t.Errorf("the structure beside the spec: %v", err)
	}
}

func TestCommandLine(t *testing.T) {
	t.Parallel()
	spec := "entities:\n  - protein: {id: B, sequence: 12..20}\n  - ligand: {id: L, ccd: SAH}\n"
	tests := []struct {
		name, req, want string
	}{
		{"protocol, numbers and kernels", `{"protocol": "peptide-anything", "spec": ` + jsonText(spec) + `, "params": {"num_designs": 4, "budget": 2}}`,
			"--protocol peptide-anything --output OUT --num_designs 4 --budget 2 --use_kernels auto"},
		{"fast off turns the kernels off", `{"protocol": "protein-small_molecule", "spec": ` + jsonText(spec) + `, "params": {"num_designs": 2, "fast": false}}`,
			"--protocol protein-small_molecule --output OUT --num_designs 2 --budget 2 --use_kernels false"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			recorder := filepath.Join(dir, "boltzgen")
			script := fmt.Sprintf("#!/bin/sh\necho \"$*\" >> %s/argv\nexec %s \"$@\"\n", dir, standIn)
			if err := execfile.Write(recorder, script); err != nil {
				t.Fatal(err)
			}
			r := runWith(t, newJob(t, tt.req), recorder)
			if r.Err != nil {
				t.Fatalf("run: %v\n%s", r.Err, r.Log.String())
			}
			b, err := os.ReadFile(filepath.Join(dir, "argv"))
			if err != nil {
				t.Fatal(err)
			}
			want := "run " + filepath.Join(r.WorkDir, "inputs", "spec.yaml") + " " + strings.ReplaceAll(tt.want, "OUT", filepath.Join(r.WorkDir, "out"))
			if got := strings.TrimSpace(string(b)); got != want {
				t.Errorf("command line\n%s\nwant\n%s", got, want)
			}
		})
	}
}

func TestAJobWithoutItsDesignsFailsWithBoltzGensMessage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		behaviour, want string
	}{
		{boltzgentest.Crash, "boltzgen failed: RuntimeError: CUDA error: an illegal memory access was encountered"},
		{boltzgentest.OOM, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"},
		{boltzgentest.NoFinal, "boltzgen wrote no final designs: final_designs_metrics_2.csv is missing"},
	}
	for _, tt := range tests {
		t.Run(tt.behaviour, func(t *testing.T) {
			t.Parallel()
			spec := boltzgentest.Marker + tt.behaviour + "\nentities:\n  - protein: {id: B, sequence: 12..20}\n  - ligand: {id: L, ccd: SAH}\n"
			r := run(t, newJob(t, `{"protocol": "protein-anything", "spec": `+jsonText(spec)+`, "params": {"num_designs": 3, "budget": 2}}`))
			if r.Err == nil || !strings.Contains(r.Err.Error(), tt.want) {
				t.Errorf("run = %v; want an error containing %q\n%s", r.Err, tt.want, r.Log.String())
			}
		})
	}
}

func TestTheSequencesFormDesignsTheProtocolsBinder(t *testing.T) {
	t.Parallel()
	tests := []struct {
		protocol, target, binder string
	}{
		{"protein-anything", "sequences:\n  - protein: {id: [A, B], sequence: MKTAYIAK}\n", `id: "C"` + "\n      sequence: 80..140"},
		{"peptide-anything", "sequences:\n  - protein: {id: A, sequence: MKTAYIAK}\n  - dna: {id: D, sequence: ACGT}\n", `id: "B"` + "\n      sequence: 12..20"},
		{"protein-small_molecule", "sequences:\n  - ligand: {id: B, ccd: SAH}\n  - ligand: {id: L, smiles: 'CC(=O)O'}\n", `id: "C"` + "\n      sequence: 80..140"},
	}
	for _, tt := range tests {
		t.Run(tt.protocol, func(t *testing.T) {
			t.Parallel()
			r := mustRun(t, newJob(t, `{"protocol": "`+tt.protocol+`", "spec": `+jsonText(tt.target)+`, "params": {"num_designs": 2}}`))
			b, err := os.ReadFile(filepath.Join(r.WorkDir, "inputs", "spec.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), "  - protein:\n      "+tt.binder+"\n") {
				t.Errorf("spec written for BoltzGen:\n%s\nlacks the binder %s", b, tt.binder)
			}
			if len(r.Out.Designs) != 2 {
				t.Errorf("%d designs, want 2", len(r.Out.Designs))
			}
		})
	}
}

func TestProgressFollowsThePipelineSteps(t *testing.T) {
	t.Parallel()
	spec := "entities:\n  - protein: {id: B, sequence: 12..20}\n  - ligand: {id: L, ccd: SAH}\n"
	r := mustRun(t, newJob(t, `{"protocol": "protein-anything", "spec": `+jsonText(spec)+`, "params": {"num_designs": 4, "budget": 2}}`))
	var stages []string
	last := -1.0
	for _, p := range r.Reports() {
		if len(stages) == 0 || stages[len(stages)-1] != p.Stage {
			stages = append(stages, p.Stage)
		}
		if *p.Fraction < last {
			t.Errorf("progress went back from %v to %v", last, *p.Fraction)
		}
		last = *p.Fraction
	}
	want := []string{job.StageStarting, job.StageDesigning, job.StageFolding, job.StageFiltering, job.StageWriting}
	if !slices.Equal(stages, want) {
		t.Errorf("stages %v, want %v", stages, want)
	}
	if done := r.Reports()[len(r.Reports())-1].Done; done != 4 {
		t.Errorf("done %d, want the 4 designs", done)
	}
	if last != 1 {
		t.Errorf("progress ends at %v, want 1", last)
	}
}

// TestAWorkerWithoutAGPUOffersNothing: BoltzGen cannot run on the CPU, so the engine of a
// worker without a GPU fails its check with that reason, even with the tool installed.
func TestAWorkerWithoutAGPUOffersNothing(t *testing.T) {
	t.Parallel()
	err := New(Config{Binders: catalog.Default().Binders()}).Check(context.Background(), engine.Tools{"boltzgen": standIn})
	if got := engine.PublicReason(err); got != NoGPU {
		t.Errorf("Check without a GPU = %v (public %q), want %q", err, got, NoGPU)
	}
	if err := newEngine().Check(context.Background(), engine.Tools{"boltzgen": standIn}); err != nil {
		t.Errorf("Check with a GPU: %v", err)
	}
}

// TestTheSequencesFormKeepsWhatBoltzGenReads: a chain's cyclic flag, a single-sequence
// alignment and a ligand of several CCD codes reach BoltzGen's spec.
func TestTheSequencesFormKeepsWhatBoltzGenReads(t *testing.T) {
	t.Parallel()
	spec := "sequences:\n  - protein: {id: A, sequence: MKTAYIAKQR, cyclic: true, msa: empty}\n  - ligand: {id: L, ccd: [SAH, ATP]}\n"
	r := mustRun(t, newJob(t, `{"protocol": "protein-anything", "spec": `+jsonText(spec)+`, "params": {"num_designs": 2}}`))
	b, err := os.ReadFile(filepath.Join(r.WorkDir, "inputs", "spec.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"      sequence: \"MKTAYIAKQR\"\n      cyclic: true\n      msa: empty\n", `ccd: ["SAH", "ATP"]`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("spec written for BoltzGen:\n%s\nlacks %q", b, want)
		}
	}
}

// TestAStructureIsNamedForItsContent: BoltzGen picks its reader by an exact .pdb suffix, so
// PDB text sent under another name is written as .pdb, and the spec names that file.
func TestAStructureIsNamedForItsContent(t *testing.T) {
	t.Parallel()
	pdb := "ATOM      1  CA  GLY A   1       1.000   1.000   1.000  1.00 20.00           C\nEND\n"
	tests := []struct{ name, structure, want string }{
		{"target.cif", pdb, "target.pdb"},
		{"Target.PDB", pdb, "Target.pdb"},
		{"target.pdb", targetCIF, "target.cif"},
		{"target.mmcif", targetCIF, "target.mmcif"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			spec := "# keep me\nentities:\n  - protein: {id: B, sequence: 12..20}\n  - file:\n      path: '" + tt.name + "'\n      include:\n        - chain: {id: A}\n"
			r := mustRun(t, newJob(t, `{"protocol": "protein-anything", "spec": `+jsonText(spec)+`, "structure": `+jsonText(tt.structure)+`, "params": {"num_designs": 2}}`))
			b, err := os.ReadFile(filepath.Join(r.WorkDir, "inputs", "spec.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			if want := strings.ReplaceAll(spec, tt.name, tt.want); string(b) != want {
				t.Errorf("spec written\n%s\nwant\n%s", b, want)
			}
			if got, err := os.ReadFile(filepath.Join(r.WorkDir, "inputs", tt.want)); err != nil || string(got) != tt.structure {
				t.Errorf("the structure as %s: %v", tt.want, err)
			}
		})
	}
}

// TestDesignsThatFailTheFiltersAreKeptAndSaySo: BoltzGen keeps its budget of designs when
// none passes its filters; the job succeeds with them, each with pass_filters false.
func TestDesignsThatFailTheFiltersAreKeptAndSaySo(t *testing.T) {
	t.Parallel()
	spec := boltzgentest.Marker + boltzgentest.Filtered + "\nentities:\n  - protein: {id: B, sequence: 12..20}\n  - ligand: {id: L, ccd: SAH}\n"
	r := mustRun(t, newJob(t, `{"protocol": "protein-anything", "spec": `+jsonText(spec)+`, "params": {"num_designs": 3, "budget": 2}}`))
	if len(r.Out.Designs) != 2 {
		t.Fatalf("%d designs, want the budget of 2", len(r.Out.Designs))
	}
	for _, d := range r.Out.Designs {
		if d.Metrics["pass_filters"] != false {
			t.Errorf("design %s: pass_filters %v, want false", d.ID, d.Metrics["pass_filters"])
		}
	}
	if !strings.Contains(r.Log.String(), "0 of the 2 final designs pass BoltzGen's filters") {
		t.Errorf("the log does not say how many designs pass the filters:\n%s", r.Log.String())
	}
}
