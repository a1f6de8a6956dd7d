package openfold3

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chaperone-bio/chaperone/align"
	"github.com/chaperone-bio/chaperone/internal/realtools"
)

// TestUpstreamReadsTheAlignments: OpenFold3 0.5's own code reads the alignment files the
// engine writes as meant (testdata/read_msas.py: predict's query and runner parsing, its
// data module's preparation and its featurisation, on the CPU without weights, with every
// network connection refused). In the "msa" feature the model gets, each protein chain has
// its own sequence first; then every row of its paired alignment, the query's first as
// OpenFold3's own ColabFold step writes it, in our order and side by side across the
// chains; then every row of its main alignment, but for those OpenFold3 drops on purpose:
// repeats, and rows that are also paired (sample_processing/msa.py:340-390). Nothing
// reached for the network.
func TestUpstreamReadsTheAlignments(t *testing.T) {
	env := realtools.Require(t, "run_openfold")
	isolate(t)
	const a, b = "MKTAYIAKQRQ", "GSHMLEV"
	sentA3M := ">q\n" + a + "\n>h1\n" + withInsertion(variant(a, 2)) + "\n>h1 again\n" + variant(a, 2) + "\n"
	tests := []struct {
		name, req string
		// main holds the rows each chain's main alignment was given, before OpenFold3
		// drops repeats and paired rows; paired the rows of its paired alignment, in order,
		// the query's first (none when the target has none).
		main, paired func(res align.Result) map[string][]string
	}{
		{"monomer", `{"sequence": "` + a + `"}`,
			func(res align.Result) map[string][]string { return map[string][]string{"A": rowsOf(res.Unpaired[0])} }, nil},
		{"homodimer", `{"input": "sequences:\n  - protein: {id: [A, B], sequence: ` + a + `}\n"}`,
			func(res align.Result) map[string][]string {
				return map[string][]string{"A": rowsOf(res.Unpaired[0]), "B": rowsOf(res.Unpaired[0])}
			}, nil},
		{"heteromer", `{"input": ">A|protein\n` + a + `\n>B|protein\n` + b + `\n>C|protein\n` + a + `\n"}`,
			func(res align.Result) map[string][]string {
				return map[string][]string{"A": rowsOf(res.Unpaired[0]), "B": rowsOf(res.Unpaired[1]), "C": rowsOf(res.Unpaired[0])}
			},
			func(res align.Result) map[string][]string {
				return map[string][]string{"A": rowsOf(res.Paired[0]), "B": rowsOf(res.Paired[1]), "C": rowsOf(res.Paired[0])}
			}},
		{"one searched, one sent", `{"input": ` + jsonText("sequences:\n  - protein: {id: A, sequence: "+a+", msa: "+q(sentA3M)+"}\n"+
			"  - protein: {id: B, sequence: "+b+"}\n") + `}`,
			func(res align.Result) map[string][]string {
				return map[string][]string{"A": rowsOf(sentA3M), "B": rowsOf(res.Unpaired[0])}
			}, nil},
		{"searched pairs and sent pairs", `{"input": "sequences:\n  - protein: {id: A, sequence: ` + a + `}\n  - protein: {id: B, sequence: ` + b + `}\n` +
			`  - protein: {id: C, sequence: MKTAY, msa: \"key,sequence\\n,MKTAY\\n1,MKSAY\\n,MKTAA\\n2,MRTAY\\n\"}\n` +
			`  - protein: {id: D, sequence: GGSGG, msa: \"key,sequence\\n,GGSGG\\n2,GGAGG\\n\"}\n"}`,
			func(res align.Result) map[string][]string {
				return map[string][]string{"A": rowsOf(res.Unpaired[0]), "B": rowsOf(res.Unpaired[1]),
					"C": {"MKTAY", "MKTAA"}, "D": {"GGSGG"}}
			},
			// The search's rows, then the keyed rows; gaps where a source pairs a chain
			// with nothing.
			func(res align.Result) map[string][]string {
				return map[string][]string{
					"A": append(rowsOf(res.Paired[0]), "-----------", "-----------"),
					"B": append(rowsOf(res.Paired[1]), "-------", "-------"),
					"C": {"MKTAY", "-----", "-----", "MKSAY", "MRTAY"},
					"D": {"GGSGG", "-----", "-----", "-----", "GGAGG"},
				}
			}},
		{"sent pairs keyed as Boltz writes them", `{"input": "sequences:\n  - protein: {id: A, sequence: ` + a + `}\n  - protein: {id: B, sequence: ` + b + `}\n` +
			`  - protein: {id: C, sequence: MKTAY, msa: \"key,sequence\\n-1,MKTAY\\n1,MKSAY\\n-1,MKTAA\\n2,MRTAY\\n\"}\n` +
			`  - protein: {id: D, sequence: GGSGG, msa: \"key,sequence\\n-1,GGSGG\\n2,GGAGG\\n\"}\n"}`,
			// Key -1 is no key: the same rows as with the keys left out.
			func(res align.Result) map[string][]string {
				return map[string][]string{"A": rowsOf(res.Unpaired[0]), "B": rowsOf(res.Unpaired[1]),
					"C": {"MKTAY", "MKTAA"}, "D": {"GGSGG"}}
			},
			func(res align.Result) map[string][]string {
				return map[string][]string{
					"A": append(rowsOf(res.Paired[0]), "-----------", "-----------"),
					"B": append(rowsOf(res.Paired[1]), "-------", "-------"),
					"C": {"MKTAY", "-----", "-----", "MKSAY", "MRTAY"},
					"D": {"GGSGG", "-----", "-----", "-----", "GGAGG"},
				}
			}},
	}
	var works []string
	for _, tt := range tests {
		h := newHarness(t, Config{})
		if _, err := h.run(newJob(t, tt.req)); err != nil {
			t.Fatalf("%s: %v\n%s", tt.name, err, h.Log.String())
		}
		works = append(works, h.workDir)
	}
	placeholder := filepath.Join(t.TempDir(), checkpointName)
	writeTestFile(t, placeholder, "placeholder")
	var read struct {
		Network []string `json:"network"`
		Works   map[string]map[string]struct {
			NumPaired int                 `json:"num_paired_seqs"`
			Chains    map[string][]string `json:"chains"`
		} `json:"works"`
	}
	out := env.Run(t, []string{"OMP_NUM_THREADS=1"}, filepath.Join("testdata", "read_msas.py"), append([]string{placeholder}, works...)...)
	if err := json.Unmarshal(out, &read); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(read.Network) > 0 {
		t.Errorf("OpenFold3 reached for the network: %v", read.Network)
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := read.Works[works[i]]["target_1"]
			if !ok {
				t.Fatalf("read_msas.py read no target_1 in %s", works[i])
			}
			res := searchedFor(newJob(t, tt.req))[0]
			main := tt.main(res)
			var paired map[string][]string
			if tt.paired != nil {
				paired = tt.paired(res)
			}
			for id, rows := range got.Chains {
				pairedRows := paired[id]
				if got.NumPaired != 1+len(pairedRows) {
					t.Errorf("chain %s: %d paired rows with the query's, want %d", id, got.NumPaired, 1+len(pairedRows))
					continue
				}
				query := main[id][0]
				if rows[0] != query {
					t.Errorf("chain %s: the first row is %s, not the chain %s", id, rows[0], query)
				}
				if !slices.Equal(rows[1:got.NumPaired], pairedRows) {
					t.Errorf("chain %s: paired rows\n%v\nwant\n%v", id, rows[1:got.NumPaired], pairedRows)
				}
				wantMain := keptMain(main[id], pairedRows)
				if gotMain := withoutPadding(rows[got.NumPaired:]); !slices.Equal(gotMain, wantMain) {
					t.Errorf("chain %s: main rows\n%v\nwant\n%v", id, gotMain, wantMain)
				}
			}
			if len(got.Chains) != len(main) {
				t.Errorf("chains read %v, want %d", got.Chains, len(main))
			}
		})
	}
}

// keptMain is what OpenFold3 keeps of a chain's main rows: each row once, in order, but
// for rows that are also paired rows of the chain.
func keptMain(rows, paired []string) []string {
	var out []string
	for _, r := range rows {
		if slices.Contains(out, r) || slices.Contains(paired, r) {
			continue
		}
		out = append(out, r)
	}
	return out
}

// withoutPadding drops the rows of gaps only at the end: OpenFold3 pads every chain to the
// deepest chain's main alignment.
func withoutPadding(rows []string) []string {
	for len(rows) > 0 && strings.Trim(rows[len(rows)-1], "-") == "" {
		rows = rows[:len(rows)-1]
	}
	return rows
}

// rowsOf is an A3M's rows as OpenFold3 reads them: one per header, insertions (lower case)
// left out.
func rowsOf(a3m string) []string {
	var rows []string
	for line := range strings.Lines(a3m) {
		l := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(l, ">"):
			rows = append(rows, "")
		case l != "" && !strings.HasPrefix(l, "#"):
			rows[len(rows)-1] += strings.Map(func(r rune) rune {
				if r >= 'a' && r <= 'z' {
					return -1
				}
				return r
			}, l)
		}
	}
	return rows
}
