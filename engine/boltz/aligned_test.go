package boltz

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/chaperone-bio/chaperone/align"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/internal/enginerun"
	"github.com/chaperone-bio/chaperone/job"
)

// Targets of the tests below: chain1 alone; chain1 and chain2 with a ligand, chain1 again
// in an entry of its own; chain1 searched beside chain2's alignment sent.
var (
	monoTarget   = `{"name": "mono", "content": ">A|protein\n` + chain1 + `\n"}`
	heteroTarget = `{"name": "hetero", "content": ` + jsonString("sequences:\n  - protein: {id: A, sequence: "+chain1+"}\n"+
		"  - protein: {id: B, sequence: "+chain2+"}\n  - ligand: {id: L, ccd: SAH}\n  - protein: {id: C, sequence: "+chain1+"}\n") + `}`
	mixedTarget = `{"name": "mixed", "content": ` + jsonString("sequences:\n  - protein: {id: A, sequence: "+chain1+"}\n"+
		"  - protein:\n      id: B\n      sequence: "+chain2+"\n      msa: |\n        >query\n        "+chain2+"\n        >hit\n        GSHMLQDPV\n") + `}`
)

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestRunHandsBoltzTheSearchedAlignments: each target's chains read, in the stand-in that
// reads alignment files as Boltz does, the alignments searched for that target: one file
// per Boltz entity, the paired rows of a heteromer under the same keys in both chains, and
// Boltz's own reading (duplicates left out, insertions taking no column) on top. Boltz is
// never asked to search (the stand-in refuses --use_msa_server).
func TestRunHandsBoltzTheSearchedAlignments(t *testing.T) {
	t.Parallel()
	j := enginerun.PredictJob(t, `{"targets": [`+monoTarget+`, `+heteroTarget+`, `+mixedTarget+`]}`)
	r := enginerun.RunAligned(t, New(Config{}), j, engine.Tools{"boltz": standIn}, []align.Result{heteromer, alone})
	if r.Err != nil {
		t.Fatalf("run: %v\n%s", r.Err, r.Log.String())
	}
	sent2 := []msaRow{{-1, chain2}, {-1, "GSHMLQDPV"}}
	want := map[string]map[string][]msaRow{
		"mono":   {"A": readAlone},
		"hetero": {"A": readHetero1, "B": readHetero2, "C": readHetero1, "L": nil},
		"mixed":  {"A": readAlone, "B": sent2},
	}
	for target, chains := range want {
		if got := readByBoltz(t, r.WorkDir, target); !reflect.DeepEqual(got, chains) {
			t.Errorf("%s: Boltz read %v\nwant %v", target, got, chains)
		}
	}
	for _, row := range r.Out.Rows {
		if row.Status != job.RowOK || !row.MSA {
			t.Errorf("row %+v: want ok, folded with an alignment", row)
		}
	}
	log := r.Log.String()
	searched := "searched by chaperone's alignment stage (server https://msa.example.org; mode env; pairing pairgreedy-env)"
	for _, line := range []string{
		"[chaperone] mono: alignments of chain A " + searched,
		"[chaperone] hetero: alignments of chains A, B, C " + searched,
		"[chaperone] mixed: alignments of chain A " + searched + "; of chain B sent with the input",
	} {
		if !strings.Contains(log, line+"\n") {
			t.Errorf("the log lacks %q:\n%s", line, log)
		}
	}
}

// TestRunFailsWithoutSearchedAlignments: a target whose chains were to be searched ahead
// of the run and were not fails the job before boltz runs, in words that name the target
// and nothing of the machine.
func TestRunFailsWithoutSearchedAlignments(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		searched []align.Result
		failing  string // the first target without its alignments
	}{
		{"none searched", nil, "mono"},
		{"another target's chains searched", []align.Result{alone}, "hetero"},
		{"its chains searched in another order", []align.Result{alone, {Chains: []string{chain2, chain1}, Unpaired: heteromer.Unpaired,
			Source: testSource}}, "hetero"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			j := enginerun.PredictJob(t, `{"targets": [`+monoTarget+`, `+heteroTarget+`]}`)
			r := enginerun.RunAligned(t, New(Config{}), j, engine.Tools{"boltz": standIn}, tt.searched)
			want := fmt.Sprintf("target %s: use_msa_server is on, but the alignments of its protein chain(s)", tt.failing)
			if r.Err == nil || !strings.HasPrefix(r.Err.Error(), want) || strings.Contains(r.Err.Error(), "/") {
				t.Errorf("err = %v, want one that starts %q and names no path", r.Err, want)
			}
			if strings.Contains(r.Log.String(), "[boltz stand-in]") {
				t.Errorf("boltz ran:\n%s", r.Log.String())
			}
		})
	}
}

// TestRunWithoutMSAServerIgnoresAlignments: with use_msa_server off the chains without an
// alignment of their own are folded single-sequence, whatever alignments the run is given,
// and a sent alignment is read as before.
func TestRunWithoutMSAServerIgnoresAlignments(t *testing.T) {
	t.Parallel()
	j := enginerun.PredictJob(t, `{"targets": [`+monoTarget+`, `+mixedTarget+`], "params": {"use_msa_server": false}}`)
	r := enginerun.RunAligned(t, New(Config{}), j, engine.Tools{"boltz": standIn}, []align.Result{alone})
	if r.Err != nil {
		t.Fatalf("run: %v\n%s", r.Err, r.Log.String())
	}
	if got := readByBoltz(t, r.WorkDir, "mono"); !reflect.DeepEqual(got, map[string][]msaRow{"A": nil}) {
		t.Errorf("mono: Boltz read %v, want no alignment", got)
	}
	if got := readByBoltz(t, r.WorkDir, "mixed"); !reflect.DeepEqual(got, map[string][]msaRow{"A": nil, "B": {{-1, chain2}, {-1, "GSHMLQDPV"}}}) {
		t.Errorf("mixed: Boltz read %v, want B's alignment only", got)
	}
	if mono, mixed := r.Out.Rows[0], r.Out.Rows[1]; mono.MSA || !mixed.MSA {
		t.Errorf("rows' msa: mono %v (folded single-sequence), mixed %v (B folded with its alignment)", mono.MSA, mixed.MSA)
	}
	log := r.Log.String()
	for _, line := range []string{
		"[chaperone] mono: alignments none for chain A (single-sequence: msa: empty, or use_msa_server off)\n",
		"[chaperone] mixed: alignments of chain B sent with the input; none for chain A (single-sequence: msa: empty, or use_msa_server off)\n",
	} {
		if !strings.Contains(log, line) {
			t.Errorf("the log lacks %q:\n%s", line, log)
		}
	}
}

// msaRow is a row of an alignment as the stand-in recorded reading it (its msa.go).
type msaRow struct {
	Key      int    `json:"key"`
	Sequence string `json:"sequence"`
}

// readByBoltz is, per chain of a target, the alignment rows the stand-in read for it, nil
// for a chain without one: the processed record names each chain's processed alignment.
func readByBoltz(t *testing.T, work, target string) map[string][]msaRow {
	t.Helper()
	processed := filepath.Join(work, "out", "boltz_results_inputs", "processed")
	var rec struct {
		Chains []struct {
			Name string `json:"chain_name"`
			MSA  any    `json:"msa_id"`
		} `json:"chains"`
	}
	readJSON(t, filepath.Join(processed, "records", target+".json"), &rec)
	out := map[string][]msaRow{}
	for _, c := range rec.Chains {
		out[c.Name] = nil
		if name, ok := c.MSA.(string); ok {
			var rows []msaRow
			readJSON(t, filepath.Join(processed, "msa", name+".json"), &rows)
			out[c.Name] = rows
		}
	}
	return out
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
