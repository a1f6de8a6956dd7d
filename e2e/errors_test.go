package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

func TestEveryErrorIsAProblem(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	tests := []struct {
		name, method, path string
		body               any
		status             int
		slug               string
	}{
		{"unknown path", "GET", "/v2/nothing", nil, 404, "not-found"},
		{"unknown path under v1", "GET", "/v1/jobs/abc/unknown", nil, 404, "not-found"},
		{"beside the web app", "GET", "/index.html", nil, 404, "not-found"},
		{"malformed job id", "GET", "/v1/jobs/not-a-job", nil, 404, "not-found"},
		{"unknown job id", "GET", "/v1/jobs/0123456789abcdef0123456789abcdef", nil, 404, "not-found"},
		{"wrong method on a create", "GET", "/v1/predictions", nil, 405, "method-not-allowed"},
		{"wrong method on a job", "PUT", "/v1/jobs/0123456789abcdef0123456789abcdef", "{}", 405, "method-not-allowed"},
		{"wrong method on health", "POST", "/v1/health", "{}", 405, "method-not-allowed"},
		{"unknown error page", "GET", "/errors/nope", nil, 404, "not-found"},
		{"malformed JSON", "POST", "/v1/predictions", `{"sequence": "MK`, 400, "invalid-input"},
		{"not an object", "POST", "/v1/predictions", `[1,2]`, 400, "invalid-input"},
		{"empty body", "POST", "/v1/embeddings", ``, 400, "invalid-input"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := s.request(tt.method, tt.path, tt.body)
			r.problem(tt.status, tt.slug)
			if tt.status == 405 && r.Header.Get("Allow") == "" {
				t.Errorf("405 without Allow")
			}
		})
	}
}

func TestOversizeBodyIs413(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	big := `{"sequence": "` + strings.Repeat("A", 9<<20) + `"}`
	detail := s.post("/v1/predictions", big).problem(http.StatusRequestEntityTooLarge, "payload-too-large")
	mustf(t, strings.Contains(detail, "8388608"), "413 detail %q does not name the limit", detail)
}

func TestErrorTypePagesAreServed(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	p := s.get("/v1/jobs/0123456789abcdef0123456789abcdef").json()
	typ := p["type"].(string)
	mustf(t, strings.HasPrefix(typ, s.URL+"/errors/"), "type %q is not under the server's base", typ)
	for _, slug := range []string{"invalid-input", "unauthorized", "not-found", "method-not-allowed", "conflict",
		"payload-too-large", "idempotency-key-reused", "rate-limited", "at-capacity", "unavailable", "internal"} {
		r := s.get("/errors/" + slug).expect(http.StatusOK)
		mustf(t, strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") && strings.Contains(string(r.Body), slug),
			"/errors/%s page: %q", slug, r.Body)
	}
}

func TestInternalErrorsLeakNothingButARequestID(t *testing.T) {
	t.Parallel()
	s := startServer(t, withoutWorker())
	s.Store.Close() // every store call now fails
	r := s.get("/v1/jobs")
	r.problem(http.StatusInternalServerError, "internal")
	p := r.json()
	id, _ := p["request_id"].(string)
	mustf(t, id != "" && id == r.Header.Get("X-Request-Id"), "500 request_id %q, header %q", id, r.Header.Get("X-Request-Id"))
	for _, leak := range []string{"sql", "database", "closed", "sqlite"} {
		mustf(t, !strings.Contains(strings.ToLower(p["detail"].(string)), leak), "500 detail leaks %q: %s", leak, p["detail"])
	}
}

// TestMalformedCreatesAre400 is the table of create bodies the service must refuse, each
// with a detail that names what to fix.
func TestMalformedCreatesAre400(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	tests := []struct {
		name, path, body string
		detailHas        string
	}{
		{"no input", "/v1/predictions", `{}`, "sequence"},
		{"two inputs", "/v1/predictions", `{"sequence":"MK","input":">a\nMK"}`, "one"},
		{"unknown field", "/v1/predictions", `{"sequence":"MKT","sequense":"MK"}`, "sequense"},
		{"mistyped field", "/v1/predictions", `{"sequence":42}`, "sequence"},
		{"unknown model lists valid ones", "/v1/predictions", `{"model":"alphafold9","sequence":"MKT"}`, "boltz2"},
		{"embedding model on predictions", "/v1/predictions", `{"model":"esmc-300m","sequence":"MKT"}`, "model"},
		{"unknown param", "/v1/predictions", `{"sequence":"MKT","params":{"recycle_steps":3}}`, "recycle_steps"},
		{"mistyped param", "/v1/predictions", `{"sequence":"MKT","params":{"recycling_steps":"three"}}`, "recycling_steps"},
		{"fractional integer param", "/v1/predictions", `{"sequence":"MKT","params":{"sampling_steps":20.5}}`, "sampling_steps"},
		{"bad enum", "/v1/predictions", `{"sequence":"MKT","params":{"output_format":"xyz"}}`, "output_format"},
		{"not a protein letter", "/v1/predictions", `{"sequence":"MKT1AY"}`, "sequence"},
		{"empty sequence", "/v1/predictions", `{"sequence":""}`, "sequence"},
		{"over the residue ceiling", "/v1/predictions", `{"sequence":"` + strings.Repeat("A", 5000) + `"}`, "boltz2"},
		{"msa on esmfold2-fast", "/v1/predictions", `{"model":"esmfold2-fast","sequence":"MKT","params":{"use_msa_server":true}}`, "use_msa_server"},
		{"empty targets", "/v1/predictions", `{"targets":[]}`, "targets"},
		{"target without content", "/v1/predictions", `{"targets":[{"name":"a"}]}`, "content"},
		{"duplicate target names", "/v1/predictions", `{"targets":[{"name":"a","content":">a\nMK"},{"name":"a","content":">b\nMK"}]}`, "name"},
		{"unsafe target name", "/v1/predictions", `{"targets":[{"name":"../x","content":">a\nMK"}]}`, "name"},
		{"design without protocol", "/v1/designs", `{"spec":"entities: []"}`, "protocol"},
		{"unknown protocol", "/v1/designs", `{"protocol":"protein-everything","spec":"x: 1"}`, "protein-anything"},
		{"model not matching protocol", "/v1/designs", `{"protocol":"rfd3-binder","model":"boltzgen","structure":"ATOM","contig":"A1-10,50-80"}`, "model"},
		{"boltzgen without spec", "/v1/designs", `{"protocol":"protein-anything"}`, "spec"},
		{"rfd3 without contig", "/v1/designs", `{"protocol":"rfd3-binder","structure":"ATOM      1  N   MET A   1      11.104  13.207   2.100  1.00  0.00           N\n"}`, "contig"},
		{"rfd3 bad contig", "/v1/designs", `{"protocol":"rfd3-binder","structure":"ATOM      1  N   MET A   1      11.104  13.207   2.100  1.00  0.00           N\n","contig":"A10-1,x"}`, "contig"},
		{"spec on rfd3", "/v1/designs", `{"protocol":"rfd3-scaffold","spec":"a: 1","structure":"ATOM      1  N   MET A   1      11.104  13.207   2.100  1.00  0.00           N\n","contig":"A1-10"}`, "spec"},
		{"embedding without input", "/v1/embeddings", `{"model":"esmc-300m"}`, "sequence"},
		{"bad pool", "/v1/embeddings", `{"sequence":"MKT","params":{"pool":"median"}}`, "pool"},
		{"bad format", "/v1/embeddings", `{"sequence":"MKT","params":{"format":"csv"}}`, "format"},
		{"too many embedding sequences", "/v1/embeddings", `{"sequences":[` + strings.TrimSuffix(strings.Repeat(`"MKT",`, 51), ",") + `]}`, "50"},
		{"embedding sequence too long", "/v1/embeddings", `{"sequence":"` + strings.Repeat("A", 2001) + `"}`, "2000"},
		{"sequence item of wrong type", "/v1/embeddings", `{"sequences":[42]}`, "sequences"},
		{"duplicate embedding ids", "/v1/embeddings", `{"sequences":[{"id":"a","sequence":"MK"},{"id":"a","sequence":"MK"}]}`, "id"},
		{"name of wrong type", "/v1/embeddings", `{"sequence":"MKT","name":7}`, "name"},
		{"params not an object", "/v1/embeddings", `{"sequence":"MKT","params":[1]}`, "params"},
		{"trailing data", "/v1/embeddings", `{"sequence":"MKT"} {"sequence":"MKT"}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			detail := s.post(tt.path, tt.body).problem(http.StatusBadRequest, "invalid-input")
			mustf(t, strings.Contains(detail, tt.detailHas), "detail %q does not mention %q", detail, tt.detailHas)
		})
	}
	// None of them made a job.
	list := s.get("/v1/jobs").expect(http.StatusOK).json()
	mustf(t, len(list["data"].([]any)) == 0, "a rejected create left a job: %v", list)
}

func TestParamsShowClampedValuesAndDefaults(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	j := s.post("/v1/predictions", map[string]any{"sequence": "MKT", "name": "hang",
		"params": map[string]any{"recycling_steps": 99, "sampling_steps": 1, "diffusion_samples": 3, "output_format": "mmcif"}}).
		expect(http.StatusAccepted).json()
	p := j["params"].(map[string]any)
	want := map[string]any{"recycling_steps": 10.0, "sampling_steps": 10.0, "diffusion_samples": 3.0,
		"output_format": "cif", "fast": true, "use_msa_server": true}
	for k, v := range want {
		mustf(t, p[k] == v, "params[%s] = %v, want %v (all params %v)", k, p[k], v, p)
	}
	s.post("/v1/jobs/"+j["id"].(string)+"/cancel", nil).expect(http.StatusOK)

	d := s.post("/v1/designs", map[string]any{"protocol": "protein-anything", "spec": "entities:\n  - protein: {id: B, sequence: 80..140}\n",
		"params": map[string]any{"num_designs": 5, "budget": 50}}).expect(http.StatusAccepted).json()
	dp := d["params"].(map[string]any)
	mustf(t, dp["num_designs"] == 5.0 && dp["budget"] == 5.0 && dp["fast"] == true, "design params %v", dp)
	mustf(t, d["model"] == nil && d["protocol"] == "protein-anything", "design job model %v protocol %v", d["model"], d["protocol"])
}

func TestUnavailableModelIs503AfterValidation(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	r := s.post("/v1/predictions", map[string]any{"model": "protenix-v2", "sequence": "MKT"})
	detail := r.problem(http.StatusServiceUnavailable, "unavailable")
	mustf(t, r.Header.Get("Retry-After") == "300", "Retry-After %q", r.Header.Get("Retry-After"))
	mustf(t, detail == "No live worker can run model protenix-v2: no live worker offers it.", "503 detail %q", detail)
	// Validation comes first: an invalid request for the same model is a 400.
	s.post("/v1/predictions", map[string]any{"model": "protenix-v2", "sequence": "MK1"}).problem(http.StatusBadRequest, "invalid-input")

	// A server without any worker refuses creates but serves everything else.
	bare := startServer(t, withoutWorker())
	bare.post("/v1/embeddings", map[string]any{"sequence": "MKT"}).problem(http.StatusServiceUnavailable, "unavailable")
	bare.get("/v1/jobs").expect(http.StatusOK)
	models := bare.get("/v1/models").expect(http.StatusOK).json()["models"].([]any)
	for _, m := range models {
		mustf(t, m.(map[string]any)["available"] == false, "model %v available with no worker", m)
	}
}

func TestHealthModelsAndOpenAPI(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	h := s.get("/v1/health", "Authorization: Bearer chp_live_invalidinvalidinvalidinvalidinvalid").expect(http.StatusOK).json()
	mustf(t, h["status"] == "ok" && h["service"] == "chaperone" && h["api_version"] == "1.0.0" && h["version"] == "test", "health %v", h)

	cat := s.get("/v1/models", "X-API-Key: nonsense").expect(http.StatusOK).json()
	mustf(t, cat["object"] == "catalog" && cat["api_version"] == "1.0.0", "catalog header %v", sortedKeys(cat))
	ids := map[string]map[string]any{}
	for _, m := range cat["models"].([]any) {
		mm := m.(map[string]any)
		ids[mm["id"].(string)] = mm
	}
	for _, id := range []string{"boltz2", "esmfold2", "esmfold2-fast", "protenix-v2", "openfold3", "opendde", "opendde-abag",
		"boltzgen", "rfd3", "esmc-300m", "esmc-600m", "esmc-6b", "saprot-650m", "saprot-1.3b"} {
		m, ok := ids[id]
		mustf(t, ok, "catalog lacks model %s", id)
		_, served := map[string]bool{"boltz2": true, "esmfold2": true, "boltzgen": true, "esmc-300m": true, "esmc-600m": true}[id]
		mustf(t, m["available"] == served, "model %s available=%v, want %v", id, m["available"], served)
	}
	mustf(t, ids["esmc-300m"]["d_model"] == 960.0, "esmc-300m d_model %v", ids["esmc-300m"]["d_model"])
	protocols := cat["protocols"].([]any)
	mustf(t, len(protocols) == 9, "%d protocols, want 9", len(protocols))
	limits := cat["limits"].(map[string]any)
	for _, k := range []string{"active_jobs_per_owner", "creates_per_owner_per_minute", "queued_jobs", "retained_jobs", "request_body_bytes"} {
		mustf(t, limits[k] != nil, "limits lack %s: %v", k, sortedKeys(limits))
	}

	doc := s.get("/v1/openapi.json").expect(http.StatusOK)
	var spec map[string]any
	mustf(t, json.Unmarshal(doc.Body, &spec) == nil && spec["openapi"] == "3.1.0", "openapi.json is not an OpenAPI 3.1 document")
}
