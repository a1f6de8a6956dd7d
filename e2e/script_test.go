package e2e

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/engine/boltzgen/boltzgentest"
)

// TestAReferenceClientScriptRunsToTheEnd plays, against a real server with stand-in
// tools, the script a client of the reference service runs with only its base URL
// changed: docs/examples.md's fold, design and embedding flows (submit, poll with
// Prefer: wait, read the results, download every artifact and the archive), and
// docs/jobs.md's logs, early results, cancel, cursor listing and delete. Like the
// docs' Python (urllib raises on an error status), every call must succeed.
func TestAReferenceClientScriptRunsToTheEnd(t *testing.T) {
	t.Parallel()
	browser := "User-Agent: Mozilla/5.0"
	for _, tc := range []struct {
		name string
		key  bool // docs/authentication.md: a Bearer key on every call, as the keyed SKILL.md sends it
	}{
		{"keyless, as docs/examples.md", false},
		{"with a Bearer key on every call", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := startServer(t, withEveryStandIn(t))
			headers := []string{"Content-Type: application/json", browser}
			if tc.key {
				key, _ := s.issueKey("script")
				headers = append(headers, "Authorization: Bearer "+key)
			}
			runReferenceScript(t, &scriptClient{t: t, base: s.URL, headers: headers})
		})
	}
}

// scriptClient is the docs' `api(method, path, body)`: JSON in and out, the same headers
// on every call, and any status but 2xx ends the script.
type scriptClient struct {
	t       *testing.T
	base    string
	headers []string
}

func (c *scriptClient) call(method, path string, body any, extra ...string) *response {
	c.t.Helper()
	r := call(c.t, c.base, method, path, body, append(slices.Clone(c.headers), extra...)...)
	if r.Status/100 != 2 {
		c.t.Fatalf("the script stops: %s %s is %d: %s", method, path, r.Status, truncate(r.Body))
	}
	return r
}

func (c *scriptClient) api(method, path string, body any, extra ...string) map[string]any {
	c.t.Helper()
	var v map[string]any
	if r := c.call(method, path, body, extra...); json.Unmarshal(r.Body, &v) != nil {
		c.t.Fatalf("the script stops: %s %s is no JSON object: %s", method, path, truncate(r.Body))
	}
	return v
}

// wait is the docs' poll loop with `Prefer: wait=60` (docs/index.md, step 2).
func (c *scriptClient) wait(id string) map[string]any {
	c.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		job := c.api(http.MethodGet, "/v1/jobs/"+id, nil, "Prefer: wait=60")
		if s := job["status"]; s == "succeeded" || s == "failed" || s == "canceled" {
			return job
		}
	}
	c.t.Fatalf("job %s did not finish within a minute of polling", id)
	return nil
}

func runReferenceScript(t *testing.T, c *scriptClient) {
	models := c.api(http.MethodGet, "/v1/models", nil)["models"].([]any)
	mustf(t, slices.ContainsFunc(models, func(m any) bool { return m.(map[string]any)["id"] == "boltz2" }), "no boltz2 in %v", models)

	// docs/examples.md: Fold a protein, Design binders (BoltzGen), Embed sequences.
	submissions := []struct {
		path string
		body map[string]any
		list string // the results' list of scored items
	}{
		{"/v1/predictions", map[string]any{"model": "boltz2", "name": "myprotein", "sequence": docLongSeq}, "rows"},
		{"/v1/designs", map[string]any{"protocol": "nanobody-anything", "name": "my-nanobodies",
			"spec":   "sequences:\n  - protein: {id: A, sequence: " + docLongSeq + "}\n",
			"params": map[string]any{"num_designs": 10, "budget": 10, "fast": true}}, "designs"},
		{"/v1/embeddings", map[string]any{"model": "esmc-600m", "sequences": []any{
			map[string]any{"id": "a", "sequence": docSeq}, map[string]any{"id": "b", "sequence": docLongSeq}}}, "sequences"},
	}
	var ids []string
	for _, sub := range submissions {
		job := c.wait(c.api(http.MethodPost, sub.path, sub.body)["id"].(string))
		id := job["id"].(string)
		ids = append(ids, id)
		mustf(t, job["status"] == "succeeded", "%s finished %v: %v", sub.path, job["status"], job["error"])
		results := c.api(http.MethodGet, "/v1/jobs/"+id+"/results", nil)
		items, _ := results[sub.list].([]any)
		mustf(t, len(items) > 0, "%s: results have no %s: %v", sub.path, sub.list, results)
		for _, item := range items {
			_, ok := item.(map[string]any)["id"].(string)
			mustf(t, ok, "%s: a result item without an id: %v", sub.path, item)
		}
		archive := c.call(http.MethodGet, results["archive_url"].(string), nil).Body
		mustf(t, bytes.Equal(archive, c.call(http.MethodGet, "/v1/jobs/"+id+"/archive", nil).Body),
			"%s: archive_url and /v1/jobs/{id}/archive differ", sub.path)
		zr, err := zip.NewReader(bytes.NewReader(archive), int64(len(archive)))
		mustf(t, err == nil, "%s: the archive does not unzip: %v", sub.path, err)
		for _, a := range results["artifacts"].([]any) {
			a := a.(map[string]any)
			file := c.call(http.MethodGet, a["url"].(string), nil).Body
			mustf(t, len(file) > 0 && zipHas(zr, a["path"].(string)), "%s: artifact %s is empty or not in the archive", sub.path, a["path"])
		}
		c.call(http.MethodGet, "/v1/jobs/"+id+"/logs", nil)
	}

	// docs/jobs.md: results asked early say so; cancel stops a job.
	hanging := c.api(http.MethodPost, "/v1/designs", map[string]any{"protocol": "protein-anything",
		"spec": "entities:\n  - protein: {id: B, sequence: 20..30}\n" + boltzgentest.Marker + boltzgentest.Hang + "\n"})["id"].(string)
	ids = append(ids, hanging)
	early := c.api(http.MethodGet, "/v1/jobs/"+hanging+"/results", nil)
	mustf(t, early["object"] == "results" && early["job_id"] == hanging && early["ready"] == false && early["status"] != nil,
		"results asked early: %v", early)
	c.call(http.MethodPost, "/v1/jobs/"+hanging+"/cancel", nil)
	mustf(t, c.wait(hanging)["status"] == "canceled", "the canceled job did not end canceled")

	// docs/jobs.md: List your jobs, a page at a time, next_cursor going back as ?cursor=.
	var listed []string
	for query, pages := "?limit=2", 1; ; pages++ {
		mustf(t, pages <= len(ids), "more pages than jobs: the cursor does not advance")
		page := c.api(http.MethodGet, "/v1/jobs"+query, nil)
		for _, j := range page["data"].([]any) {
			listed = append(listed, j.(map[string]any)["id"].(string))
		}
		if page["has_more"] != true {
			break
		}
		query = "?limit=2&cursor=" + url.QueryEscape(page["next_cursor"].(string))
	}
	slices.Sort(listed)
	slices.Sort(ids)
	mustf(t, slices.Equal(listed, ids), "the pages list %v, want the script's jobs %v", listed, ids)

	// docs/jobs.md: delete removes a job and its data; its id is then 404.
	for _, id := range ids {
		c.call(http.MethodDelete, "/v1/jobs/"+id, nil)
		gone := call(t, c.base, http.MethodGet, "/v1/jobs/"+id, nil, c.headers...)
		mustf(t, gone.Status == http.StatusNotFound, "a deleted job is %d, want 404", gone.Status)
	}
	mustf(t, len(c.api(http.MethodGet, "/v1/jobs", nil)["data"].([]any)) == 0, "jobs listed after every delete")
}
