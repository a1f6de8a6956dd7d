package openfold3

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chaperone-bio/chaperone/align"
	"github.com/chaperone-bio/chaperone/internal/enginerun"
	"github.com/chaperone-bio/chaperone/job"
)

// testServer is the server named in the alignments the tests make up.
const testServer = "https://msa.example.org"

// searchedFor makes up what the alignment stage gives a job: the result of each of its
// searches (madeUpSearch).
func searchedFor(j *job.Job) []align.Result {
	var out []align.Result
	for _, s := range j.Searches {
		out = append(out, madeUpSearch(s.Chains))
	}
	return out
}

// madeUpSearch is a search of chains as the alignment stage gives it (align/doc.go), with
// made-up hits. Each distinct chain's unpaired A3M is a UniRef block and an environmental
// block, each starting with the query row headed by the chain's number (101, 102, …); one
// hit has an insertion (lower case), one is in both blocks. For two or more distinct
// chains the paired A3Ms have three rows each, the query's first; the second chain has no
// partner in the last row (gaps), and the first paired hit is also the environmental
// block's first hit, so that OpenFold3 drops it from the main alignment.
func madeUpSearch(chains []string) align.Result {
	var distinct []string
	for _, c := range chains {
		if !slices.Contains(distinct, c) {
			distinct = append(distinct, c)
		}
	}
	r := align.Result{Chains: distinct, Source: align.Source{Server: testServer, Mode: "env", Pairing: "pairgreedy"}}
	for i, seq := range distinct {
		id := 101 + i
		shared := variant(seq, 0)
		r.Unpaired = append(r.Unpaired, fmt.Sprintf(">%d\n%s\n>UniRef100_U%d_1\t81\t0.900\n%s\n>UniRef100_U%d_2\t70\t0.800\n%s\n"+
			">%d\n%s\n>MGYP%d_1\n%s\n>MGYP%d_2\n%s\n",
			id, seq, i, shared, i, withInsertion(variant(seq, 1)), id, seq, i, variant(seq, 3), i, shared))
	}
	if len(distinct) > 1 {
		for i, seq := range distinct {
			last := variant(seq, 4)
			if i == 1 {
				last = strings.Repeat("-", len(seq))
			}
			r.Paired = append(r.Paired, fmt.Sprintf(">%d\n%s\n>UniRef100_P1_%d\n%s\n>UniRef100_P2_%d\n%s\n", 101+i, seq, i, variant(seq, 3), i, last))
		}
	}
	return r
}

// variant is seq with the residue at pos (modulo its length) changed.
func variant(seq string, pos int) string {
	pos %= len(seq)
	for _, r := range "WGPHY" {
		if byte(r) != seq[pos] {
			return seq[:pos] + string(r) + seq[pos+1:]
		}
	}
	panic("unreachable")
}

// withInsertion is a hit with two residues the query lacks, in lower case as A3M writes them.
func withInsertion(hit string) string { return hit[:2] + "ki" + hit[2:] }

// TestSearchedAlignmentsReachTheTool: the alignments the alignment stage searched reach
// OpenFold3 as its precomputed alignments (the stand-in reads them where and as the
// release does), beside those the caller sent; rows say msa, and the run log says where
// each chain's alignments came from.
func TestSearchedAlignmentsReachTheTool(t *testing.T) {
	t.Parallel()
	const a, b = "MKTAYIAKQRQ", "GSHMLEV"
	searched := "searched before the run on server " + testServer + "; mode env; pairing pairgreedy"
	tests := []struct {
		name, req string
		read      []string // what the stand-in read, per chain
		note      string   // the engine's note of where the alignments came from
	}{
		{"monomer", `{"sequence": "` + a + `"}`,
			[]string{"chains A (protein): main e1/colabfold_main.a3m (6 rows)\n"}, "chain A " + searched},
		{"homodimer", `{"input": "sequences:\n  - protein: {id: [A, B], sequence: ` + a + `}\n"}`,
			[]string{"chains A,B (protein): main e1/colabfold_main.a3m (6 rows)\n"}, "chain A,B " + searched},
		{"heteromer", `{"input": ">A|protein\n` + a + `\n>B|protein\n` + b + `\n"}`,
			[]string{"chains A (protein): main e1/colabfold_main.a3m (6 rows), paired 3 rows", "chains B (protein): main e2/colabfold_main.a3m (6 rows), paired 3 rows"},
			"chain A " + searched + ", paired across its 2 distinct chains; chain B " + searched},
		{"one searched, one sent", `{"input": "sequences:\n  - protein: {id: A, sequence: ` + a + `, msa: \">q\\n` + a + `\\n>h\\n` + variant(a, 2) + `\\n\"}\n  - protein: {id: B, sequence: ` + b + `}\n"}`,
			[]string{"chains A (protein): main e1/colabfold_main.a3m (2 rows)\n", "chains B (protein): main e2/colabfold_main.a3m (6 rows)\n"},
			"chain A sent with the input (a3m); chain B " + searched},
		{"searched pairs and sent pairs", `{"input": "sequences:\n  - protein: {id: A, sequence: ` + a + `}\n  - protein: {id: B, sequence: ` + b + `}\n` +
			`  - protein: {id: C, sequence: MKTAY, msa: \"key,sequence\\n,MKTAY\\n1,MKSAY\\n2,MRTAY\\n\"}\n` +
			`  - protein: {id: D, sequence: GGSGG, msa: \"key,sequence\\n,GGSGG\\n2,GGAGG\\n\"}\n"}`,
			// Three searched rows (the query's first) and two keyed ones.
			[]string{"chains A (protein): main e1/colabfold_main.a3m (6 rows), paired 5 rows", "chains B (protein): main e2/colabfold_main.a3m (6 rows), paired 5 rows",
				"chains C (protein): main e3/colabfold_main.a3m (1 rows), paired 5 rows", "chains D (protein): main e4/colabfold_main.a3m (1 rows), paired 5 rows"},
			"chain C sent with the input (csv); chain D sent with the input (csv)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			j := newJob(t, tt.req)
			r := enginerun.RunAligned(t, New(Config{}), j, tools(), searchedFor(j))
			if r.Err != nil {
				t.Fatalf("%v\n%s", r.Err, r.Log.String())
			}
			log := r.Log.String()
			for _, want := range tt.read {
				if !strings.Contains(log, "[run_openfold stand-in] target_1 "+want) {
					t.Errorf("the stand-in did not read %q:\n%s", want, log)
				}
			}
			if !strings.Contains(log, "[chaperone] alignments of target_1: ") || !strings.Contains(log, tt.note) {
				t.Errorf("the run log lacks %q:\n%s", tt.note, log)
			}
			if row := r.Out.Rows[0]; row.Status != job.RowOK || !row.MSA {
				t.Errorf("row %+v", row)
			}
		})
	}
}

// TestMissingAlignmentsFailTheJob: a target whose chains were to be searched, without their
// search among the run's alignments, fails the job before the tool runs.
func TestMissingAlignmentsFailTheJob(t *testing.T) {
	t.Parallel()
	const req = `{"targets": [{"name": "first", "content": ">A|protein|empty\nMKTAYIAK\n"},
		{"name": "dimer", "content": ">A|protein\nMKTAYIAKQRQ\n>B|protein\nGSHMLEV\n>C|protein|empty\nGGSGG\n"}]}`
	tests := []struct {
		name       string
		alignments []align.Result
	}{
		{"none at all", nil},
		{"one chain's search only", []align.Result{madeUpSearch([]string{"MKTAYIAKQRQ"})}},
		{"the chains in another order", []align.Result{madeUpSearch([]string{"GSHMLEV", "MKTAYIAKQRQ"})}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := enginerun.RunAligned(t, New(Config{}), newJob(t, req), tools(), tt.alignments)
			const want = "target dimer: use_msa_server is on, but the alignments of its protein chain(s) A, B were not searched before the job reached the worker; OpenFold3 never searches them itself"
			if r.Err == nil || !strings.HasPrefix(r.Err.Error(), want) {
				t.Errorf("err = %v, want %q", r.Err, want)
			}
			if log := r.Log.String(); strings.Contains(log, "[run_openfold stand-in]") {
				t.Errorf("the tool ran:\n%s", log)
			}
		})
	}
}

// TestServerOffIgnoresAlignments: with use_msa_server off, chains without sent alignments
// fold single-sequence whatever alignments the run holds.
func TestServerOffIgnoresAlignments(t *testing.T) {
	t.Parallel()
	j := newJob(t, `{"input": ">A|protein\nMKTAYIAKQRQ\n>B|protein\nGSHMLEV\n", "params": {"use_msa_server": false}}`)
	r := enginerun.RunAligned(t, New(Config{}), j, tools(), []align.Result{madeUpSearch([]string{"MKTAYIAKQRQ", "GSHMLEV"})})
	if r.Err != nil {
		t.Fatalf("%v\n%s", r.Err, r.Log.String())
	}
	log := r.Log.String()
	for _, want := range []string{"target_1 chains A (protein): single-sequence (use_msas false)",
		"alignments of target_1: chain A none, single-sequence (use_msa_server is off); chain B none, single-sequence (use_msa_server is off)"} {
		if !strings.Contains(log, want) {
			t.Errorf("the log lacks %q:\n%s", want, log)
		}
	}
	if _, err := os.Stat(filepath.Join(r.WorkDir, "files", "target_1")); !os.IsNotExist(err) {
		t.Errorf("alignment files were written: %v", err)
	}
	if row := r.Out.Rows[0]; row.Status != job.RowOK || row.MSA {
		t.Errorf("row %+v", row)
	}
}

// TestStandInReadsAsTheRelease: the stand-in refuses what OpenFold3 0.5 would search on a
// server, and fails a query whose alignment files the release would not read as meant, so
// that the engine's tests against it show the files right.
func TestStandInReadsAsTheRelease(t *testing.T) {
	t.Parallel()
	const seq = "MKTAYIAK"
	tests := []struct {
		name       string
		server     string // --use_msa_server, "" for none
		yaml       string // experiment_settings' own switches
		files      map[string]string
		chains     string // the query's chains, with $DIR for the files' folder
		want       string // in what the stand-in printed
		wantFailed bool
	}{
		{"server on by default", "", "", nil, `{"molecule_type": "protein", "chain_ids": ["A"], "sequence": "` + seq + `"}`,
			"api.colabfold.com", false},
		{"server on in the YAML", "", "use_msa_server: true\n  use_templates: false\n", nil,
			`{"molecule_type": "protein", "chain_ids": ["A"], "sequence": "` + seq + `"}`, "api.colabfold.com", false},
		{"off in the YAML", "", "use_msa_server: false\n  use_templates: false\n", nil,
			`{"molecule_type": "protein", "chain_ids": ["A"], "sequence": "` + seq + `"}`, "chains A (protein): no alignment", false},
		{"a folder per chain", "false", "use_templates: false\n", map[string]string{"e1/colabfold_main.a3m": ">101\n" + seq + "\n>h\nMK-AYIAK\n"},
			`{"molecule_type": "protein", "chain_ids": ["A"], "sequence": "` + seq + `", "main_msa_file_paths": ["$DIR/e1/colabfold_main.a3m"]}`,
			"chains A (protein): main e1/colabfold_main.a3m (2 rows)", false},
		{"a file under a stem OpenFold3 does not read", "false", "use_templates: false\n", map[string]string{"e1/main.a3m": ">101\n" + seq + "\n"},
			`{"molecule_type": "protein", "chain_ids": ["A"], "sequence": "` + seq + `", "main_msa_file_paths": ["$DIR/e1/main.a3m"]}`,
			"IndexError", true},
		{"another chain's alignment", "false", "use_templates: false\n", map[string]string{"e1/colabfold_main.a3m": ">101\nGSHMLEVA\n"},
			`{"molecule_type": "protein", "chain_ids": ["A"], "sequence": "` + seq + `", "main_msa_file_paths": ["$DIR/e1/colabfold_main.a3m"]}`,
			"is \"GSHMLEVA\", not the chain", true},
		{"paired alignments of different lengths", "false", "use_templates: false\n", map[string]string{
			"e1/colabfold_main.a3m": ">101\n" + seq + "\n", "e1/colabfold_paired.a3m": ">101\n" + seq + "\n>p\n" + seq + "\n",
			"e2/colabfold_main.a3m": ">102\nGSHMLE\n", "e2/colabfold_paired.a3m": ">102\nGSHMLE\n"},
			`{"molecule_type": "protein", "chain_ids": ["A"], "sequence": "` + seq + `", "main_msa_file_paths": ["$DIR/e1/colabfold_main.a3m"], "paired_msa_file_paths": ["$DIR/e1/colabfold_paired.a3m"]},
			 {"molecule_type": "protein", "chain_ids": ["B"], "sequence": "GSHMLE", "main_msa_file_paths": ["$DIR/e2/colabfold_main.a3m"], "paired_msa_file_paths": ["$DIR/e2/colabfold_paired.a3m"]}`,
			"mismatched row counts", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			for name, text := range tt.files {
				writeTestFile(t, filepath.Join(dir, name), text)
			}
			writeTestFile(t, filepath.Join(dir, "q.json"), `{"queries": {"q": {"chains": [`+strings.ReplaceAll(tt.chains, "$DIR", dir)+`]}}}`)
			writeTestFile(t, filepath.Join(dir, "runner.yaml"), "experiment_settings:\n  "+tt.yaml)
			args := []string{"predict", "--query_json", filepath.Join(dir, "q.json"), "--runner_yaml", filepath.Join(dir, "runner.yaml"),
				"--inference_ckpt_path", ckpt, "--output_dir", filepath.Join(dir, "out")}
			if tt.server != "" {
				args = append(args, "--use_msa_server", tt.server)
			}
			out, err := exec.Command(standIn, args...).CombinedOutput()
			if !strings.Contains(string(out), tt.want) {
				t.Errorf("the stand-in's output lacks %q (err %v):\n%s", tt.want, err, out)
			}
			summary, _ := os.ReadFile(filepath.Join(dir, "out", "summary.txt"))
			if failed := strings.Contains(string(summary), "Failed Queries: q"); failed != tt.wantFailed {
				t.Errorf("failed %t, want %t:\n%s", failed, tt.wantFailed, out)
			}
		})
	}
}

func writeTestFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
