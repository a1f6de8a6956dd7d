package boltz

import (
	"fmt"
	"slices"
	"strings"

	"github.com/chaperone-bio/chaperone/align"
	"github.com/chaperone-bio/chaperone/job"
)

// What the tests' alignment stage claims to have searched on.
var testSource = align.Source{Server: "https://msa.example.org", Mode: "env", Pairing: "pairgreedy-env"}

// stage is what chaperone's alignment stage hands the engine for j: a result for each of
// the job's searches (searchedAhead).
func stage(j *job.Job) []align.Result {
	var out []align.Result
	for _, s := range j.Searches {
		out = append(out, searchedAhead(s.Chains...))
	}
	return out
}

// searchedAhead is a made-up search of chains shaped as a ColabFold server answers it
// (align/doc.go): per distinct chain an unpaired A3M of a uniref block and an
// environmental block, each starting with the chain (numbered 101, 102, … as the server
// numbers them) and the second holding a hit of the first again; and for two or more
// distinct chains, paired A3Ms of equal length, in which the last chain has no hit in the
// second taxon (a row of gaps, as greedy pairing pads it).
func searchedAhead(chains ...string) align.Result {
	var distinct []string
	for _, c := range chains {
		if !slices.Contains(distinct, c) {
			distinct = append(distinct, c)
		}
	}
	r := align.Result{Chains: distinct, Source: testSource}
	for i, seq := range distinct {
		id := fmt.Sprintf(">%d\n%s\n", 101+i, seq)
		r.Unpaired = append(r.Unpaired, id+fmt.Sprintf(">UniRef100_U%d\n%s\n>UniRef100_V%d\n%s\n", i, homolog(seq, 1), i, homolog(seq, 2))+
			id+fmt.Sprintf(">MGYP%d\n%s\n>MGYP%d_again\n%s\n", i, homolog(seq, 3), i, homolog(seq, 1)))
	}
	if len(distinct) > 1 {
		for i, seq := range distinct {
			second := homolog(seq, 5)
			if i == len(distinct)-1 {
				second = strings.Repeat("-", len(seq))
			}
			r.Paired = append(r.Paired, fmt.Sprintf(">%d\n%s\n>UniRef100_P%d\n%s\n>UniRef100_Q%d\n%s\n", 101+i, seq, i, homolog(seq, 4), i, second))
		}
	}
	return r
}

// homolog is a made-up relative of seq: every third residue from k on, changed.
func homolog(seq string, k int) string {
	const letters = "ACDEFGHIKLMNPQRSTVWY"
	b := []byte(seq)
	for i := k % 3; i < len(b); i += 3 {
		b[i] = letters[(strings.IndexByte(letters, b[i])+k)%len(letters)]
	}
	return string(b)
}
