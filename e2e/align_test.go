package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/align"
	"github.com/chaperone-bio/chaperone/align/aligntest"
	"github.com/chaperone-bio/chaperone/aligner"
	"github.com/chaperone-bio/chaperone/app"
	"github.com/chaperone-bio/chaperone/artifact"
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

	metrics := string(s.get("/metrics").expect(http.StatusOK).Body)
	for _, want := range []string{`chaperone_alignment_searches_total{how="searched"} 1`, `chaperone_alignment_searches_total{how="cache"} 1`,
		`chaperone_alignment_jobs_total{result="aligned"} 2`, `chaperone_alignment_jobs_total{result="failed"} 0`} {
		mustf(t, strings.Contains(metrics, want), "/metrics lacks %s:\n%s", want, metrics)
	}

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

// A deployment that searches with MMseqs2 on its own databases (here the tests' small
// ones) sends no sequence anywhere, says so in /v1/models, and pairs a heteromer's chains.
func TestALocalSearchKeepsSequencesOnTheMachine(t *testing.T) {
	t.Parallel()
	local, err := align.NewLocal(align.LocalConfig{Dir: aligntest.Databases(t), DB: "uniref", EnvDB: "env", Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	s := startServer(t, func(c *app.Config) { c.Searcher = local })
	id := s.create("/v1/predictions", map[string]any{"model": "boltz2",
		"input": ">A|protein\n" + aligntest.ChainA + "\n>B|protein\n" + aligntest.ChainB + "\n"})
	s.waitFor(id, 3*time.Minute, func(j map[string]any) bool { return j["status"] == "succeeded" || j["status"] == "failed" })
	j := s.get("/v1/jobs/" + id).expect(http.StatusOK).json()
	mustf(t, j["status"] == "succeeded", "job %v", j)
	mustf(t, s.msa.Total() == 0, "a local search sent %d searches to a server", s.msa.Total())
	// What the workers got: the shared cache holds both chains' alignments, paired on the
	// ten organisms the test databases give both of them (testdata/README of aligntest).
	cache := aligner.NewCache(s.Artifacts.(artifact.Shared), local.Source(), aligner.Limits{})
	res, ok, err := cache.Get(context.Background(), []string{aligntest.ChainA, aligntest.ChainB})
	mustf(t, err == nil && ok && len(res.Paired) == 2, "the cache lacks the heteromer's alignments: %v, %v", ok, err)
	for i, a3m := range res.Paired {
		mustf(t, strings.Count(a3m, ">") == 11, "chain %d's paired alignment has %d rows; want the query and 10 organisms:\n%s", i+1, strings.Count(a3m, ">"), a3m)
	}

	doc := s.get("/v1/models").expect(http.StatusOK).json()
	search, _ := doc["msa_search"].(string)
	mustf(t, doc["msa_server"] == "" && strings.HasPrefix(search, "local mmseqs ") && strings.HasSuffix(search, "; mode env; pairing paircomplete"),
		"/v1/models says msa_server %q, msa_search %q; want a local search", doc["msa_server"], search)
}
