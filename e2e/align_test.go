package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/align"
	"github.com/chaperone-bio/chaperone/align/aligntest"
	"github.com/chaperone-bio/chaperone/app"
)

// withColabFold makes the server search on a stand-in ColabFold server that answers after
// delay, polled often and retried briefly, so that a test sees every step without waiting
// for the production intervals.
func withColabFold(t *testing.T, delay time.Duration) (option, *aligntest.ColabFold) {
	msa := aligntest.NewColabFold(delay)
	t.Cleanup(msa.Close)
	searcher, err := align.NewRemote(align.RemoteConfig{URL: msa.URL, Poll: 20 * time.Millisecond,
		Retry: align.Retry{Attempts: 2, Backoff: 20 * time.Millisecond, MaxBackoff: 20 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	return func(c *app.Config) { c.Searcher = searcher }, msa
}

const aligned = "MKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQ"

func TestAPredictionIsAlignedBeforeAWorkerTakesIt(t *testing.T) {
	t.Parallel()
	opt, msa := withColabFold(t, 2*time.Second)
	s := startServer(t, opt)
	first := s.create("/v1/predictions", map[string]any{"model": "boltz2", "sequence": aligned})
	j := s.waitFor(first, 20*time.Second, func(j map[string]any) bool { return j["stage"] == "msa" || j["status"] != "queued" })
	queue, _ := j["queue"].(map[string]any)
	mustf(t, j["status"] == "queued" && queue["reason"] == "aligning" && j["waiting_for_device"] == nil,
		"while its alignments are searched the job shows %v; want queued, stage msa, queue.reason aligning", j)
	s.waitStatus(first, "succeeded")

	second := s.create("/v1/predictions", map[string]any{"model": "boltz2", "sequence": aligned})
	s.waitStatus(second, "succeeded")
	mustf(t, msa.Searches(aligned) == 1, "the server searched the chain %d times for two jobs; want 1", msa.Searches(aligned))

	single := s.create("/v1/predictions", map[string]any{"model": "boltz2", "sequence": aligned + "W", "params": map[string]any{"use_msa_server": false}})
	s.waitStatus(single, "succeeded")
	mustf(t, msa.Total() == 1, "a job with use_msa_server false was searched: %d searches in all", msa.Total())

	doc := s.get("/v1/models").expect(http.StatusOK).json()
	mustf(t, doc["msa_server"] == msa.URL && strings.Contains(doc["msa_search"].(string), "server "+msa.URL),
		"/v1/models says msa_server %v, msa_search %v; want the stand-in", doc["msa_server"], doc["msa_search"])
}

func TestAFailedSearchFailsTheJobInTheServersWords(t *testing.T) {
	t.Parallel()
	opt, msa := withColabFold(t, 0)
	msa.FailNext("ERROR", "RATELIMIT")
	s := startServer(t, opt)
	id := s.create("/v1/predictions", map[string]any{"model": "boltz2", "sequence": aligned})
	j := s.waitStatus(id, "failed")
	msg, _ := j["error"].(string)
	mustf(t, j["stage"] == "msa" && strings.Contains(msg, "alignment search failed") && strings.Contains(msg, "the stand-in limits this address"),
		"job %v; want failed at stage msa with the server's words", j)
}
