package boltz

import (
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/chaperone-bio/chaperone/align"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/boltz/boltztest"
	"github.com/chaperone-bio/chaperone/internal/enginerun"
	"github.com/chaperone-bio/chaperone/internal/realtools"
)

// boltzMSA is a protein chain's alignment as Boltz hands it to its model (testdata/tier/msa.py):
// what it read from the file, and its column of the paired MSA.
type boltzMSA struct {
	Read   []msaRow `json:"read"`
	Rows   []string `json:"rows"`
	Paired []int    `json:"paired"`
}

// TestUpstreamReadsSearchedAlignments: Boltz 2.2.1's own code reads the CSVs the engine
// writes for alignments searched ahead of the run as intended. boltz predict processes the
// inputs (placeholder checkpoints: the run then fails loading the model, which this test
// does not need) without calling a server; then Boltz's inference data path (load_input,
// its tokenizer and construct_paired_msa, as msa.py calls them) gives, for
//
//   - a monomer: the rows of its search once each, the query first, none paired but the
//     query (Boltz marks row 0 paired always);
//   - a homodimer: the same alignment for both copies, row by row, none paired but the
//     query;
//   - a heteromer (A and C one sequence, B another, and a ligand): the rows of equal key
//     side by side in one row of the paired MSA, paired, for every key that two chains
//     share; the query row first; and every other row of each chain there, unpaired.
func TestUpstreamReadsSearchedAlignments(t *testing.T) {
	env := realtools.Require(t, "boltz")
	boltztest.Isolate(t, boltztest.Cache(t, env, false))
	homoTarget := `{"name": "homo", "content": "sequences:\n  - protein: {id: [A, B], sequence: ` + chain1 + `}\n"}`
	j := enginerun.PredictJob(t, `{"model": "boltz2", "targets": [`+monoTarget+`, `+homoTarget+`, `+heteroTarget+`]}`)
	r := enginerun.RunAligned(t, New(Config{}), j, engine.Tools{"boltz": env.Bin("boltz")}, []align.Result{alone, heteromer})
	log := r.Log.String()
	if strings.Contains(log, "Calling MSA server") || strings.Contains(log, "Failed to process") || strings.Contains(log, "does not match input sequence") {
		t.Fatalf("Boltz searched, refused an input or an alignment:\n%s", log)
	}
	if !strings.Contains(log, "Running structure prediction for 3 inputs.") {
		t.Fatalf("Boltz did not reach the prediction of every input:\n%s", log)
	}
	var got map[string]map[string]boltzMSA
	env.RunJSON(t, &got, filepath.Join("testdata", "tier", "msa.py"),
		filepath.Join(r.WorkDir, "out", "boltz_results_inputs", "processed"), "mono", "homo", "hetero")

	mono := got["mono"]["A"]
	if !reflect.DeepEqual(mono.Read, readAlone) {
		t.Errorf("mono: Boltz read %v, want %v", mono.Read, readAlone)
	}
	if want := []string{chain1, "MKTAYIAKQR", "MRTAYLAKQ-", "MKSAYIAKHR"}; !slices.Equal(mono.Rows, want) || !onlyQueryPaired(mono) {
		t.Errorf("mono: the model's MSA %v (paired %v), want %v, none paired but the query", mono.Rows, mono.Paired, want)
	}

	homoA, homoB := got["homo"]["A"], got["homo"]["B"]
	if !reflect.DeepEqual(homoA.Read, readAlone) || !reflect.DeepEqual(homoB, homoA) || !slices.Equal(homoA.Rows, mono.Rows) ||
		!onlyQueryPaired(homoA) {
		t.Errorf("homo: A %+v, B %+v; want both to read the monomer's rows, none paired but the query", homoA, homoB)
	}

	hetero := got["hetero"]
	for chain, want := range map[string][]msaRow{"A": readHetero1, "B": readHetero2, "C": readHetero1} {
		if !reflect.DeepEqual(hetero[chain].Read, want) {
			t.Errorf("hetero %s: Boltz read %v, want %v", chain, hetero[chain].Read, want)
		}
	}
	checkPairedByKey(t, hetero)
}

// checkPairedByKey checks a complex's paired MSA against what Boltz read for each chain:
// row 0 is every chain's query, paired; for each key two or more chains share, one row holds
// each such chain's row of that key, paired; and every row a chain read is in its column,
// paired when another chain shares its key, unpaired when none does. (Boltz 2.2.1 also
// repeats paired rows among the unpaired ones: the set of rows it means to exclude,
// featurizerv2.py:324, never matches; so a row may appear twice.)
func checkPairedByKey(t *testing.T, chains map[string]boltzMSA) {
	t.Helper()
	n := -1
	holders := map[int][]string{} // key → chains that read a row of it
	for name, c := range chains {
		if n >= 0 && len(c.Rows) != n {
			t.Fatalf("columns of %d and %d rows", n, len(c.Rows))
		}
		n = len(c.Rows)
		if len(c.Rows) == 0 || c.Rows[0] != c.Read[0].Sequence || c.Paired[0] != 1 {
			t.Errorf("%s: row 0 of the paired MSA is %v, not its query paired", name, c.Rows[:min(1, len(c.Rows))])
		}
		for _, row := range c.Read {
			if row.Key >= 0 {
				holders[row.Key] = append(holders[row.Key], name)
			}
		}
	}
	for key, names := range holders {
		if len(names) < 2 {
			continue
		}
		found := false
		for r := 1; r < n && !found; r++ {
			found = true
			for _, name := range names {
				c := chains[name]
				if c.Paired[r] != 1 || c.Rows[r] != rowOfKey(c.Read, key) {
					found = false
				}
			}
		}
		if !found {
			t.Errorf("no row of the paired MSA pairs the rows of key %d of chains %v", key, names)
		}
	}
	for name, c := range chains {
		for _, row := range c.Read[1:] {
			paired := row.Key >= 0 && len(holders[row.Key]) > 1
			found := false
			for r := 1; r < n; r++ {
				if c.Rows[r] == row.Sequence && (c.Paired[r] == 1) == paired {
					found = true
				}
			}
			if !found {
				t.Errorf("%s: the row %v it read is not in its column of the paired MSA (paired %v)", name, row, paired)
			}
		}
	}
}

// onlyQueryPaired: the first row, the query, is marked paired and no other row is.
func onlyQueryPaired(c boltzMSA) bool {
	return len(c.Paired) > 0 && c.Paired[0] == 1 && !slices.Contains(c.Paired[1:], 1)
}

func rowOfKey(rows []msaRow, key int) string {
	for _, r := range rows {
		if r.Key == key {
			return r.Sequence
		}
	}
	return ""
}
