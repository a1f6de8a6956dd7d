package rfd3

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/chaperone-bio/chaperone/bio"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/rfd3/rfd3test"
	"github.com/chaperone-bio/chaperone/internal/enginerun"
	"github.com/chaperone-bio/chaperone/internal/execfile"
	"github.com/chaperone-bio/chaperone/job"
)

// standIn is the path of the stand-in rfd3, built once for the package's tests.
var standIn string

func TestMain(m *testing.M) { os.Exit(enginerun.Main(m, rfd3test.Build, &standIn)) }

// targetPDB is a target with protein chain A (residues 1-40) and DNA chains B and C
// (1-10); behaviour, if set, is the stand-in's behaviour (rfd3test).
func targetPDB(behaviour string) string {
	var b strings.Builder
	if behaviour != "" {
		fmt.Fprintf(&b, "REMARK 999 %s%s\n", rfd3test.Marker, behaviour)
	}
	atom := 0
	add := func(chain, res string, n int) {
		atom++
		fmt.Fprintf(&b, "ATOM  %5d  CA  %3s %s%4d    %8.3f%8.3f%8.3f  1.00 20.00           C\n", atom, res, chain, n, float64(n), 0.0, 0.0)
	}
	for i := 1; i <= 40; i++ {
		add("A", "LYS", i)
	}
	for _, chain := range []string{"B", "C"} {
		for i := 1; i <= 10; i++ {
			add(chain, " DG", i)
		}
	}
	b.WriteString("END\n")
	return b.String()
}

// newJob is the job of an rfd3 request.
func newJob(t *testing.T, protocol, structure, contig, params string) *job.Job {
	t.Helper()
	s, _ := json.Marshal(structure)
	return enginerun.DesignJob(t, fmt.Sprintf(`{"protocol": %q, "structure": %s, "contig": %q, "params": %s}`, protocol, s, contig, params))
}

// run runs j with the rfd3 command at tool.
func run(t *testing.T, j *job.Job, tool string) *enginerun.Result {
	return enginerun.Run(t, New(), j, engine.Tools{"rfd3": tool})
}

func mustRun(t *testing.T, j *job.Job) *enginerun.Result {
	return enginerun.MustRun(t, New(), j, engine.Tools{"rfd3": standIn})
}

func TestBatchesMakeExactlyNumDesigns(t *testing.T) {
	t.Parallel()
	for n, want := range map[int][2]int{1: {1, 1}, 4: {4, 1}, 8: {8, 1}, 10: {5, 2}, 9: {3, 3}, 16: {8, 2}, 7: {7, 1}, 11: {1, 11}, 100: {5, 20}} {
		size, count := batches(n)
		if [2]int{size, count} != want || size*count != n {
			t.Errorf("batches(%d) = %d × %d, want %d × %d", n, size, count, want[0], want[1])
		}
	}
}

func TestCommandLineAndSpec(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	recorder := filepath.Join(dir, "rfd3")
	script := fmt.Sprintf("#!/bin/sh\necho \"$*\" >> %s/argv\nexec %s \"$@\"\n", dir, standIn)
	if err := execfile.Write(recorder, script); err != nil {
		t.Fatal(err)
	}
	j := newJob(t, "rfd3-binder", targetPDB(""), " 30-50 , /0 , A5-A20 ", `{"num_designs": 10, "num_timesteps": 50, "seed": 7}`)
	r := run(t, j, recorder)
	if r.Err != nil {
		t.Fatalf("run: %v\n%s", r.Err, r.Log.String())
	}
	argv, err := os.ReadFile(filepath.Join(dir, "argv"))
	if err != nil {
		t.Fatal(err)
	}
	spec := filepath.Join(r.WorkDir, "spec.json")
	want := "design inputs=spec.json out_dir=out diffusion_batch_size=5 n_batches=2 inference_sampler.num_timesteps=50 seed=7 skip_existing=False"
	if got := strings.TrimSpace(string(argv)); got != want {
		t.Errorf("command line\n%s\nwant\n%s", got, want)
	}
	b, err := os.ReadFile(spec)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	wantSpec := map[string]map[string]any{"design": {"input": filepath.Join(r.WorkDir, "target.pdb"), "contig": "30-50,/0,A5-20", "is_non_loopy": true}}
	if !reflect.DeepEqual(got, wantSpec) {
		t.Errorf("spec %v, want %v", got, wantSpec)
	}
	if len(r.Out.Designs) != 10 {
		t.Errorf("%d designs, want 10", len(r.Out.Designs))
	}
}

func TestDesignsAreUnrankedStructuresWithTheirSequenceAndSelfChecks(t *testing.T) {
	t.Parallel()
	j := newJob(t, "rfd3-scaffold", targetPDB(""), "A1-5,8-12,A30-33", `{"num_designs": 3}`)
	r := mustRun(t, j)
	if len(r.Out.Designs) != 3 {
		t.Fatalf("%d designs, want 3", len(r.Out.Designs))
	}
	files := map[string]string{}
	for _, f := range r.Out.Files {
		files[f.Path] = f.Local
	}
	for i, d := range r.Out.Designs {
		if d.Rank != nil {
			t.Errorf("design %s has rank %d; rfd3 designs are unranked", d.ID, *d.Rank)
		}
		if want := fmt.Sprintf("designs/design%d.cif", i+1); d.File != want {
			t.Errorf("file %q, want %q", d.File, want)
		}
		b, err := os.ReadFile(files[d.File])
		if err != nil {
			t.Fatalf("design file: %v", err)
		}
		s, err := bio.ReadStructure(string(b))
		if err != nil {
			t.Fatalf("the design's .cif does not read as mmCIF: %v", err)
		}
		a, _ := s.Chain("A")
		if d.Sequence != a.Sequence() || !strings.HasPrefix(d.Sequence, "KKKKK") || !strings.HasSuffix(d.Sequence, "KKKK") {
			t.Errorf("sequence %q, want chain A's %q with the kept K residues around the designed ones", d.Sequence, a.Sequence())
		}
		if n := len(d.Sequence); n < 5+8+4 || n > 5+12+4 {
			t.Errorf("sequence of %d residues, outside the contig's 17..21", n)
		}
		for _, k := range []string{"max_ca_deviation", "n_chainbreaks", "radius_of_gyration", "num_residues"} {
			if _, ok := d.Metrics[k]; !ok {
				t.Errorf("metrics %v lack %s", d.Metrics, k)
			}
		}
		for k := range d.Metrics {
			if strings.Contains(k, "plddt") || strings.Contains(k, "confidence") {
				t.Errorf("metrics hold %s, a confidence", k)
			}
		}
		if _, ok := files[fmt.Sprintf("designs/design%d.json", i+1)]; !ok {
			t.Errorf("design %s lacks its JSON artifact", d.ID)
		}
	}
}

func TestTheSameSeedGivesTheSameDesigns(t *testing.T) {
	t.Parallel()
	designs := func(seed int) []job.Design {
		r := mustRun(t, newJob(t, "rfd3-binder", targetPDB(""), "20-40,/0,A1-10", fmt.Sprintf(`{"num_designs": 2, "seed": %d}`, seed)))
		return r.Out.Designs
	}
	a, b, c := designs(3), designs(3), designs(4)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("seed 3 twice gave\n%+v\nand\n%+v", a, b)
	}
	if reflect.DeepEqual(a, c) {
		t.Errorf("seeds 3 and 4 gave the same designs %+v", a)
	}
}

func TestARunWithoutItsDesignsFailsWithRFdiffusion3sMessage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		behaviour, want string
	}{
		{rfd3test.Crash, "rfd3 wrote 0 of the 10 designs: RuntimeError: CUDA error: an illegal memory access was encountered"},
		{rfd3test.OOM, "rfd3 wrote 5 of the 10 designs: torch.OutOfMemoryError: CUDA out of memory"},
		{rfd3test.Invalid, "rfd3 wrote 0 of the 10 designs: foundry.utils.components.ComponentValidationError: Residue A999 not found"},
	}
	for _, tt := range tests {
		t.Run(tt.behaviour, func(t *testing.T) {
			t.Parallel()
			r := run(t, newJob(t, "rfd3-na-binder", targetPDB(tt.behaviour), "B1-10,/0,C1-10,/0,20", `{"num_designs": 10}`), standIn)
			if r.Err == nil || !strings.Contains(r.Err.Error(), tt.want) {
				t.Errorf("run = %v; want an error containing %q\n%s", r.Err, tt.want, r.Log.String())
			}
		})
	}
}

// TestTheStandInTakesOnlyHydrasKeys pins the fixture to RFdiffusion3's command line.
func TestTheStandInTakesOnlyHydrasKeys(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"design", "inputs=x.json", "out_dir=o", "num_designs=4"}, "Could not override 'num_designs'.\nTo append to your config use +num_designs=4"},
		{[]string{"design", "inputs=x.json", "--out_dir", "o"}, "OverrideParseException: LexerNoViableAltException: --out_dir"},
		{[]string{"design", "inputs=/w/a,b/spec.json", "out_dir=o"}, "Ambiguous value for argument"},
		{[]string{"design", "inputs=/w/a=b/spec.json", "out_dir=o"}, "mismatched input '=' expecting <EOF>"},
		{[]string{"design", "inputs=x.json"}, "MissingMandatoryValue: Missing mandatory value: out_dir"},
	}
	for _, tt := range tests {
		out, err := exec.Command(standIn, tt.args...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), tt.want) {
			t.Errorf("rfd3 %v: %v\n%s\nwant %q", tt.args, err, out, tt.want)
		}
	}
}

func TestProgressMovesWithTheDesignsWritten(t *testing.T) {
	t.Parallel()
	var got []float64
	m := newMonitor(func(p job.Progress) { got = append(got, *p.Fraction) }, 4)
	for _, line := range []string{
		"01:49:42 INFO rfd3.engine: [rank: 0] Finished inference batch in 22.84 seconds.",
		"01:49:42 INFO rfd3.engine: [rank: 0] Outputs for spec_design_0_model_0 written to /w/out/spec_design_0_model_0.",
		"01:49:42 INFO rfd3.engine: [rank: 0] Outputs for spec_design_0_model_1 written to /w/out/spec_design_0_model_1.",
		"torch.OutOfMemoryError: CUDA out of memory.",
	} {
		m.line(line)
	}
	if want := []float64{0, 0.25, 0.5}; !reflect.DeepEqual(got, want) {
		t.Errorf("fractions %v, want %v", got, want)
	}
	if m.failure() != "torch.OutOfMemoryError: CUDA out of memory." {
		t.Errorf("failure %q", m.failure())
	}
}

// TestAWorkFolderWithCommasEqualsAndSpacesRuns: the stand-in reads overrides as Hydra's
// grammar does, which a path with "," or "=" breaks.
func TestAWorkFolderWithCommasEqualsAndSpacesRuns(t *testing.T) {
	t.Parallel()
	r := runIn(t, filepath.Join(t.TempDir(), "job a,b=c d"), newJob(t, "rfd3-binder", targetPDB(""), "20-30,/0,A1-12", `{"num_designs": 2}`), standIn)
	if r.Err != nil || len(r.Out.Designs) != 2 {
		t.Fatalf("run: %v\n%s", r.Err, r.Log.String())
	}
}

func TestDesignedChainsMayBeEmptyOnlyWhenEverySegmentMayBeLeftOut(t *testing.T) {
	t.Parallel()
	tests := []struct {
		contig string
		want   []designedChain
	}{
		{"20-40,/0,A1-10", []designedChain{{id: "A"}}},
		{"0-40,/0,A1-10", []designedChain{{id: "A", mayBeEmpty: true}}},
		{"0-10,A1-10,0-5", []designedChain{{id: "A"}}},
		{"B1-10,/0,0-5,0-5,/0,12", []designedChain{{id: "B", mayBeEmpty: true}, {id: "C"}}},
		{"A1-10,/0,B1-5", nil},
	}
	for _, tt := range tests {
		c, err := bio.ParseContig(tt.contig)
		if err != nil {
			t.Fatal(err)
		}
		if got := designedChains(c); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("designedChains(%s) = %+v, want %+v", tt.contig, got, tt.want)
		}
	}
}

// runIn runs j with the rfd3 command at tool, as enginerun.Run does but in work.
func runIn(t *testing.T, work string, j *job.Job, tool string) *enginerun.Result {
	t.Helper()
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	r := &enginerun.Result{WorkDir: work}
	r.Out, r.Err = New().Run(context.Background(), &engine.Run{
		Job: j, WorkDir: work, Tools: engine.Tools{"rfd3": tool}, Log: &r.Log, Report: r.Report, Exec: r.Exec(work),
	})
	return r
}

// TestUpstreamTheStandInTakesWhatRfd3Takes holds the stand-in to rfd3's command line: it
// takes every key of rfd3's composed config, and refuses what rfd3's Hydra refuses with
// rfd3's words.
func TestUpstreamTheStandInTakesWhatRfd3Takes(t *testing.T) {
	env, home := rfd3test.Upstream(t)
	var keys map[string]string
	rfd3test.Script(t, env, &keys, "keys")
	if len(keys) < 20 || keys["inputs"] != "mandatory" || keys["inference_sampler.num_timesteps"] != "int" {
		t.Fatalf("rfd3's config keys %v", keys)
	}
	missing := filepath.Join(home, "missing.json")
	for key := range keys {
		if key == "specification" {
			continue
		}
		out, _ := exec.Command(standIn, "design", "inputs="+missing, "out_dir=o", key+"=1").CombinedOutput()
		if !strings.Contains(string(out), "No such file or directory") {
			t.Errorf("the stand-in refuses rfd3's key %s:\n%s", key, out)
		}
	}

	help, err := exec.Command(env.Bin("rfd3"), "design", "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("rfd3 design --help: %v\n%s", err, help)
	}
	standInHelp, err := exec.Command(standIn, "design", "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("stand-in --help: %v\n%s", err, standInHelp)
	}
	for _, want := range []string{"Usage: rfd3 [OPTIONS]", "Run design using hydra config overrides and input files."} {
		if !strings.Contains(string(help), want) || !strings.Contains(string(standInHelp), want) {
			t.Errorf("%q: rfd3's help\n%s\nthe stand-in's\n%s", want, help, standInHelp)
		}
	}

	// Each is refused while Hydra composes the config, before rfd3 imports its model.
	for _, args := range [][]string{
		{"design", "inputs=x.json", "out_dir=o", "num_designs=4"},
		{"design", "inputs=x.json", "--out_dir", "o"},
		{"design", "inputs=/w/a,b/spec.json", "out_dir=o"},
		{"design", "inputs=/w/a=b/spec.json", "out_dir=o"},
	} {
		real, err := exec.Command(env.Bin("rfd3"), args...).CombinedOutput()
		if err == nil {
			t.Errorf("rfd3 %v ran", args)
			continue
		}
		stand, _ := exec.Command(standIn, args...).CombinedOutput()
		want := hydraError(string(real))
		if want == "" || !strings.Contains(string(stand), want) {
			t.Errorf("rfd3 %v says %q; the stand-in says\n%s", args, want, stand)
		}
	}
}

// hydraError is the line of rfd3's output that names Hydra's exception.
func hydraError(out string) string {
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "ConfigCompositionException: ") || strings.HasPrefix(line, "OverrideParseException: ") {
			return strings.TrimSpace(line)
		}
	}
	return ""
}
