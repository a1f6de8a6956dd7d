package e2e

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// tryCreate sends one create with an idempotency key and reports the job id, or false when
// no answer came (the server died under it) or the answer was not a create's.
func tryCreate(base, key, name string) (string, bool) {
	req, err := http.NewRequest(http.MethodPost, base+"/v1/predictions",
		strings.NewReader(fmt.Sprintf(`{"sequence":"MKTAYIAKQ","name":%q}`, name)))
	if err != nil {
		return "", false
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	res, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return "", false
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusAccepted && res.StatusCode != http.StatusOK {
		return "", false
	}
	loc := res.Header.Get("Location")
	return strings.TrimPrefix(loc, "/v1/jobs/"), loc != ""
}

// TestChaosRandomSIGKILLs is the chaos suite: a server process is SIGKILLed at random
// moments, CHAOS_ROUNDS times (default 6), while clients create jobs (retrying unanswered
// creates with their idempotency key, as the SDK does) and jobs run and upload. Then: no
// accepted job is lost, none is stuck, every success has its artifacts, no create made two
// jobs, and nothing completes twice (a last restart changes no finished job).
func TestChaosRandomSIGKILLs(t *testing.T) {
	t.Parallel()
	rounds := 6
	if n, err := strconv.Atoi(os.Getenv("CHAOS_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 14))
	t.Logf("chaos seed %d, %d rounds", seed, rounds)
	dir := t.TempDir()
	accepted := map[string]string{} // idempotency key → job id
	var unanswered []string         // keys whose create got no answer yet
	// A key's retries send the very body of its first create, as a client retrying with
	// its idempotency key does: a create that committed before the kill cut its answer
	// is then returned, where another body would rightly be refused as a reused key.
	bodies := map[string]string{} // idempotency key → the job's name
	names := []string{"ok", "slow:3", "slow:8", "many:5"}
	for round := range rounds {
		c := startChild(t, dir)
		keys := append(unanswered, fmt.Sprintf("r%d-a", round), fmt.Sprintf("r%d-b", round), fmt.Sprintf("r%d-c", round))
		unanswered = nil
		type answer struct {
			key, id string
			ok      bool
		}
		answers := make(chan answer, len(keys))
		for _, key := range keys {
			name, retry := bodies[key]
			if !retry {
				name = names[rng.IntN(len(names))]
				bodies[key] = name
			}
			go func() {
				id, ok := tryCreate(c.url, key, name)
				answers <- answer{key, id, ok}
			}()
		}
		// The kill lands anywhere from mid-create to mid-run to mid-upload.
		time.Sleep(time.Duration(rng.IntN(900)) * time.Millisecond)
		c.kill(t)
		for range keys {
			a := <-answers
			if !a.ok {
				unanswered = append(unanswered, a.key)
				continue
			}
			if prev, seen := accepted[a.key]; seen && prev != a.id {
				t.Errorf("key %s made two jobs: %s and %s", a.key, prev, a.id)
			}
			accepted[a.key] = a.id
		}
	}

	last := startChild(t, dir)
	for _, key := range unanswered {
		id, ok := tryCreate(last.url, key, bodies[key])
		mustf(t, ok, "the create with key %s is still refused after the last restart", key)
		if prev, seen := accepted[key]; seen && prev != id {
			t.Errorf("key %s made two jobs: %s and %s", key, prev, id)
		}
		accepted[key] = id
	}
	s := last.client(t)
	finished := map[string]string{}
	var succeeded, failed int
	for key, id := range accepted {
		j := s.waitFor(id, 60*time.Second, func(j map[string]any) bool { return j["status"] == "succeeded" || j["status"] == "failed" })
		finished[id] = fmt.Sprint(j["status"], j["finished_at"])
		switch j["status"] {
		case "succeeded":
			succeeded++
			mustf(t, j["results_ready"] == true, "job %s (key %s) succeeded without results", id, key)
			s.get("/v1/jobs/" + id + "/artifacts/t1.cif").expect(http.StatusOK)
		case "failed":
			failed++
			mustf(t, strings.Contains(fmt.Sprint(j["error"]), "lost"), "job %s failed for another reason than its worker dying: %v", id, j["error"])
		}
	}
	list := s.get("/v1/jobs?limit=100").expect(http.StatusOK).json()
	mustf(t, len(list["data"].([]any)) == len(accepted), "%d jobs exist for %d accepted creates", len(list["data"].([]any)), len(accepted))

	last.kill(t)
	again := startChild(t, dir).client(t)
	for id, was := range finished {
		j := again.get("/v1/jobs/" + id).expect(http.StatusOK).json()
		mustf(t, fmt.Sprint(j["status"], j["finished_at"]) == was, "job %s changed after it finished: %s, then %v %v", id, was, j["status"], j["finished_at"])
	}
	t.Logf("%d rounds: %d jobs accepted, %d succeeded, %d failed (worker lost twice), 0 lost, 0 stuck, 0 duplicated, 0 completed twice",
		rounds, len(accepted), succeeded, failed)
}
