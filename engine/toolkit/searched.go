package toolkit

import (
	"fmt"
	"strings"

	"github.com/chaperone-bio/chaperone/align"
	"github.com/chaperone-bio/chaperone/bio"
)

// Searched returns the alignments that the alignment stage searched for the target cx,
// found among the run's results (engine.Run.Alignments): nil when the target needs none
// (useServer, the job's use_msa_server, off, or no chain left to the search). A target
// whose search is missing fails the job before tool starts, in the same words for every
// engine: no tool may search in the stage's stead. Only a job queued before the stage
// existed reaches a worker so.
func Searched(cx *bio.Complex, useServer bool, results []align.Result, tool string) (*align.Result, error) {
	chains := cx.SearchChains()
	if !useServer || len(chains) == 0 {
		return nil, nil
	}
	res, ok := align.Find(results, chains)
	if !ok {
		var ids []string
		for _, en := range cx.Entities {
			if en.Kind == bio.Protein && en.MSA.Source == bio.MSAAuto {
				ids = append(ids, en.IDs...)
			}
		}
		return nil, fmt.Errorf("target %s: use_msa_server is on, but the alignments of its protein chain(s) %s were not "+
			"searched before the job reached the worker; %s never searches them itself, so the job was not run: submit it again",
			cx.Name, strings.Join(ids, ", "), tool)
	}
	return &res, nil
}
