package e2e

import (
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/app"
)

func retryAfter(t *testing.T, r *response) int {
	t.Helper()
	n, err := strconv.Atoi(r.Header.Get("Retry-After"))
	mustf(t, err == nil && n >= 1, "Retry-After %q is not a whole number of seconds ≥ 1", r.Header.Get("Retry-After"))
	return n
}

func TestActiveJobQuotaPerOwner(t *testing.T) {
	t.Parallel()
	s := startServer(t, withLimits(func(l *limitsT) { l.ActiveJobsPerOwner = 2 }))
	a, b := s.predict("hang"), s.predict("hang")
	r := s.post("/v1/predictions", map[string]any{"sequence": "MKT"})
	detail := r.problem(http.StatusTooManyRequests, "rate-limited")
	retryAfter(t, r)
	mustf(t, strings.Contains(detail, "2"), "429 detail %q does not name the quota", detail)
	// Another owner is not affected, and ending a job frees a place.
	key, _ := s.issueKey("other")
	s.predict("ok", "X-API-Key: "+key)
	s.post("/v1/jobs/"+a+"/cancel", nil).expect(http.StatusOK)
	s.predict("ok")
	s.post("/v1/jobs/"+b+"/cancel", nil).expect(http.StatusOK)
}

func TestCreatesPerMinuteQuota(t *testing.T) {
	t.Parallel()
	s := startServer(t, withLimits(func(l *limitsT) { l.CreatesPerMinute = 3 }))
	for range 3 {
		s.predict("ok")
	}
	r := s.post("/v1/predictions", map[string]any{"sequence": "MKT", "name": "ok"})
	r.problem(http.StatusTooManyRequests, "rate-limited")
	n := retryAfter(t, r)
	mustf(t, n <= 60, "Retry-After %d exceeds the 60 s window", n)
}

func TestQueueCapacityIsAtCapacity(t *testing.T) {
	t.Parallel()
	// One slot, held by a hanging job, so the next creates stay queued.
	live := startServer(t, withLimits(func(l *limitsT) { l.QueuedJobs = 2 }), func(c *app.Config) { c.Slots = 1 })
	busy := live.predict("hang")
	live.waitStatus(busy, "running")
	key, _ := live.issueKey("k")
	live.predict("ok")
	live.predict("ok", "X-API-Key: "+key)
	r := live.post("/v1/predictions", map[string]any{"sequence": "MKT"})
	r.problem(http.StatusTooManyRequests, "at-capacity")
	retryAfter(t, r)
	live.post("/v1/jobs/"+busy+"/cancel", nil).expect(http.StatusOK)
}

func TestRetentionEvictsTheOldestFinishedJobOfTheBiggestOwner(t *testing.T) {
	t.Parallel()
	s := startServer(t, withLimits(func(l *limitsT) { l.RetainedJobs = 4 }))
	key, _ := s.issueKey("small")
	small := s.predict("ok", "X-API-Key: "+key)
	s.waitStatus(small, "succeeded", "X-API-Key: "+key)
	var big []string
	for range 3 {
		id := s.predict("ok")
		s.waitStatus(id, "succeeded")
		big = append(big, id)
	}
	newest := s.predict("ok") // the fifth job: the biggest owner's oldest finished job goes
	s.get("/v1/jobs/"+big[0]).problem(http.StatusNotFound, "not-found")
	waitNoJobFiles(t, s, big[0])
	for _, id := range append(big[1:], newest) {
		s.get("/v1/jobs/" + id).expect(http.StatusOK)
	}
	s.get("/v1/jobs/"+small, "X-API-Key: "+key).expect(http.StatusOK)
}

func TestListingPagesNewestFirstWithoutSkipsOrRepeats(t *testing.T) {
	t.Parallel()
	live := startServer(t, withLimits(func(l *limitsT) { l.ActiveJobsPerOwner = 100; l.CreatesPerMinute = 100 }))
	var created []string
	for i := range 25 {
		created = append(created, live.create("/v1/embeddings", map[string]any{"sequence": "MKT", "name": fmt.Sprintf("ok-%d", i)}))
	}
	var seen []string
	cursor := ""
	pages := 0
	for {
		path := "/v1/jobs?limit=10"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		page := live.get(path).expect(http.StatusOK).json()
		mustf(t, page["object"] == "list", "list object %v", page["object"])
		for _, j := range page["data"].([]any) {
			seen = append(seen, j.(map[string]any)["id"].(string))
		}
		pages++
		if pages == 1 {
			live.create("/v1/embeddings", map[string]any{"sequence": "MKT", "name": "late"}) // must not appear later
		}
		if page["has_more"] != true {
			mustf(t, page["next_cursor"] == nil, "last page has a cursor")
			break
		}
		cursor = page["next_cursor"].(string)
	}
	mustf(t, len(seen) == 25 && pages == 3, "saw %d jobs on %d pages, want 25 on 3", len(seen), pages)
	for i, id := range seen {
		mustf(t, id == created[24-i], "position %d holds %s, want %s (newest first)", i, id, created[24-i])
	}

	first := live.get("/v1/jobs").expect(http.StatusOK).json()
	mustf(t, len(first["data"].([]any)) == 20, "default page size %d, want 20", len(first["data"].([]any)))
	all := live.get("/v1/jobs?limit=1000").expect(http.StatusOK).json()
	mustf(t, len(all["data"].([]any)) == 26, "limit=1000 gave %d of 26 jobs", len(all["data"].([]any)))
	live.get("/v1/jobs?limit=0").expect(http.StatusOK)
	huge := live.get("/v1/jobs?limit=99999999999999999999").expect(http.StatusOK).json() // an integer, so clamped
	mustf(t, len(huge["data"].([]any)) == 26, "limit=99999999999999999999 gave %d of 26 jobs", len(huge["data"].([]any)))
	live.get("/v1/jobs?limit=ten").problem(http.StatusBadRequest, "invalid-input")
	live.get("/v1/jobs?cursor=definitely-not-a-cursor").problem(http.StatusBadRequest, "invalid-input")
}

func TestMetricsCountRequestsJobsAndWorkers(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	s.waitStatus(s.predict("ok"), "succeeded")
	s.get("/v1/jobs/0123456789abcdef0123456789abcdef").expect(http.StatusNotFound)
	// Methods of the client's invention share one label: each label value is a series the
	// server keeps for good.
	for _, m := range []string{"BREW", "WHEN1", "WHEN2"} {
		s.request(m, "/v1/jobs", nil).problem(http.StatusMethodNotAllowed, "method-not-allowed")
	}
	r := s.get("/metrics").expect(http.StatusOK)
	body := string(r.Body)
	mustf(t, !strings.Contains(body, `method="BREW"`), "a made-up method became a metrics label")
	for _, want := range []string{
		`chaperone_http_requests_total{method="POST",route="POST /v1/predictions",status="202"} 1`,
		`chaperone_http_requests_total{method="GET",route="GET /v1/jobs/{id}",status="404"} 1`,
		`chaperone_http_requests_total{method="other",route="unmatched",status="405"} 3`,
		`chaperone_http_request_duration_seconds_bucket{method="GET",route="GET /v1/jobs/{id}"`,
		`chaperone_jobs{kind="predict",model="boltz2",status="succeeded"} 1`,
		`chaperone_queue_depth 0`,
		`chaperone_workers 1`,
	} {
		mustf(t, strings.Contains(body, want), "metrics lack %q", want)
	}
	slots := workerSlots(t, body)
	mustf(t, slots["busy"] == 0 && slots["idle"] == 2, "worker slots %v once the job ended, want 0 busy, 2 idle", slots)
}

// workerSlots reads chaperone_worker_slots by state from a /metrics body.
func workerSlots(t *testing.T, body string) map[string]int {
	t.Helper()
	slots := map[string]int{}
	for _, state := range []string{"idle", "busy"} {
		m := regexp.MustCompile(`(?m)^chaperone_worker_slots\{state="` + state + `"\} ([0-9]+)$`).FindStringSubmatch(body)
		mustf(t, m != nil, "metrics lack chaperone_worker_slots{state=%q}", state)
		slots[state], _ = strconv.Atoi(m[1])
	}
	return slots
}

// TestBusySlotsShowTheMomentAJobRuns: a worker's slot counts as busy from the moment it
// leases a job, not from its next announcement (a third of a lease later: here 20 minutes),
// so a job queued behind it says at once that it waits for a busy slot, and /metrics agrees.
func TestBusySlotsShowTheMomentAJobRuns(t *testing.T) {
	t.Parallel()
	s := startServer(t, func(c *app.Config) { c.Slots, c.LeaseTTL = 1, time.Hour })
	metrics := func() map[string]int { return workerSlots(t, string(s.get("/metrics").expect(http.StatusOK).Body)) }
	mustf(t, metrics()["busy"] == 0, "an idle worker shows busy slots: %v", metrics())

	hang := s.predict("hang")
	s.waitStatus(hang, "running")
	slots := metrics()
	mustf(t, slots["busy"] == 1 && slots["idle"] == 0, "worker slots %v while its one slot runs a job, want 1 busy, 0 idle", slots)
	// Once its alignments are searched, it waits for the slot.
	waiting := s.waitFor(s.predict("ok"), 10*time.Second, func(j map[string]any) bool {
		q, _ := j["queue"].(map[string]any)
		return q == nil || q["reason"] != "aligning"
	})
	q, _ := waiting["queue"].(map[string]any)
	mustf(t, waiting["status"] == "queued" && waiting["waiting_for_device"] == true && q != nil &&
		q["reason"] == "busy" && q["chips_busy"] == 1.0 && q["chips_online"] == 1.0,
		"a job queued behind the busy slot: %v; want queue.reason busy, 1 of 1 slots busy", waiting)

	s.post("/v1/jobs/"+hang+"/cancel", nil).expect(http.StatusOK)
	s.waitStatus(waiting["id"].(string), "succeeded")
	slots = metrics()
	mustf(t, slots["busy"] == 0 && slots["idle"] == 1, "worker slots %v once every job ended, want 0 busy, 1 idle", slots)
}
