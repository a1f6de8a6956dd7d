package openfold3

import (
	"strings"
	"testing"

	"github.com/chaperone-bio/chaperone/job"
)

// TestFailuresAreReadFromWhatTheToolWrote: OpenFold3 exits 0 after failing queries; each
// is a failed row with OpenFold3's own words, from its summary, its error log and what it
// printed.
func TestFailuresAreReadFromWhatTheToolWrote(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{})
	j := newJob(t, `{"targets": [{"name": "good", "content": ">A|protein|empty\nMKTAYIAK\n"},
		{"name": "fail-ccd", "content": ">A|protein|empty\nMKTAYIAK\n"},
		{"name": "oom-big", "content": ">A|protein|empty\nGGSGG\n"}]}`)
	out, err := h.run(j)
	if err != nil {
		t.Fatalf("%v\n%s", err, h.Log.String())
	}
	want := map[string]string{
		"good":     "",
		"fail-ccd": "OpenFold3 failed it: ValueError: Unknown CCD code ZZZ for chain L",
		"oom-big":  "OpenFold3 ran out of GPU memory predicting it (OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB.",
	}
	for _, r := range out.Rows {
		switch w := want[r.ID]; {
		case w == "" && r.Status != job.RowOK:
			t.Errorf("%s: %+v", r.ID, r)
		case w != "" && (r.Status != job.RowFailed || !strings.HasPrefix(r.Error, w) || r.Scores != nil):
			t.Errorf("%s: row %+v\nwant the error %q", r.ID, r, w)
		}
	}
	for _, f := range out.Files {
		if f.Target != "good" {
			t.Errorf("a failed target has the artifact %+v", f.Artifact)
		}
	}
}

func TestEveryTargetFailing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, input, want string
	}{
		{"every query failed", `[{"name": "fail-a", "content": ">A|protein|empty\nMK\n"}, {"name": "oom-b", "content": ">A|protein|empty\nMK\n"}]`,
			"run_openfold predicted none of the 2 target(s): fail-a: OpenFold3 failed it: ValueError"},
		{"the tool crashed", `[{"name": "crash", "content": ">A|protein|empty\nMK\n"}]`, "run_openfold failed: exit code 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, Config{})
			_, err := h.run(newJob(t, `{"targets": `+tt.input+`}`))
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q\n%s", err, tt.want, h.Log.String())
			}
		})
	}
}

// TestACrashAfterSomeTargets: targets written before the crash are kept.
func TestACrashAfterSomeTargets(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Config{})
	out, err := h.run(newJob(t, `{"targets": [{"name": "a-first", "content": ">A|protein|empty\nMK\n"},
		{"name": "crash", "content": ">A|protein|empty\nMK\n"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if out.Rows[0].Status != job.RowOK || out.Rows[1].Status != job.RowFailed ||
		!strings.HasPrefix(out.Rows[1].Error, "run_openfold exited before it finished this target (exit code 1)") {
		t.Errorf("rows %+v", out.Rows)
	}
}
