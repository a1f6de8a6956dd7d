package e2e

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/store"
)

// TestCLITakesTheStartOfAnID: every job command takes the first 8 characters of an id or
// more, as the progress line shows them, when they start the id of one job of the
// caller's; a start shared by two of its jobs is a usage error that names both.
func TestCLITakesTheStartOfAnID(t *testing.T) {
	t.Parallel()
	p := startProxied(t)
	key, keyID := p.issueKey("ids")
	other, otherID := p.issueKey("other")
	mine := []string{"a1b2c3d4" + strings.Repeat("0", 24), "a1b2c3d4" + strings.Repeat("1", 24), "feedbeef" + strings.Repeat("2", 24)}
	for _, id := range mine {
		p.storeJob(t, id, keyID)
	}
	p.storeJob(t, "0ddba11c"+strings.Repeat("3", 24), otherID)
	withKey := []string{"CHAPERONE_API_KEY=" + key}

	// The progress line's id, as a user copies it from there.
	r := p.runCLI(t, "", withKey, "predict", "--sequence", "MKTAYIAKQ", "--name", "ok", "--wait").expect(t, exitOK)
	shown := regexp.MustCompile(`job ([0-9a-f]{8}) `).FindStringSubmatch(r.stderr)
	mustf(t, shown != nil, "the progress line shows no id: %q", r.stderr)
	r = p.runCLI(t, "", withKey, "jobs", "get", shown[1]).expect(t, exitOK)
	mustf(t, regexp.MustCompile(`(?m)^id\s+`+shown[1]+`[0-9a-f]{24}$`).MatchString(r.stdout), "jobs get %s: %s", shown[1], r.stdout)

	tests := []struct {
		name string
		env  []string
		args []string
		code int
		says string // on stdout for success, else on stderr
	}{
		{"the start of one job's id", withKey, []string{"jobs", "get", "feedbeef"}, exitOK, mine[2]},
		{"in capitals", withKey, []string{"jobs", "get", "FEEDBEEF2"}, exitOK, mine[2]},
		{"enough of it to tell two apart", withKey, []string{"jobs", "cancel", "a1b2c3d41"}, exitOK, "canceled " + mine[1]},
		{"the start of two jobs' ids", withKey, []string{"jobs", "get", "a1b2c3d4"}, exitUsage,
			"2 of your jobs have ids that start with a1b2c3d4 (" + mine[1] + ", " + mine[0] + "): give more of the id"},
		{"too short", withKey, []string{"jobs", "logs", "a1b2c3"}, exitUsage, "give the whole id, or its first 8 characters or more"},
		{"the start of another owner's job", withKey, []string{"jobs", "get", "0ddba11c"}, exitNotFound, "404"},
		{"that owner's own", []string{"CHAPERONE_API_KEY=" + other}, []string{"jobs", "results", "0ddba11c"}, exitOK, "not ready"},
		{"delete", withKey, []string{"jobs", "delete", "a1b2c3d40"}, exitOK, "deleted " + mine[0]},
	}
	for _, tt := range tests {
		r := p.runCLI(t, "", tt.env, tt.args...).expect(t, tt.code)
		out := r.stderr
		if tt.code == exitOK {
			out = r.stdout
		}
		mustf(t, strings.Contains(out, tt.says), "%s: chaperone %v says %q; want %q", tt.name, tt.args, out, tt.says)
	}
}

// storeJob puts a queued job of the given id and owning key straight into the store: ids
// are random when the API makes them, and this test needs two that start alike. Its model
// is one the test worker does not run, so that it stays queued.
func (p *proxied) storeJob(t *testing.T, id, keyID string) {
	t.Helper()
	j := &job.Job{ID: id, Owner: job.Owner{Kind: job.OwnerKey, ID: keyID}, Kind: job.PredictKind, Model: "openfold3",
		RunModel: "openfold3", Params: map[string]any{}, Input: job.Input{Sequence: "MKTAYIAKQ"}, Status: job.Queued,
		Total: 1, CreatedAt: time.Now()}
	if _, err := p.Store.CreateJob(context.Background(), j, store.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
