package boltz

import (
	"strings"
	"testing"

	"github.com/chaperone-bio/chaperone/internal/enginerun"
	"github.com/chaperone-bio/chaperone/job"
)

// Boltz's data loader, when it cannot prepare a target for the model, says so and predicts
// the loop's first target in its place; when the first target is the one it cannot
// prepare, that repeats without end. The stand-in's unprep… targets do both (it orders its
// loop by name, so the first is known); the real tool is TestUpstreamUnprepared's.
func TestRunUnpreparedTargets(t *testing.T) {
	t.Parallel()
	const why = "Boltz could not prepare it for the model and skipped it: " +
		"Featurizer failed on %s with error a cannot be empty unless no samples are taken"
	tests := []struct {
		name    string
		targets string
		failed  []string // the rows that fail, in the order of the job
		rerun   bool     // boltz ran again without the target it retried without end
	}{
		{"not the first of the loop", `{"name": "a-good", "content": ">A|protein|empty\nMKTAYIAK\n"},
			{"name": "unprep-b", "content": ">A|protein|empty\nMKTAY\n"}`, []string{"unprep-b"}, false},
		{"the first of the loop", `{"name": "unprep-a", "content": ">A|protein|empty\nMKTAY\n"},
			{"name": "z-good", "content": ">A|protein|empty\nMKTAYIAK\n"},
			{"name": "unprep-b", "content": ">A|protein|empty\nGSGSG\n"}`, []string{"unprep-a", "unprep-b"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			out := h.mustRun(enginerun.PredictJob(t, `{"targets": [`+tt.targets+`], "params": {"use_msa_server": false}}`))
			log := h.Log.String()
			rows := map[string]job.PredictionRow{}
			for _, r := range out.Rows {
				rows[r.ID] = r
			}
			for id, r := range rows {
				want := ""
				for _, f := range tt.failed {
					if f == id {
						want = strings.ReplaceAll(why, "%s", id)
					}
				}
				switch {
				case want == "" && r.Status != job.RowOK:
					t.Errorf("%s: %+v, want ok\n%s", id, r, log)
				case want != "" && (r.Status != job.RowFailed || !strings.HasPrefix(r.Error, want)):
					t.Errorf("%s: %+v, want failed with %q", id, r, want)
				}
			}
			// Stopped at the second message (give or take the time a stop takes), not after
			// the stand-in's thousand.
			if n := strings.Count(log, "Featurizer failed on unprep-a"); n > 10 {
				t.Errorf("Boltz said %d times that it could not prepare unprep-a: the engine let it recurse", n)
			}
			if got := strings.Contains(log, "running boltz again over the 1 target(s) left"); got != tt.rerun {
				t.Errorf("ran again %v, want %v:\n%s", got, tt.rerun, log)
			}
			if tt.rerun && !strings.Contains(rows["unprep-a"].Error, "retries without end") {
				t.Errorf("the row of the target Boltz retried does not say so: %q", rows["unprep-a"].Error)
			}
		})
	}
}
