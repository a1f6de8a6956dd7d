package main

import (
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/chaperone-bio/chaperone/internal/standin"
)

// alignment is what the inference reads of a protein chain's alignment files, as
// InferenceMSAFeaturizer.make_msa_feature (data/msa/msa_featurizer.py) does: the files
// named by unpairedMsaPath and pairedMsaPath of its entity.
type alignment struct {
	sequence string   // the chain's
	unpaired []string // the unpaired rows without repeats, insertions left out
	species  []string // the species of each paired row, "" where its header gives none
}

// uniRefSpecies is the species of a row as the tools read it from a UniRef100 header
// (data/msa/msa_utils.py, _UNIREF_REGEX).
var uniRefSpecies = regexp.MustCompile(`^UniRef100_[^_]+_([^_/]+)`)

// readAlignment reads the alignment files a protein entity names. A file that cannot be
// opened fails the target as Python's open does, and so does a file whose first row is
// not as long as the chain (RawMsa._verify_query).
func readAlignment(body map[string]any, seq string) (*alignment, error) {
	a := &alignment{sequence: seq}
	for _, key := range []string{"unpairedMsaPath", "pairedMsaPath"} {
		path, ok := body[key].(string)
		if !ok {
			continue
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("[Errno 2] No such file or directory: '%s'", path)
		}
		headers, rows, _ := standin.ParseA3M(string(b)) // lines before the first header are passed over
		if len(rows) == 0 || len(rows[0]) != len(seq) {
			return nil, fmt.Errorf("MSA query/size mismatch for protein, falling back to query only.")
		}
		if key == "pairedMsaPath" {
			for _, h := range headers {
				species := ""
				if m := uniRefSpecies.FindStringSubmatch(strings.TrimSpace(h)); m != nil {
					species = m[1]
				}
				a.species = append(a.species, species)
			}
			continue
		}
		seen := map[string]bool{}
		for _, row := range rows {
			if !seen[row] {
				seen[row] = true
				a.unpaired = append(a.unpaired, row)
			}
		}
	}
	return a, nil
}

// msaRows is the N_msa the tool logs for a target, counted as its featurizer builds the
// alignment (FeatureAssemblyLine.assemble), short of its clean-up: with two or more
// distinct protein sequences, the paired block (the chains' first rows, and for each
// species found in two or more chains as many rows as the chain with fewest rows of it
// has, pair_chains_by_species) above the deepest chain's unpaired rows. Rows a header
// gives no species for are never paired, so this tells a paired alignment the tools pair
// from one they would drop. 1 without alignments.
func msaRows(chains []chain) int {
	distinct := map[string]bool{}
	deepest := 1
	for _, c := range chains {
		if c.msa != nil {
			distinct[c.msa.sequence] = true
			deepest = max(deepest, len(c.msa.unpaired))
		}
	}
	if len(distinct) < 2 {
		return deepest
	}
	chainsOf, fewest := map[string]int{}, map[string]int{}
	for _, c := range chains {
		if c.msa == nil {
			continue
		}
		rows := map[string]int{}
		for _, s := range c.msa.species {
			if s != "" {
				rows[s]++
			}
		}
		for s, n := range rows {
			chainsOf[s]++
			if f, ok := fewest[s]; !ok || n < f {
				fewest[s] = n
			}
		}
	}
	paired := 1
	for s, n := range chainsOf {
		if n >= 2 {
			paired += fewest[s]
		}
	}
	return paired + deepest
}
