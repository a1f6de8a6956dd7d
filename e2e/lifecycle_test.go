package e2e

import (
	"archive/zip"
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestEachKindRunsToResultsArtifactsArchiveAndLogs(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	tests := []struct {
		name     string
		path     string
		body     map[string]any
		kind     string
		resField string // the kind-specific field of the ready manifest
	}{
		{"prediction", "/v1/predictions", map[string]any{"model": "boltz2", "sequence": "MKTAYIAKQRQISFVKSHFSRQ", "name": "ok"}, "predict", "rows"},
		{"multi-target prediction", "/v1/predictions", map[string]any{"targets": []map[string]any{
			{"name": "a", "content": ">A\nMKTAYIAKQ\n"}, {"name": "b", "content": ">B\nGSGSGSGS\n"}}}, "predict", "rows"},
		{"design", "/v1/designs", map[string]any{"protocol": "protein-anything", "params": map[string]any{"num_designs": 2, "budget": 2},
			"spec": "entities:\n  - protein:\n      id: B\n      sequence: 80..140\n"}, "design", "designs"},
		{"embedding", "/v1/embeddings", map[string]any{"model": "esmc-300m", "sequences": []any{"MKTAYIAKQ", map[string]any{"id": "p2", "sequence": "GSGSGS"}}}, "embed", "sequences"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			created := s.post(tt.path, tt.body).expect(http.StatusAccepted).json()
			mustf(t, created["kind"] == tt.kind, "kind %v, want %s", created["kind"], tt.kind)
			mustf(t, created["status"] == "queued" || created["status"] == "running" || created["status"] == "succeeded",
				"a new job is %v", created["status"])
			id := created["id"].(string)
			mustf(t, len(id) == 32, "job id %q is not 32 hex characters", id)

			j := s.waitStatus(id, "succeeded")
			mustf(t, j["results_ready"] == true && j["progress"] == 1.0 && j["finished_at"] != nil && j["started_at"] != nil,
				"a succeeded job shows %v", j)
			mustf(t, j["done"] == j["total"] && j["total"].(float64) >= 1, "done %v of total %v after success", j["done"], j["total"])

			res := s.get("/v1/jobs/" + id + "/results").expect(http.StatusOK).json()
			mustf(t, res["ready"] == true && res["kind"] == tt.kind && res[tt.resField] != nil, "results: %v", res)
			arts := res["artifacts"].([]any)
			mustf(t, len(arts) > 0, "no artifacts in %v", res)
			for _, a := range arts {
				a := a.(map[string]any)
				r := s.get(a["url"].(string)).expect(http.StatusOK)
				if strings.HasSuffix(a["path"].(string), ".cif") && r.Header.Get("Content-Type") != "chemical/x-cif" {
					t.Errorf("%s served as %q", a["path"], r.Header.Get("Content-Type"))
				}
			}

			zr := s.get("/v1/jobs/" + id + "/archive").expect(http.StatusOK)
			mustf(t, zr.Header.Get("Content-Disposition") == `attachment; filename=`+id+`.zip`,
				"Content-Disposition %q", zr.Header.Get("Content-Disposition"))
			names := zipNames(t, zr.Body)
			for _, want := range append([]string{"results.json", "run.log"}, artifactPaths(arts)...) {
				mustf(t, names[want], "archive lacks %s; has %v", want, names)
			}

			logs := s.get("/v1/jobs/" + id + "/logs").expect(http.StatusOK)
			mustf(t, logs.Header.Get("Content-Type") == "text/plain; charset=utf-8", "logs Content-Type %q", logs.Header.Get("Content-Type"))
			mustf(t, strings.Contains(string(logs.Body), "wrote ") && strings.Contains(string(logs.Body), "job succeeded"),
				"the log lacks the tool's output: %s", logs.Body)
		})
	}
}

func zipNames(t *testing.T, b []byte) map[string]bool {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatalf("archive is not a zip: %v", err)
	}
	names := map[string]bool{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatalf("archive entry %s: %v", f.Name, err)
		}
		if _, err := io.Copy(io.Discard, rc); err != nil {
			t.Fatalf("archive entry %s is corrupt: %v", f.Name, err)
		}
		rc.Close()
		names[f.Name] = true
	}
	return names
}

func artifactPaths(arts []any) []string {
	var out []string
	for _, a := range arts {
		out = append(out, a.(map[string]any)["path"].(string))
	}
	return out
}

func TestResultsBeforeReadyAndArtifactsOutsideTheManifest(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	id := s.predict("hang")
	s.waitStatus(id, "running")
	res := s.get("/v1/jobs/" + id + "/results").expect(http.StatusOK).json()
	mustf(t, res["ready"] == false && res["status"] == "running" && res["job_id"] == id, "not-ready results: %v", res)
	s.get("/v1/jobs/"+id+"/archive").problem(http.StatusConflict, "conflict")
	s.post("/v1/jobs/"+id+"/cancel", nil).expect(http.StatusOK)

	done := s.predict("ok")
	s.waitStatus(done, "succeeded")
	for _, p := range []string{"nope.cif", "t1", "T1.cif", "t1.cif.bak", "t1/"} {
		s.get("/v1/jobs/"+done+"/artifacts/"+p).problem(http.StatusNotFound, "not-found")
	}
}

func TestPreferWaitHoldsUntilTheJobEnds(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	id := s.predict("slow:5")
	start := time.Now()
	r := s.get("/v1/jobs/"+id, "Prefer: wait=20").expect(http.StatusOK)
	mustf(t, r.json()["status"] == "succeeded", "the hold ended before the job: %s", r.Body)
	mustf(t, r.Header.Get("Preference-Applied") == "wait", "Preference-Applied %q", r.Header.Get("Preference-Applied"))
	mustf(t, time.Since(start) < 15*time.Second, "the hold did not return when the job ended")

	// Create with a hold answers 202 with the finished job.
	c := s.post("/v1/predictions", map[string]any{"sequence": "MKTAYIAKQ", "name": "ok"}, "Prefer: wait=20").expect(http.StatusAccepted)
	mustf(t, c.json()["status"] == "succeeded" && c.Header.Get("Preference-Applied") == "wait", "create with wait: %s", c.Body)

	hang := s.predict("hang")
	for _, pref := range []string{"wait=-1", "wait=soon", "respond-async", "wait=0"} {
		r := s.get("/v1/jobs/"+hang, "Prefer: "+pref).expect(http.StatusOK)
		mustf(t, r.Header.Get("Preference-Applied") == "", "Prefer: %s was applied", pref)
	}
	start = time.Now()
	r = s.get("/v1/jobs/"+hang, "Prefer: wait=1").expect(http.StatusOK)
	mustf(t, r.Header.Get("Preference-Applied") == "wait" && time.Since(start) >= time.Second,
		"wait=1 on a running job did not hold a second")
	s.post("/v1/jobs/"+hang+"/cancel", nil).expect(http.StatusOK)
}

func TestCancelStopsTheWholeProcessTree(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	id := s.predict("hang")
	s.waitStatus(id, "running")
	pid := waitForPIDFile(t, s.dir, id)

	start := time.Now()
	c := s.post("/v1/jobs/"+id+"/cancel", nil).expect(http.StatusOK).json()
	mustf(t, c["status"] == "canceled" && c["finished_at"] != nil, "cancel answered %v", c)
	waitProcessGone(t, pid, 5*time.Second)
	t.Logf("process tree gone %s after cancel", time.Since(start).Round(time.Millisecond))

	again := s.post("/v1/jobs/"+id+"/cancel", nil).expect(http.StatusOK).json()
	mustf(t, again["status"] == "canceled" && again["finished_at"] == c["finished_at"], "second cancel changed the job: %v", again)

	ok := s.predict("ok")
	s.waitStatus(ok, "succeeded")
	detail := s.post("/v1/jobs/"+ok+"/cancel", nil).problem(http.StatusConflict, "conflict")
	mustf(t, strings.Contains(detail, "succeeded"), "409 detail %q does not name the status", detail)

	// A canceled job never turns into anything else, and its worker slot is free again.
	s.waitStatus(s.predict("ok"), "succeeded")
	mustf(t, s.get("/v1/jobs/" + id).json()["status"] == "canceled", "the canceled job changed state")
}

func TestDeleteStopsARunningJobAndForgetsIt(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	id := s.predict("hang")
	s.waitStatus(id, "running")
	pid := waitForPIDFile(t, s.dir, id)
	d := s.request(http.MethodDelete, "/v1/jobs/"+id, nil).expect(http.StatusOK).json()
	mustf(t, d["object"] == "job" && d["id"] == id && d["deleted"] == true, "delete answered %v", d)
	waitProcessGone(t, pid, 5*time.Second)
	for _, p := range []string{"", "/results", "/logs", "/archive"} {
		s.get("/v1/jobs/"+id+p).problem(http.StatusNotFound, "not-found")
	}
	s.request(http.MethodDelete, "/v1/jobs/"+id, nil).problem(http.StatusNotFound, "not-found")
	s.post("/v1/jobs/"+id+"/cancel", nil).problem(http.StatusNotFound, "not-found")
	waitNoJobFiles(t, s, id)

	done := s.predict("ok")
	s.waitStatus(done, "succeeded")
	s.request(http.MethodDelete, "/v1/jobs/"+done, nil).expect(http.StatusOK)
	s.get("/v1/jobs/"+done+"/artifacts/t1.cif").problem(http.StatusNotFound, "not-found")
	waitNoJobFiles(t, s, done)
}

func TestEngineFailuresFailTheJobWithTheToolsMessage(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	tests := []struct{ name, wantError string }{
		{"fail", "CUDA out of memory"},
		{"exit0-nofiles", "wrote no scores"},
	}
	for _, tt := range tests {
		id := s.predict(tt.name)
		j := s.waitStatus(id, "failed")
		msg, _ := j["error"].(string)
		mustf(t, strings.Contains(msg, tt.wantError), "%s: error %q does not carry %q", tt.name, msg, tt.wantError)
		mustf(t, j["results_ready"] == false && j["stage"] != nil, "%s: failed job shows %v", tt.name, j)
		res := s.get("/v1/jobs/" + id + "/results").expect(http.StatusOK).json()
		mustf(t, res["ready"] == false && res["status"] == "failed", "%s: results %v", tt.name, res)
		logs := string(s.get("/v1/jobs/" + id + "/logs").expect(http.StatusOK).Body)
		mustf(t, strings.Contains(logs, "job failed"), "%s: log %q", tt.name, logs)
	}
}

func TestRuntimeAndStallCapsFailTheJobNamingTheCap(t *testing.T) {
	t.Parallel()
	runtime := startServer(t, withLimits(func(l *limitsT) { l.PredictRuntime = time.Second }))
	j := runtime.waitStatus(runtime.predict("slow:100"), "failed")
	mustf(t, strings.Contains(j["error"].(string), "runtime cap"), "runtime cap error %q", j["error"])

	stall := startServer(t, withLimits(func(l *limitsT) { l.Stall = time.Second }))
	j = stall.waitStatus(stall.predict("silent"), "failed")
	mustf(t, strings.Contains(j["error"].(string), "stall cap"), "stall cap error %q", j["error"])
}

func TestManyArtifactsAreAllListedAndArchived(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	id := s.predict("many:300")
	s.waitStatus(id, "succeeded")
	arts := s.get("/v1/jobs/" + id + "/results").json()["artifacts"].([]any)
	mustf(t, len(arts) == 302, "%d artifacts listed, want 302", len(arts))
	names := zipNames(t, s.get("/v1/jobs/"+id+"/archive").expect(http.StatusOK).Body)
	mustf(t, len(names) == 304, "archive has %d entries, want 302 artifacts + results.json + run.log", len(names))
}

func TestLogsAreReadableWhileTheJobRuns(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	id := s.predict("slow:100")
	j := s.waitFor(id, 20*time.Second, func(j map[string]any) bool {
		p, _ := j["progress"].(float64)
		return j["status"] == "running" && p > 0.1
	})
	mustf(t, j["stage"] == "inference", "stage while running: %v", j["stage"])
	logs := string(s.get("/v1/jobs/" + id + "/logs").expect(http.StatusOK).Body)
	mustf(t, strings.Contains(logs, "step 1/100"), "the running job's log lacks its output: %q", logs)
	s.post("/v1/jobs/"+id+"/cancel", nil).expect(http.StatusOK)
}
