package protenix

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chaperone-bio/chaperone/align"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/internal/enginerun"
	"github.com/chaperone-bio/chaperone/job"
)

const (
	chainA = "MKTAYIAKQRQISFVKSHFSRQ"
	chainB = "GSHMTEYKLVVVGAGGVGKS"
)

// searchedBy is what fakeSearch says of where it searched, in the run log.
var searchedBy = "searched before the run (server https://msa.example.org; mode env; pairing pairgreedy)"

// TestRunAligned runs each tool's engine on the alignments the alignment stage hands it,
// with the stand-in, which refuses to search and counts the rows the tools' featurizer
// would read (N_msa): fakeSearch's unpaired A3M has 4 distinct rows, and its paired ones
// 3 rows after the chains, which only the species pairedForTool writes pair.
func TestRunAligned(t *testing.T) {
	t.Parallel()
	sent := "      msa: |\n        >query\n        " + chainB + "\n        >sent1\n        GSHMTEYRLVVVGAGGVGKS\n"
	tests := []struct {
		name, input string
		alignments  []align.Result
		nMSA        string // the N_msa the stand-in logs
		note        string // where the log says the alignments come from
	}{
		{"monomer", ">A|protein\n" + chainA + "\n", []align.Result{fakeSearch(chainA)}, "N_msa 4",
			"chain A: " + searchedBy + ", unpaired (one distinct chain)"},
		{"homodimer", "sequences:\n  - protein:\n      id: [A, B]\n      sequence: " + chainA + "\n",
			[]align.Result{fakeSearch(chainA, chainA)}, "N_msa 4", "chains A, B: " + searchedBy + ", unpaired (one distinct chain)"},
		// 1 + 3 paired rows above 4 unpaired; without species the paired rows would be 1.
		{"heteromer", ">A|protein\n" + chainA + "\n>B|protein\n" + chainB + "\n", []align.Result{fakeSearch(chainA, chainB)},
			"N_msa 8", "chains A, B: " + searchedBy + ", paired across its chains"},
		{"one chain searched, one sent, one empty", "sequences:\n  - protein:\n      id: A\n      sequence: " + chainA + "\n" +
			"  - protein:\n      id: B\n      sequence: " + chainB + "\n" + sent +
			"  - protein:\n      id: C\n      sequence: MEEKLRR\n      msa: empty\n",
			[]align.Result{fakeSearch(chainA)}, "N_msa 5",
			"chain A: " + searchedBy + ", unpaired (one distinct chain); chain B: as sent with the input; chain C: single-sequence (msa: empty)"},
	}
	for _, e := range []*Engine{New(Config{}), NewOpenDDE(Config{})} {
		for _, tt := range tests {
			t.Run(e.Models()[0]+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				j := enginerun.PredictJob(t, `{"model": "`+e.Models()[0]+`", "targets": [{"name": "x", "content": `+quote(tt.input)+`}]}`)
				r := enginerun.RunAligned(t, e, j, engine.Tools{e.Name(): standIns[e.Name()]}, tt.alignments)
				log := r.Log.String()
				if r.Err != nil {
					t.Fatalf("run: %v\n%s", r.Err, log)
				}
				if row := r.Out.Rows[0]; row.Status != job.RowOK || !row.MSA {
					t.Errorf("row %+v: want ok, folded with alignments", row)
				}
				if !strings.Contains(log, " "+tt.nMSA+"\n") {
					t.Errorf("the tool did not read the alignments as planned (want %s):\n%s", tt.nMSA, log)
				}
				if want := "[chaperone] x: alignments: " + tt.note + "\n"; !strings.Contains(log, want) {
					t.Errorf("the log lacks %q:\n%s", want, log)
				}
				if strings.Contains(log, "--msa_server_mode") || !strings.Contains(log, "--use_msa true") {
					t.Errorf("the tool was not run on its alignment files alone:\n%s", log)
				}
			})
		}
	}
}

// TestAlignmentsMissing fails a job whose searched alignments did not come with it,
// before the tool runs (it would search them itself), in words without the run's paths.
func TestAlignmentsMissing(t *testing.T) {
	t.Parallel()
	dimer := `{"name": "dimer", "content": ">A|protein\n` + chainA + `\n>B|protein\n` + chainB + `\n"}`
	tests := []struct {
		name       string
		targets    string
		alignments []align.Result
		want       string
	}{
		{"none handed", dimer, nil,
			"target dimer: use_msa_server is on, but the alignments of its protein chain(s) A, B were not searched before the job reached the worker; protenix never searches them itself"},
		{"a search of one chain of two", dimer, []align.Result{fakeSearch(chainA)}, "target dimer: use_msa_server is on, but the alignments of its protein chain(s) A, B were not searched"},
		{"the second target's", `{"name": "mono", "content": ">A|protein\n` + chainA + `\n"}, {"name": "other", "content": ">C|protein\n` + chainB + `\n"}`,
			[]align.Result{fakeSearch(chainA)}, "target other: use_msa_server is on, but the alignments of its protein chain(s) C were not searched"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			j := enginerun.PredictJob(t, `{"model": "protenix-v2", "targets": [`+tt.targets+`]}`)
			r := enginerun.RunAligned(t, New(Config{}), j, engine.Tools{"protenix": standIns["protenix"]}, tt.alignments)
			if r.Err == nil || !strings.Contains(r.Err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", r.Err, tt.want)
			}
			if strings.Contains(r.Err.Error(), r.WorkDir) {
				t.Errorf("the error %q names the run's folder", r.Err)
			}
			if strings.Contains(r.Log.String(), "stand-in] pred") {
				t.Errorf("the tool ran:\n%s", r.Log.String())
			}
		})
	}
}

// TestServerOffIgnoresAlignments folds every chain single-sequence with use_msa_server
// off, whatever alignments come with the job.
func TestServerOffIgnoresAlignments(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fakeSearch(chainA, chainB))
	out := h.mustRun(enginerun.PredictJob(t, `{"model": "protenix-v2", "params": {"use_msa_server": false}, "targets": [{"name": "dimer",
		"content": ">A|protein\n`+chainA+`\n>B|protein\n`+chainB+`\n"}]}`))
	if row := out.Rows[0]; row.Status != job.RowOK || row.MSA {
		t.Errorf("row %+v: want ok, folded single-sequence", row)
	}
	if args := h.args(); !strings.Contains(args, "--use_msa false") {
		t.Errorf("args %q", args)
	}
	for _, sq := range h.input()[0].Sequences {
		p := sq.ProteinChain
		if b, err := os.ReadFile(p.UnpairedMSAPath); err != nil || string(b) != ">query\n"+p.Sequence+"\n" || p.PairedMSAPath != "" {
			t.Errorf("chain %v: unpaired %s (%v): %q, paired %q; want the chain alone", p.ID, p.UnpairedMSAPath, err, b, p.PairedMSAPath)
		}
	}
	if want := "[chaperone] dimer: alignments: chains A, B: single-sequence (use_msa_server is off)\n"; !strings.Contains(h.Log.String(), want) {
		t.Errorf("the log lacks %q:\n%s", want, h.Log.String())
	}
}

// TestStandInRefusesToSearch checks the stand-in's guard, on which the tests above rely:
// with --use_msa, a protein chain without alignment files fails its input file instead of
// being searched.
func TestStandInRefusesToSearch(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	input := filepath.Join(dir, "in.json")
	body := `[{"name": "x", "sequences": [{"proteinChain": {"sequence": "MKTAYIAK", "count": 1}}]}]`
	if err := os.WriteFile(input, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"protenix", "opendde"} {
		for _, useMSA := range []string{"true", "false"} {
			out, err := exec.Command(standIns[tool], "pred", "--input", input, "--out_dir", filepath.Join(dir, tool+useMSA),
				"--seeds", "101", "--use_msa", useMSA).CombinedOutput()
			refused := strings.Contains(string(out), "refuses to search alignments: task x has a protein chain without its alignment files")
			if err != nil || refused != (useMSA == "true") {
				t.Errorf("%s with --use_msa %s: refused %v (%v):\n%s", tool, useMSA, refused, err, out)
			}
		}
	}
}

// quote is s as a JSON string.
func quote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}
