package pydriver

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/align"
	"github.com/chaperone-bio/chaperone/bio"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/pydriver/pydrivertest"
	"github.com/chaperone-bio/chaperone/engine/toolkit"
	"github.com/chaperone-bio/chaperone/internal/enginerun"
	"github.com/chaperone-bio/chaperone/internal/realtools"
	"github.com/chaperone-bio/chaperone/job"
)

// msaRead is the MSA feature esm's ESMFold2 input builder made of a target
// (testdata/upstream/alignment.py): its depth and, by chain id, each row over the chain's
// columns and its deletion counts.
type msaRead struct {
	Depth  int
	Chains map[string]struct {
		Rows      []string
		Deletions [][]int
	}
}

// TestUpstreamESMFold2ReadsTheSearchedAlignmentsAsMeant holds the A3Ms a fold hands
// ESMFold2 to the pinned esm: its own input builder, on the driver's own fold_input, reads
// a monomer's ColabFold alignment (uniref and environmental blocks) as every row of it once,
// the query first, insertions as deletion counts; and a heterodimer's with its paired rows
// on the same rows of the MSA. A tiny ESMFold2 with random weights then folds both targets
// with those alignments.
func TestUpstreamESMFold2ReadsTheSearchedAlignmentsAsMeant(t *testing.T) {
	env := realtools.Require(t, "esm")
	realtools.Isolate(t)
	t.Setenv("HF_HUB_OFFLINE", "1")
	folder := pydrivertest.TinyESMFold2(t, env)
	results := []align.Result{searchResult(t, "monomer"), searchResult(t, "heterodimer")}
	a, b := results[1].Chains[0], results[1].Chains[1]
	j := enginerun.PredictJob(t, `{"model": "esmfold2", "targets": [{"name": "mono", "content": ">A|protein\n`+a+`\n"},
		{"name": "dimer", "content": ">A|protein\n`+a+`\n>B|protein\n`+b+`\n"}],
		"params": {"use_msa_server": true, "recycling_steps": 1, "sampling_steps": 10}}`)

	targets, a3ms := planFold(t, j, results)
	dir := t.TempDir()
	driver, request := filepath.Join(dir, "driver.py"), filepath.Join(dir, "targets.json")
	body, _ := json.Marshal(targets)
	if err := os.WriteFile(driver, driverSource, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(request, body, 0o644); err != nil {
		t.Fatal(err)
	}
	var read map[string]msaRead
	env.RunJSON(t, &read, pydrivertest.Upstream("alignment.py"), driver, folder, request)

	// The monomer: every row of its A3M, in order, the query first.
	mono := read["mono"]
	rows := parseA3M(a3ms["mono"]["A"])
	if mono.Depth != len(rows) || rows[0].seq != a {
		t.Errorf("mono: esm read %d rows; want the A3M's %d, the query first", mono.Depth, len(rows))
	}
	for i, row := range rows {
		letters, deletions := matchColumns(row.seq)
		got := mono.Chains["A"]
		if i >= len(got.Rows) || got.Rows[i] != letters || !slices.Equal(got.Deletions[i], deletions) {
			t.Errorf("mono: esm read row %d as %v; want %s with deletions %v", i, got, letters, deletions)
		}
	}

	// The heterodimer: the queries on the first row, each pair of rows keyed alike (an
	// organism of both chains) on one row right after, and every row of each chain once.
	dimer := read["dimer"]
	byKey := map[string][2]string{}
	for c, id := range []string{"A", "B"} {
		rows := parseA3M(a3ms["dimer"][id])
		got := dimer.Chains[id].Rows
		if len(got) == 0 || got[0] != rows[0].seq {
			t.Errorf("dimer: chain %s's first MSA row is %v; want its query", id, got)
		}
		var want []string
		for _, row := range rows {
			letters, _ := matchColumns(row.seq)
			want = append(want, letters)
			if key, _, ok := strings.Cut(row.header, " "); ok && strings.HasPrefix(key, "key=") {
				pair := byKey[key]
				pair[c] = letters
				byKey[key] = pair
			}
		}
		gap := strings.Repeat("-", len(rows[0].seq))
		read := slices.DeleteFunc(slices.Clone(got), func(s string) bool { return s == gap })
		slices.Sort(read)
		slices.Sort(want)
		if !slices.Equal(read, want) {
			t.Errorf("dimer: chain %s's rows as esm read them %v; want each of its A3M's once: %v", id, read, want)
		}
	}
	var pairs [][2]string // the rows of a key both chains have
	for _, pair := range byKey {
		if pair[0] != "" && pair[1] != "" {
			pairs = append(pairs, pair)
		}
	}
	if len(pairs) != 2 {
		t.Errorf("dimer: %d keys in both chains; the test's alignment has 2", len(pairs))
	}
	for _, pair := range pairs {
		i := slices.Index(dimer.Chains["A"].Rows, pair[0])
		if i < 1 || i > len(pairs) || dimer.Chains["B"].Rows[i] != pair[1] {
			t.Errorf("dimer: the rows %v are not on one of the MSA's first rows after the queries: %v", pair, dimer.Chains)
		}
	}

	// A fold of both with a tiny ESMFold2.
	start := time.Now()
	r := enginerun.RunAligned(t, ESM(), j, engine.Tools{"esm": env.Python(), "esmfold2": folder}, results)
	if r.Err != nil {
		t.Fatalf("%v\n%s", r.Err, realtools.LastLines(r.Log.String(), 40))
	}
	t.Logf("the fold of both targets: %s", time.Since(start).Round(time.Millisecond))
	for _, row := range r.Out.Rows {
		if row.Status != job.RowOK || !row.MSA {
			t.Errorf("row %+v; want ok, with an alignment", row)
		}
	}
}

// planFold plans a fold of j as the engine does, with its alignment files in a folder of
// the test's, and returns its targets and, by target and chain id, each chain's A3M.
func planFold(t *testing.T, j *job.Job, results []align.Result) ([]foldTarget, map[string]map[string]string) {
	t.Helper()
	p, err := toolkit.NewPredictParams(j.Params)
	if err != nil {
		t.Fatal(err)
	}
	complexes, err := bio.Complexes(j.Input)
	if err != nil {
		t.Fatal(err)
	}
	raw := t.TempDir()
	var targets []foldTarget
	a3ms := map[string]map[string]string{}
	for _, cx := range complexes {
		found, err := searchedAlignments(cx, p.UseMSAServer, results)
		if err != nil {
			t.Fatal(err)
		}
		target, err := foldInput(cx, raw, found, new(strings.Builder))
		if err != nil {
			t.Fatal(err)
		}
		targets = append(targets, target)
		a3ms[cx.Name] = map[string]string{}
		for _, c := range target.Chains {
			b, err := os.ReadFile(c.A3M)
			if err != nil {
				t.Fatal(err)
			}
			a3ms[cx.Name][c.ID] = string(b)
		}
	}
	return targets, a3ms
}

// matchColumns is an A3M row as its query's columns: its upper-case letters and gaps, and
// before each the number of insertions (lower-case letters) the row has there.
func matchColumns(row string) (letters string, deletions []int) {
	var b strings.Builder
	inserted := 0
	for _, r := range row {
		if r >= 'a' && r <= 'z' || r == '.' {
			inserted++
			continue
		}
		b.WriteRune(r)
		deletions = append(deletions, inserted)
		inserted = 0
	}
	return b.String(), deletions
}
