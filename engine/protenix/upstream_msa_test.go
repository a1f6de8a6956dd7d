package protenix

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chaperone-bio/chaperone/align"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/internal/enginerun"
	"github.com/chaperone-bio/chaperone/internal/realtools"
)

// TestUpstreamSearchedAlignments writes, as a run of each engine does, the input JSON
// and alignment files of targets whose chains the alignment stage searched (fakeSearch),
// and featurises them with the pinned tool's own preprocessing, loader and MSA featurizer
// (loaders.py), which must search nothing. The featurised alignment of each chain must be
// what the search gave:
//   - one distinct sequence (a monomer, a homodimer; a chain searched beside one whose
//     alignment was sent): the chain's unpaired rows, all of them, in order, without
//     repeats;
//   - a heteromer: first the paired rows, row i of every chain being row i of its paired
//     A3M (none dropped, none reordered, so rows of one organism stay side by side), then
//     the unpaired rows, less those already among the paired ones (the tools' clean-up).
func TestUpstreamSearchedAlignments(t *testing.T) {
	envs := map[string]realtools.Env{}
	for _, tool := range []string{"protenix", "opendde"} {
		envs[tool] = realtools.Require(t, tool)
	}
	isolate(t)
	const chainC = "MEEKLRRAVNW"
	sent := ">query\n" + chainC + "\n>sent\nMEEKIRRAVNW\n" // chain C's alignment where it is sent
	targets := []struct {
		name, content string
		chains        []string // the chains searched, as SearchChains gives them
	}{
		{"monomer", ">A|protein\n" + chainA + "\n", []string{chainA}},
		{"homodimer", ">A|protein\n" + chainA + "\n>B|protein\n" + chainA + "\n", []string{chainA, chainA}},
		{"heteromer", ">A|protein\n" + chainA + "\n>B|protein\n" + chainB + "\n", []string{chainA, chainB}},
		{"a2b", ">H|protein\n" + chainB + "\n>K|protein\n" + chainB + "\n>P|protein\n" + chainC + "\n", []string{chainB, chainB, chainC}},
		{"mixed", "sequences:\n  - protein:\n      id: A\n      sequence: " + chainA + "\n" +
			"  - protein:\n      id: B\n      sequence: " + chainC + "\n      msa: |\n" + indent(sent, "        "), []string{chainA}},
	}
	var list []string
	searches := map[string]align.Result{}
	var alignments []align.Result
	for _, tg := range targets {
		list = append(list, fmt.Sprintf(`{"name": %q, "content": %s}`, tg.name, quote(tg.content)))
		searches[tg.name] = fakeSearch(tg.chains...)
		alignments = append(alignments, searches[tg.name])
	}
	work := t.TempDir()
	inputs := map[string]string{}
	for tool, e := range map[string]*Engine{"protenix": New(Config{}), "opendde": NewOpenDDE(Config{})} {
		inputs[tool] = writeRunInput(t, e, `{"model": "`+e.Models()[0]+`", "targets": [`+strings.Join(list, ", ")+`]}`,
			alignments, filepath.Join(work, tool))
	}
	root := filepath.Join(work, "root")
	runPython(t, envs["protenix"], work, nil, filepath.Join("testdata", "upstream", "ccd.py"), filepath.Join(root, "common"),
		inputs["protenix"], inputs["opendde"])

	for _, tool := range []string{"protenix", "opendde"} {
		t.Run(tool, func(t *testing.T) {
			results := featurise(t, envs[tool], tool, inputs[tool], root)
			if len(results) != len(targets) {
				t.Fatalf("%d targets featurised, want %d", len(results), len(targets))
			}
			for _, r := range results {
				if r.Error != "" || r.Prepared != inputs[tool] {
					t.Errorf("%s: error %s; prepared input %s (a search?)", r.Name, lastLines(r.Error, 3), r.Prepared)
					continue
				}
				res := searches[r.Name]
				pairing := len(distinctRows(r.MSA)) > 1
				for id, rows := range r.MSA {
					unpaired, paired, searched := res.Chain(strings.ReplaceAll(rows[0], "-", ""))
					if !searched {
						unpaired = sent
					}
					wantPaired, wantUnpaired := wantRows(unpaired, paired, pairing)
					if got := rows[:min(r.PairedRows, len(rows))]; !slices.Equal(got, wantPaired) {
						t.Errorf("%s: chain %s: paired rows\n%s\nwant\n%s", r.Name, id, strings.Join(got, "\n"), strings.Join(wantPaired, "\n"))
					}
					if got := withoutPadding(rows[min(r.PairedRows, len(rows)):]); !slices.Equal(got, wantUnpaired) {
						t.Errorf("%s: chain %s: unpaired rows\n%s\nwant\n%s", r.Name, id, strings.Join(got, "\n"), strings.Join(wantUnpaired, "\n"))
					}
				}
			}
			if !t.Failed() {
				t.Logf("%s %s: %d targets featurised as searched", tool, envs[tool].Pin.Version, len(results))
			}
		})
	}
}

// writeRunInput writes, under work, the input JSON and alignment files of a run of e on
// the job of req with the alignments the alignment stage searched, and returns the
// input's path.
func writeRunInput(t *testing.T, e *Engine, req string, alignments []align.Result, work string) string {
	t.Helper()
	j := enginerun.PredictJob(t, req)
	steps, err := e.plan(&engine.Run{Job: j, WorkDir: work, Alignments: alignments, Log: &strings.Builder{}}, work)
	if err != nil {
		t.Fatal(err)
	}
	p := steps.(*prediction)
	if err := p.WriteInputs(); err != nil {
		t.Fatal(err)
	}
	return p.inputPath()
}

// wantRows is the featurised alignment of a chain, as the tools lay it out
// (msa_featurizer.py, FeatureAssemblyLine.assemble): the paired block, which is the
// chain's paired rows or, where it has none, the chain alone; then the unpaired block,
// its unpaired rows without repeats, less those among its paired rows when the target has
// two or more distinct protein sequences (MSAPairingEngine.cleanup_unpaired_features).
// The tools also add the paired rows to the unpaired ones (msa_pair_as_unpair, on by
// default), which that clean-up takes out again.
func wantRows(unpairedA3M, pairedA3M string, pairing bool) (paired, unpaired []string) {
	all := a3mRows(unpairedA3M)
	paired = a3mRows(pairedA3M)
	if len(paired) == 0 {
		paired = all[:1]
	}
	for _, row := range all {
		if !slices.Contains(unpaired, row) && !(pairing && slices.Contains(paired, row)) {
			unpaired = append(unpaired, row)
		}
	}
	return paired, unpaired
}

// distinctRows is the distinct first rows (the chains themselves) of a featurised
// alignment by chain.
func distinctRows(msa map[string][]string) []string {
	var firsts []string
	for _, rows := range msa {
		if !slices.Contains(firsts, rows[0]) {
			firsts = append(firsts, rows[0])
		}
	}
	return firsts
}

// withoutPadding is a chain's unpaired rows less the gap rows that pad them to the
// deepest chain's.
func withoutPadding(rows []string) []string {
	end := len(rows)
	for end > 0 && strings.Trim(rows[end-1], "-") == "" {
		end--
	}
	return rows[:end]
}

// indent puts prefix before every line of text, for a YAML block.
func indent(text, prefix string) string {
	var b strings.Builder
	for line := range strings.Lines(text) {
		b.WriteString(prefix + line)
	}
	return b.String()
}

// a3mRows is an A3M's rows as aligned to its first: without the lower-case letters of
// insertions.
func a3mRows(a3m string) []string {
	var rows []string
	for line := range strings.Lines(a3m) {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, ">"):
			rows = append(rows, "")
		case len(rows) > 0:
			rows[len(rows)-1] += strings.Map(func(r rune) rune {
				if r >= 'a' && r <= 'z' {
					return -1
				}
				return r
			}, line)
		}
	}
	return rows
}
