package e2e

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// attemptEnds are the lines that may close an attempt's part of a run log: how it ended.
var attemptEnds = regexp.MustCompile(`^== chaperone: (job succeeded in [0-9.]+ s|job failed: .+|attempt \d+ (canceled by its owner|lost: .+|handed back: .+); .+) ==$`)

// attemptOpens is the line that opens an attempt's part of a run log (a Slurm executor's
// and then its batch job's, for one attempt).
var attemptOpens = regexp.MustCompile(`^== chaperone: attempt (\d+) of `)

// attemptEndings splits a run log where its attempt changes and returns the last line of
// each attempt's part, in order.
func attemptEndings(log string) []string {
	var ends []string
	lines := strings.Split(strings.TrimSuffix(log, "\n"), "\n")
	attempt := ""
	for i, l := range lines {
		m := attemptOpens.FindStringSubmatch(l)
		if m == nil || m[1] == attempt {
			continue
		}
		if attempt != "" {
			ends = append(ends, lines[i-1])
		}
		attempt = m[1]
	}
	return append(ends, lines[len(lines)-1])
}

// everyAttemptEnds checks that each of the attempts of a job's log ends with the line that
// says how it ended, and that the i-th says wants[i].
func (s *server) everyAttemptEnds(id string, wants ...string) {
	s.t.Helper()
	log := string(s.get("/v1/jobs/" + id + "/logs").expect(http.StatusOK).Body)
	ends := attemptEndings(log)
	mustf(s.t, len(ends) == len(wants), "job %s: %d attempts in its log, want %d:\n%s", id, len(ends), len(wants), log)
	for i, end := range ends {
		mustf(s.t, attemptEnds.MatchString(end) && strings.Contains(end, wants[i]),
			"job %s: attempt %d of its log ends %q, want a closing line with %q:\n%s", id, i+1, end, wants[i], log)
	}
}

func TestEveryAttemptsLogSaysHowItEnded(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	ok, failed, canceled := s.predict("ok"), s.predict("fail"), s.predict("hang")
	s.waitStatus(ok, "succeeded")
	s.waitStatus(failed, "failed")
	s.waitFor(canceled, 20*time.Second, func(j map[string]any) bool {
		return strings.Contains(string(s.get("/v1/jobs/"+canceled+"/logs").Body), "started")
	})
	s.post("/v1/jobs/"+canceled+"/cancel", nil).expect(http.StatusOK)
	s.post("/v1/jobs/"+canceled+"/cancel", nil).expect(http.StatusOK) // says nothing more

	s.everyAttemptEnds(ok, "job succeeded in")
	s.everyAttemptEnds(failed, "job failed: exit code 3 (its output is above)")
	s.everyAttemptEnds(canceled, "attempt 1 canceled by its owner; the job stops")
}
