package boltz

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chaperone-bio/chaperone/align"
	"github.com/chaperone-bio/chaperone/bio"
	"github.com/chaperone-bio/chaperone/internal/golden"
)

// Chains of the searches below, and their alignments as a ColabFold server gives them.
const (
	chain1 = "MKTAYIAKQR"
	chain2 = "GSHMLEDPV"

	// chain1 searched alone: its uniref block and its environmental block, each starting
	// with the chain; a hit has an insertion (lower-case), and the environmental block
	// repeats a uniref hit.
	unpaired1Alone = ">101\nMKTAYIAKQR\n>UniRef100_A1\nMKTAYIgsAKQR\n>UniRef100_A2\nMRTAYLAKQ-\n" +
		">101\nMKTAYIAKQR\n>MGYP001\nMKSAYIAKHR\n>MGYP002\nMRTAYLAKQ-\n"
)

// heteromer is a search of chain1 and chain2 together. Each paired A3M has two blocks (the
// server's pairgreedy-env), row i of both from one taxon: in the first block chain2 has no
// hit in the second taxon, in the second chain1 none in the last, so greedy pairing pads
// them with gaps.
var heteromer = align.Result{
	Chains: []string{chain1, chain2},
	Unpaired: []string{
		">101\nMKTAYIAKQR\n>UniRef100_A1\nMKTAYIgsAKQR\n>UniRef100_A2\nMRTAYLAKQ-\n>101\nMKTAYIAKQR\n>MGYP001\nMKSAYIAKHR\n",
		">102\nGSHMLEDPV\n>UniRef100_B1\nGSHLLEDPV\n>102\nGSHMLEDPV\n>MGYP003\n-SHMLEEPV\n",
	},
	Paired: []string{
		">101\nMKTAYIAKQR\n>UniRef100_P1\nMKTAFIAKQR\n>UniRef100_P2\nMRTAYIgAKQK\n>101\nMKTAYIAKQR\n>UniRef100_P4\n----------\n",
		">102\nGSHMLEDPV\n>UniRef100_Q1\nGSHLLEDPV\n>UniRef100_Q2\n---------\n>102\nGSHMLEDPV\n>UniRef100_Q4\nGAHMLEEPV\n",
	},
	Source: testSource,
}

var alone = align.Result{Chains: []string{chain1}, Unpaired: []string{unpaired1Alone}, Source: testSource}

// The rows Boltz reads from the CSVs written for these searches (parse_csv: a row whose
// residues repeat an earlier row's is left out, insertions take no column), which both the
// stand-in and Boltz itself (TestUpstreamReadsSearchedAlignments) must read.
var (
	// chain1 alone: the environmental block's query and its repeat of a uniref hit go.
	readAlone = []msaRow{{-1, "MKTAYIAKQR"}, {-1, "MKTAYIAKQR"}, {-1, "MRTAYLAKQ-"}, {-1, "MKSAYIAKHR"}}
	// The heteromer: keys 0-3 of the paired A3Ms, where row 4 of chain1 and row 2 of chain2
	// are gaps and left out, and row 3, the second block's query, repeats row 0; then the
	// unpaired rows that repeat nothing before them.
	readHetero1 = []msaRow{{0, "MKTAYIAKQR"}, {1, "MKTAFIAKQR"}, {2, "MRTAYIAKQK"}, {-1, "MKTAYIAKQR"}, {-1, "MRTAYLAKQ-"}, {-1, "MKSAYIAKHR"}}
	readHetero2 = []msaRow{{0, "GSHMLEDPV"}, {1, "GSHLLEDPV"}, {4, "GAHMLEEPV"}, {-1, "-SHMLEEPV"}}
)

// TestSearchedAlignmentsGolden pins the Boltz input the engine writes for targets whose
// alignments were searched ahead of the run: the YAML and every file it names
// (testdata/searched/<name>.golden). go test -run TestSearchedAlignmentsGolden -update
// rewrites them.
func TestSearchedAlignmentsGolden(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, input string
		searched    align.Result
	}{
		// One chain: every row unpaired (key -1), the query first, as Boltz writes a
		// search of one sequence.
		{"monomer", "sequences:\n  - protein: {id: A, sequence: " + chain1 + "}\n", alone},
		// Two copies of one chain are one Boltz entity and one search of one sequence:
		// nothing to pair, one file that both copies read.
		{"homodimer", "sequences:\n  - protein: {id: [A, B], sequence: " + chain1 + "}\n", alone},
		// Two distinct chains: the paired rows keyed by their row in the paired A3Ms, a row
		// of gaps left out with its key; then the unpaired rows with key -1, without the
		// query, which the paired part begins with. C repeats A's sequence in an entry of
		// its own, so it reads A's file; the ligand has no alignment.
		{"heteromer", "sequences:\n  - protein: {id: A, sequence: " + chain1 + "}\n  - protein: {id: B, sequence: " + chain2 + "}\n" +
			"  - ligand: {id: L, ccd: SAH}\n  - protein: {id: C, sequence: " + chain1 + "}\n", heteromer},
		// A searched alone beside B's alignment sent with the input.
		{"searched-and-sent", "sequences:\n  - protein: {id: A, sequence: " + chain1 + "}\n" +
			"  - protein:\n      id: B\n      sequence: " + chain2 + "\n      msa: |\n        >query\n        " + chain2 +
			"\n        >hit\n        GSHMLQDPV\n", alone},
		// A and B searched together beside C's CSV sent with keys up to 5: the searched
		// keys start at 6, so that none of A's or B's rows pairs with one of C's.
		{"paired-beside-sent-csv", "sequences:\n  - protein: {id: A, sequence: " + chain1 + "}\n  - protein: {id: B, sequence: " + chain2 + "}\n" +
			"  - protein:\n      id: C\n      sequence: WWYKE\n      msa: |\n        sequence,key\n        WWYKE,0\n        WWFKE,5\n        WW-KE,\n", heteromer},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cx, err := bio.ParseInput(tt.name, tt.input)
			if err != nil {
				t.Fatal(err)
			}
			if err := New(Config{}).CheckInput("boltz2", cx, map[string]any{"use_msa_server": true}); err != nil {
				t.Fatalf("Boltz would refuse the input: %v", err)
			}
			if _, ok := align.Find([]align.Result{tt.searched}, cx.SearchChains()); !ok {
				t.Fatalf("the search given is not the target's (%v)", cx.SearchChains())
			}
			dir, files := writeInput(t, cx, tt.searched)
			golden.Check(t, filepath.Join("testdata", "searched", tt.name+".golden"), []byte(written(t, filepath.Join(dir, tt.name+".yaml"), files)))
		})
	}
}

// TestSearchedCSVLimits: Boltz's bounds, as compute_msa applies them: at most 8192 paired
// rows counted before the rows of gaps are left out, and at most 16384 rows in all, the
// unpaired ones cut before the query is left out of them.
func TestSearchedCSVLimits(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                     string
		paired, gapsEvery        int // paired rows in the A3M (0: none), every how many a row of gaps
		unpaired                 int
		wantPaired, wantUnpaired int
		wantLastPairedKey        int
	}{
		{"few rows", 10, 4, 20, 8, 19, 9},                            // rows 4 and 8 are gaps
		{"paired rows beyond 8192", 9000, 1000, 100, 8184, 99, 8191}, // 8 rows of gaps among the first 8192
		{"rows beyond 16384", 5000, 0, 20000, 5000, 16384 - 5000 - 1, 4999},
		{"unpaired only, beyond 16384", 0, 0, 20000, 0, 16384, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := align.Result{Chains: []string{"MK"}, Unpaired: []string{rowsA3M(tt.unpaired, 0)}}
			if tt.paired > 0 {
				res.Paired = []string{rowsA3M(tt.paired, tt.gapsEvery)}
			}
			csvs, err := searchedCSVs(res, 0)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(csvs[0], "\n")
			if lines[0] != "key,sequence" {
				t.Fatalf("header %q", lines[0])
			}
			paired, unpaired, lastKey := 0, 0, -1
			for _, l := range lines[1:] {
				var key int
				if _, err := fmt.Sscanf(l, "%d,", &key); err != nil {
					t.Fatalf("row %q: %v", l, err)
				}
				if key == -1 {
					unpaired++
					continue
				}
				paired, lastKey = paired+1, key
			}
			if paired != tt.wantPaired || unpaired != tt.wantUnpaired || lastKey != tt.wantLastPairedKey {
				t.Errorf("%d paired rows (last key %d) and %d unpaired; want %d (last key %d) and %d",
					paired, lastKey, unpaired, tt.wantPaired, tt.wantLastPairedKey, tt.wantUnpaired)
			}
			if first := lines[1]; !strings.HasSuffix(first, ",MK") {
				t.Errorf("the first row is %q, not the query", first)
			}
		})
	}
}

// rowsA3M is an A3M of the chain MK and n-1 hits, each row i a row of gaps when gapsEvery
// divides it.
func rowsA3M(n, gapsEvery int) string {
	var b strings.Builder
	b.WriteString(">101\nMK\n")
	for i := 1; i < n; i++ {
		row := "MR"
		if gapsEvery > 0 && i%gapsEvery == 0 {
			row = "--"
		}
		fmt.Fprintf(&b, ">hit%d\n%s\n", i, row)
	}
	return b.String()
}

func TestSearchedCSVRefusesWhatNoSearchWrites(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		res  align.Result
		want string
	}{
		{"an alignment that does not start with its chain",
			align.Result{Chains: []string{"MK"}, Unpaired: []string{">101\nGG\n"}}, "the unpaired alignment of chain 1: its first row is not the chain's sequence"},
		{"a paired alignment that does not start with its chain",
			align.Result{Chains: []string{"MK", "GG"}, Unpaired: []string{">101\nMK\n", ">102\nGG\n"}, Paired: []string{">101\nMK\n", ">102\nMK\n"}},
			"the paired alignment of chain 2: its first row is not the chain's sequence"},
		{"text before the first header",
			align.Result{Chains: []string{"MK"}, Unpaired: []string{"MK\n>101\nMK\n"}}, `it begins with "MK", not a '>' header`},
		{"fewer alignments than chains",
			align.Result{Chains: []string{"MK", "GG"}, Unpaired: []string{">101\nMK\n"}}, "a search result of 2 chains has 1 unpaired and 0 paired"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := searchedCSVs(tt.res, 0); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestKeyBaseAbove(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, input string
		want        int
	}{
		{"no alignment sent", "sequences:\n  - protein: {id: A, sequence: MK}\n", 0},
		{"an A3M sent, which Boltz keys -1", "sequences:\n  - protein:\n      id: A\n      sequence: MK\n      msa: |\n        >q\n        MK\n", 0},
		{"a CSV with its key column second", "sequences:\n  - protein:\n      id: A\n      sequence: MK\n      msa: |\n        sequence,key\n        MK,3\n        MR,\n", 4},
		{"two CSVs: above both", "sequences:\n  - protein:\n      id: A\n      sequence: MK\n      msa: |\n        key,sequence\n        7,MK\n" +
			"  - protein:\n      id: B\n      sequence: GG\n      msa: |\n        key,sequence\n        -1,GG\n        12,GA\n", 13},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cx, err := bio.ParseInput("t", tt.input)
			if err != nil {
				t.Fatal(err)
			}
			if got := keyBaseAbove(cx); got != tt.want {
				t.Errorf("keyBaseAbove = %d, want %d", got, tt.want)
			}
		})
	}
}
