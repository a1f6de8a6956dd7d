package boltzgen

import (
	"path/filepath"
	"strconv"
	"testing"

	"github.com/chaperone-bio/chaperone/engine/boltzgen/boltzgentest"
	"github.com/chaperone-bio/chaperone/job"
)

// TestUpstreamFiltersRankRatherThanDrop: BoltzGen's own filtering step, given designs of
// which none passes its filters, still keeps its budget of them, each with pass_filters
// False (task/filter/filter.py:396-630); the engine reads that set as designs that say so,
// and the stand-in's "filtered" behaviour gives the same.
func TestUpstreamFiltersRankRatherThanDrop(t *testing.T) {
	env := realBoltzGen(t)
	const n, budget = 4, 2
	work := t.TempDir()
	if out, err := realCommand(t, env, work, "python", mustAbs(t, filepath.Join("testdata", "filter.py")), work, strconv.Itoa(n), strconv.Itoa(budget)); err != nil {
		t.Fatalf("BoltzGen's Filter: %v\n%s", err, out)
	}
	real, err := readDesigns(filepath.Join(work, "final_ranked_designs"), budget, newMonitor(func(job.Progress) {}, n), nil)
	if err != nil {
		t.Fatalf("reading BoltzGen's final set: %v", err)
	}
	spec := boltzgentest.Marker + boltzgentest.Filtered + "\nentities:\n  - protein: {id: B, sequence: 12..20}\n  - ligand: {id: L, ccd: SAH}\n"
	r := run(t, newJob(t, `{"protocol": "protein-anything", "spec": `+jsonText(spec)+`, "params": {"num_designs": 4, "budget": 2}}`))
	if r.Err != nil {
		t.Fatalf("the stand-in's run where no design passes the filters: %v", r.Err)
	}
	for who, designs := range map[string][]job.Design{"BoltzGen": real.Designs, "the stand-in": r.Out.Designs} {
		if len(designs) != budget {
			t.Errorf("%s: %d designs, want the budget of %d", who, len(designs), budget)
		}
		for i, d := range designs {
			if d.Metrics["pass_filters"] != false || d.Rank == nil || *d.Rank != i+1 {
				t.Errorf("%s: design %s has rank %v and pass_filters %v; want %d and false", who, d.ID, d.Rank, d.Metrics["pass_filters"], i+1)
			}
		}
	}
}
