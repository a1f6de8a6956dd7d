package contract

import (
	"encoding/json"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
)

const (
	jobID  = "0123456789abcdef0123456789abcdef"
	jobURL = "/v1/jobs/" + jobID
	// etag and lastModified are validators as the server sends them on downloads.
	etag         = `"a1-8-1850a7f2c4e3d000"`
	lastModified = "Fri, 02 Jan 2026 03:04:07 GMT"
	errURL       = "http://127.0.0.1:8080/errors/"
)

// mustLoad returns a fresh Checker of the real document, so coverage never leaks between
// tests.
func mustLoad(t *testing.T) *Checker {
	t.Helper()
	doc, err := os.ReadFile("../../api/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Load(doc)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return c
}

// drop marks a key to remove in an override map.
type dropKey struct{}

var drop = dropKey{}

// object returns base with the overrides applied, as JSON.
func object(base, over map[string]any) []byte {
	m := maps.Clone(base)
	for k, v := range over {
		if v == drop {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

func baseJob() map[string]any {
	return map[string]any{
		"object":        "job",
		"id":            jobID,
		"kind":          "predict",
		"status":        "queued",
		"name":          "",
		"model":         "boltz2",
		"protocol":      nil,
		"progress":      nil,
		"stage":         nil,
		"done":          0,
		"total":         1,
		"params":        map[string]any{"fast": true, "use_msa_server": true, "diffusion_samples": 1, "output_format": "cif"},
		"error":         nil,
		"created_at":    "2026-01-02T03:04:05Z",
		"started_at":    nil,
		"finished_at":   nil,
		"results_ready": false,
		"links": map[string]any{
			"self": jobURL, "results": jobURL + "/results",
			"archive": jobURL + "/archive", "logs": jobURL + "/logs",
		},
	}
}

func job(over map[string]any) []byte { return object(baseJob(), over) }

func succeeded(over map[string]any) map[string]any {
	m := map[string]any{
		"status": "succeeded", "progress": 1, "stage": "writing", "done": 1,
		"started_at": "2026-01-02T03:04:06Z", "finished_at": "2026-01-02T03:05:00Z",
		"results_ready": true,
	}
	maps.Copy(m, over)
	return m
}

func problem(slug string, status int, over map[string]any) []byte {
	return object(map[string]any{
		"type":     errURL + slug,
		"title":    "Something",
		"status":   status,
		"detail":   "what went wrong",
		"instance": jobURL,
	}, over)
}

func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

const (
	ctJSON    = "application/json"
	ctProblem = "application/problem+json"
)

func artifact(path, target, typ string) map[string]any {
	return map[string]any{"path": path, "target": target, "type": typ, "url": jobURL + "/artifacts/" + path}
}

func results(kind string, over map[string]any) []byte {
	return object(map[string]any{
		"object": "results", "job_id": jobID, "kind": kind, "ready": true,
		"artifacts":   []any{artifact("t1.cif", "t1", "structure"), artifact("t1/confidence_t1_model_0.json", "t1", "confidence")},
		"archive_url": jobURL + "/archive",
	}, over)
}

func okRow(over map[string]any) map[string]any {
	m := map[string]any{
		"id": "t1", "status": "ok", "n_chains": 2, "n_residues": 250, "samples": 1, "msa": true,
		"plddt": 0.91, "ptm": 0.88, "runtime_s": 41.5,
	}
	var row map[string]any
	_ = json.Unmarshal(object(m, over), &row)
	return row
}

func catalog() []byte {
	param := map[string]any{"type": "integer", "default": 1, "min": 1, "max": 5, "description": "Samples."}
	caps := map[string]any{"msa": true, "ligands": true, "nucleic_acids": true, "affinity": true,
		"constraints": true, "pae": true, "modified_residues": true, "templates": true, "cyclic": true}
	limits := map[string]any{}
	for _, k := range []string{"residue_ceiling", "chains_per_complex", "ligands_per_complex",
		"constraints_per_complex", "targets_per_job", "max_content_chars", "structure_chars",
		"embed_sequences_per_job", "embed_residues_per_sequence", "request_body_bytes",
		"active_jobs_per_owner", "creates_per_owner_per_minute", "queued_jobs", "retained_jobs",
		"list_default", "list_max", "wait_default_seconds", "wait_max_seconds",
		"boltzgen_designs_per_job", "rfd3_designs_per_job", "name_chars", "connections_per_client", "held_waits_per_client", "predict_runtime_seconds",
		"design_runtime_seconds", "embed_runtime_seconds", "stall_seconds",
		"max_residues", "max_chains_per_complex", "max_ligands_per_complex", "max_constraints_per_complex",
		"max_complexes", "max_designs", "max_budget", "max_rfd3_designs", "max_rfd3_timesteps",
		"max_structure_chars", "max_embed_sequences", "max_embed_sequence_residues", "max_recycling_steps",
		"max_sampling_steps", "max_diffusion_samples", "max_active_jobs_per_ip", "max_active_jobs_per_session",
		"max_submits_per_min", "max_submits_per_min_per_ip", "max_retained_jobs", "max_runtime_predict_s",
		"max_runtime_design_s", "max_runtime_embed_s", "max_stall_s", "max_stall_design_s", "max_stall_embed_s"} {
		limits[k] = 1
	}
	return object(map[string]any{
		"object": "catalog", "api_version": "1.0.0", "msa_server": "https://api.colabfold.com",
		"msa_search": "server https://api.colabfold.com; mode env; pairing pairgreedy",
		"models": []any{
			map[string]any{"id": "boltz2", "kind": "predict", "name": "Boltz-2", "available": true, "unavailable_reason": nil,
				"max_residues": 1024, "measured_wall": 311, "capabilities": caps, "fast": "bf16 kernels",
				"params": map[string]any{"diffusion_samples": param}},
			map[string]any{"id": "esmc-300m", "kind": "embed", "name": "ESM C 300M", "available": false, "unavailable_reason": "no worker is connected",
				"max_residues": nil, "measured_wall": nil, "capabilities": caps, "fast": "", "d_model": 960,
				"params": map[string]any{}},
		},
		"protocols": []any{map[string]any{"id": "rfd3-binder", "model": "rfd3",
			"requires": []any{"structure", "contig"}, "description": "Binder."}},
		"limits": limits,
	}, nil)
}

type checkCase struct {
	name          string
	method, path  string
	status        int
	header        http.Header
	body          []byte
	wantErr       []string // substrings of the error; nil means the check must pass
	wantUncovered bool     // the check passes but is a fallback, outside coverage
}

func TestCheckPasses(t *testing.T) {
	t.Parallel()
	cases := []checkCase{
		{name: "health", method: "GET", path: "/v1/health", status: 200, header: hdr("Content-Type", ctJSON),
			body: []byte(`{"status":"ok","service":"chaperone","api_version":"1.0.0","version":"v0.1.0"}`)},
		{name: "catalog", method: "GET", path: "/v1/models", status: 200, header: hdr("Content-Type", "application/json; charset=utf-8"),
			body: catalog()},
		{name: "openapi", method: "GET", path: "/v1/openapi.json", status: 200, header: hdr("Content-Type", ctJSON),
			body: []byte(`{"openapi":"3.1.0","info":{},"paths":{}}`)},
		{name: "create 202", method: "POST", path: "/v1/predictions", status: 202,
			header: hdr("Content-Type", ctJSON, "Location", jobURL), body: job(nil)},
		{name: "create replay 200", method: "POST", path: "/v1/predictions", status: 200,
			header: hdr("Content-Type", ctJSON), body: job(nil)},
		{name: "design running", method: "POST", path: "/v1/designs", status: 202,
			header: hdr("Content-Type", ctJSON, "Location", jobURL, "Preference-Applied", "wait"),
			body: job(map[string]any{"kind": "design", "model": nil, "protocol": "rfd3-binder",
				"status": "running", "stage": "designing", "progress": 0.25,
				"started_at": "2026-01-02T03:04:06.123Z"})},
		{name: "embed created", method: "post", path: "/v1/embeddings", status: 202,
			header: hdr("Content-Type", ctJSON, "Location", jobURL), body: job(map[string]any{"kind": "embed", "model": "saprot-650m"})},
		{name: "poll succeeded", method: "GET", path: jobURL, status: 200,
			header: hdr("Content-Type", ctJSON, "Preference-Applied", "wait"), body: job(succeeded(nil))},
		{name: "poll queued waiting for a slot", method: "GET", path: jobURL, status: 200, header: hdr("Content-Type", ctJSON),
			body: job(map[string]any{"waiting_for_device": true, "queue": map[string]any{"reason": "busy",
				"accounts_ahead": 2, "chips_busy": 4, "chips_online": 4}})},
		{name: "poll succeeded partial", method: "GET", path: jobURL, status: 200, header: hdr("Content-Type", ctJSON),
			body: job(succeeded(map[string]any{"partial": map[string]any{"delivered": 2, "requested": 3}}))},
		{name: "create with a warning", method: "POST", path: "/v1/predictions", status: 202,
			header: hdr("Content-Type", ctJSON, "Location", jobURL),
			body:   job(map[string]any{"warnings": []any{"larger than measured_wall"}})},
		{name: "poll failed", method: "GET", path: jobURL, status: 200, header: hdr("Content-Type", ctJSON),
			body: job(map[string]any{"status": "failed", "stage": "msa", "error": "boltz: out of memory",
				"started_at": "2026-01-02T03:04:06Z", "finished_at": "2026-01-02T03:04:07Z"})},
		{name: "list", method: "GET", path: "/v1/jobs?limit=1", status: 200, header: hdr("Content-Type", ctJSON),
			body: object(map[string]any{"object": "list", "data": []any{json.RawMessage(job(nil))},
				"has_more": true, "next_cursor": "b3BhcXVl"}, nil)},
		{name: "list last page", method: "GET", path: "/v1/jobs", status: 200, header: hdr("Content-Type", ctJSON),
			body: []byte(`{"object":"list","data":[],"has_more":false,"next_cursor":null}`)},
		{name: "cancel", method: "POST", path: jobURL + "/cancel", status: 200, header: hdr("Content-Type", ctJSON),
			body: job(map[string]any{"status": "canceled", "finished_at": "2026-01-02T03:04:07Z"})},
		{name: "delete", method: "DELETE", path: jobURL, status: 200, header: hdr("Content-Type", ctJSON),
			body: []byte(`{"object":"job","id":"` + jobID + `","deleted":true}`)},
		{name: "results not ready", method: "GET", path: jobURL + "/results", status: 200, header: hdr("Content-Type", ctJSON),
			body: []byte(`{"object":"results","job_id":"` + jobID + `","ready":false,"status":"running"}`)},
		{name: "results predict", method: "GET", path: jobURL + "/results", status: 200, header: hdr("Content-Type", ctJSON),
			body: results("predict", map[string]any{"rows": []any{
				okRow(map[string]any{"complex_plddt": 0.8, "iptm": 0.6, "confidence_score": 0.78,
					"affinity_pred_value": -1.2, "affinity_probability_binary": 0.7,
					"affinity_pred_value1": -1.1, "affinity_probability_binary1": 0.6,
					"affinity_pred_value2": -1.3, "affinity_probability_binary2": 0.8,
					"chain_ptm": map[string]any{"A": 0.9}}),
				map[string]any{"id": "t2", "status": "failed", "error": "too many residues"},
			}})},
		{name: "results design", method: "GET", path: jobURL + "/results", status: 200, header: hdr("Content-Type", ctJSON),
			body: results("design", map[string]any{"designs": []any{
				map[string]any{"id": "d1", "rank": 1, "sequence": "MKV", "file": "designs/d1.cif", "metrics": map[string]any{"iptm": 0.7}},
				map[string]any{"id": "d2", "rank": nil, "sequence": "MKW", "file": "designs/d2.cif", "metrics": map[string]any{}},
			}})},
		{name: "results embed", method: "GET", path: jobURL + "/results", status: 200, header: hdr("Content-Type", ctJSON),
			body: results("embed", map[string]any{"model": "esmc-300m", "pool": "mean", "format": "npz", "d_model": 960,
				"artifacts": []any{artifact("s1.npz", "s1", "embedding")},
				"sequences": []any{map[string]any{"id": "s1", "length": 12, "file": "s1.npz"}}})},
		{name: "archive", method: "GET", path: jobURL + "/archive", status: 200,
			header: hdr("Content-Type", "application/zip", "Content-Disposition", `attachment; filename="`+jobID+`.zip"`,
				"ETag", etag, "Accept-Ranges", "bytes", "Last-Modified", lastModified),
			body: []byte("PK\x03\x04")},
		{name: "archive HEAD", method: "HEAD", path: jobURL + "/archive", status: 200,
			header: hdr("Content-Type", "application/zip", "Content-Disposition", `attachment; filename="`+jobID+`.zip"`,
				"ETag", etag, "Accept-Ranges", "bytes")},
		{name: "archive range", method: "GET", path: jobURL + "/archive", status: 206,
			header: hdr("Content-Type", "application/zip", "Content-Disposition", `attachment; filename="`+jobID+`.zip"`,
				"ETag", etag, "Accept-Ranges", "bytes", "Content-Range", "bytes 2-3/4"),
			body: []byte("\x03\x04")},
		{name: "archive not modified", method: "GET", path: jobURL + "/archive", status: 304, header: hdr("ETag", etag)},
		{name: "archive not ready", method: "GET", path: jobURL + "/archive", status: 409,
			header: hdr("Content-Type", ctProblem), body: problem("conflict", 409, nil)},
		{name: "archive precondition", method: "GET", path: jobURL + "/archive", status: 412,
			header: hdr("Content-Type", ctProblem), body: problem("precondition-failed", 412, nil)},
		{name: "archive past the end", method: "GET", path: jobURL + "/archive", status: 416,
			header: hdr("Content-Type", ctProblem, "Content-Range", "bytes */4"), body: problem("range-not-satisfiable", 416, nil)},
		{name: "artifact nested", method: "GET", path: jobURL + "/artifacts/t1/sub/t1_sample_1.cif", status: 200,
			header: hdr("Content-Type", "chemical/x-cif", "ETag", etag, "Accept-Ranges", "bytes"), body: []byte("data_t1\n")},
		{name: "artifact json", method: "GET", path: jobURL + "/artifacts/t1/confidence.json", status: 200,
			header: hdr("Content-Type", "application/json; charset=utf-8", "ETag", etag, "Accept-Ranges", "bytes"), body: []byte(`{"ptm":0.8}`)},
		{name: "artifact range", method: "GET", path: jobURL + "/artifacts/t1.cif", status: 206,
			header: hdr("Content-Type", "chemical/x-cif", "ETag", etag, "Accept-Ranges", "bytes", "Content-Range", "bytes 5-7/8"),
			body:   []byte("t1\n")},
		{name: "logs", method: "GET", path: jobURL + "/logs", status: 200,
			header: hdr("Content-Type", "text/plain; charset=utf-8", "Accept-Ranges", "bytes"), body: []byte("starting\n")},
		{name: "logs from an offset", method: "GET", path: jobURL + "/logs", status: 206,
			header: hdr("Content-Type", "text/plain; charset=utf-8", "Accept-Ranges", "bytes", "Content-Range", "bytes 9-17/18"),
			body:   []byte("finished\n")},
		{name: "logs nothing new", method: "GET", path: jobURL + "/logs", status: 416,
			header: hdr("Content-Type", ctProblem, "Content-Range", "bytes */18"), body: problem("range-not-satisfiable", 416, nil)},
		{name: "metrics", method: "GET", path: "/metrics", status: 200,
			header: hdr("Content-Type", "text/plain; version=0.0.4; charset=utf-8"), body: []byte("# HELP x\n")},
		{name: "error page", method: "GET", path: "/errors/not-found", status: 200,
			header: hdr("Content-Type", "text/html; charset=utf-8"), body: []byte("<p>not found</p>")},
		{name: "not found", method: "GET", path: "/v1/jobs/nothex", status: 404,
			header: hdr("Content-Type", ctProblem), body: problem("not-found", 404, map[string]any{"instance": "/v1/jobs/nothex"})},
		{name: "bad request", method: "POST", path: "/v1/predictions", status: 400,
			header: hdr("Content-Type", ctProblem), body: problem("invalid-input", 400, map[string]any{"instance": "/v1/predictions"})},
		{name: "reused key", method: "POST", path: "/v1/designs", status: 422,
			header: hdr("Content-Type", ctProblem), body: problem("idempotency-key-reused", 422, nil)},
		{name: "at capacity", method: "POST", path: "/v1/embeddings", status: 429,
			header: hdr("Content-Type", ctProblem, "Retry-After", "7"), body: problem("at-capacity", 429, nil)},
		{name: "unavailable", method: "POST", path: "/v1/predictions", status: 503,
			header: hdr("Content-Type", ctProblem, "Retry-After", "300"), body: problem("unavailable", 503, nil)},
		{name: "internal", method: "GET", path: jobURL, status: 500,
			header: hdr("Content-Type", ctProblem), body: problem("internal", 500, map[string]any{"request_id": "r-1"})},
		{name: "undeclared method", method: "PUT", path: jobURL, status: 405,
			header: hdr("Content-Type", ctProblem, "Allow", "GET, HEAD, DELETE"), body: problem("method-not-allowed", 405, nil),
			wantUncovered: true},
		{name: "unknown path", method: "GET", path: "/v2/nothing", status: 404,
			header: hdr("Content-Type", ctProblem), body: problem("not-found", 404, map[string]any{"instance": "/v2/nothing"}),
			wantUncovered: true},
	}
	c := mustLoad(t)
	for _, tc := range cases {
		if err := c.Check(tc.method, tc.path, tc.status, tc.header, tc.body); err != nil {
			t.Errorf("%s: want pass, got:\n%v", tc.name, err)
		}
	}
	if got := len(c.Responses()) - len(c.Uncovered()); got == 0 {
		t.Error("passing checks covered nothing")
	}
}

func TestCheckFailures(t *testing.T) {
	t.Parallel()
	created := hdr("Content-Type", ctJSON, "Location", jobURL)
	cases := []checkCase{
		{name: "missing required field", method: "GET", path: jobURL, status: 200, header: hdr("Content-Type", ctJSON),
			body: job(map[string]any{"id": drop}), wantErr: []string{"missing property 'id'"}},
		{name: "null field omitted", method: "GET", path: jobURL, status: 200, header: hdr("Content-Type", ctJSON),
			body: job(map[string]any{"error": drop}), wantErr: []string{"missing property 'error'"}},
		{name: "wrong enum", method: "GET", path: jobURL, status: 200, header: hdr("Content-Type", ctJSON),
			body: job(map[string]any{"status": "done"}), wantErr: []string{"'/status'", "must be one of"}},
		{name: "undocumented field", method: "GET", path: jobURL, status: 200, header: hdr("Content-Type", ctJSON),
			body: job(map[string]any{"owner": "ip:1.2.3.4"}), wantErr: []string{"additional properties 'owner' not allowed"}},
		{name: "queue with an unknown reason", method: "GET", path: jobURL, status: 200, header: hdr("Content-Type", ctJSON),
			body: job(map[string]any{"waiting_for_device": true, "queue": map[string]any{"reason": "maintenance",
				"accounts_ahead": 0, "chips_busy": 0, "chips_online": 0}}), wantErr: []string{"'/queue/reason'"}},
		{name: "partial without requested", method: "GET", path: jobURL, status: 200, header: hdr("Content-Type", ctJSON),
			body: job(succeeded(map[string]any{"partial": map[string]any{"delivered": 2}})), wantErr: []string{"missing property 'requested'"}},
		{name: "bad timestamp", method: "GET", path: jobURL, status: 200, header: hdr("Content-Type", ctJSON),
			body: job(map[string]any{"created_at": "yesterday"}), wantErr: []string{"'/created_at'", "date-time"}},
		{name: "failed without error", method: "GET", path: jobURL, status: 200, header: hdr("Content-Type", ctJSON),
			body: job(map[string]any{"status": "failed", "finished_at": "2026-01-02T03:04:07Z"}), wantErr: []string{"'/error'"}},
		{name: "terminal without finished_at", method: "GET", path: jobURL, status: 200, header: hdr("Content-Type", ctJSON),
			body: job(succeeded(map[string]any{"finished_at": nil})), wantErr: []string{"'/finished_at'"}},
		{name: "design with model", method: "GET", path: jobURL, status: 200, header: hdr("Content-Type", ctJSON),
			body: job(map[string]any{"kind": "design", "protocol": "protein-anything"}), wantErr: []string{"'/model'"}},
		{name: "wrong kind for endpoint", method: "POST", path: "/v1/designs", status: 202, header: created,
			body: job(nil), wantErr: []string{"'/kind'"}},
		{name: "wrong content type", method: "GET", path: jobURL, status: 200, header: hdr("Content-Type", "text/html"),
			body: job(nil), wantErr: []string{`Content-Type "text/html" is not documented`, "application/json"}},
		{name: "problem as plain json", method: "GET", path: jobURL, status: 404, header: hdr("Content-Type", ctJSON),
			body: problem("not-found", 404, nil), wantErr: []string{`Content-Type "application/json" is not documented`, ctProblem}},
		{name: "missing content type", method: "GET", path: "/v1/health", status: 200, header: hdr(),
			body: []byte(`{}`), wantErr: []string{"missing Content-Type"}},
		{name: "undocumented status", method: "GET", path: jobURL, status: 418, header: hdr("Content-Type", ctJSON),
			body: job(nil), wantErr: []string{"status 418 not documented", "200, 401, 404, 500"}},
		{name: "503 on a read", method: "GET", path: jobURL + "/results", status: 503, header: hdr("Content-Type", ctProblem, "Retry-After", "300"),
			body: problem("unavailable", 503, nil), wantErr: []string{"status 503 not documented"}},
		{name: "missing Location", method: "POST", path: "/v1/predictions", status: 202, header: hdr("Content-Type", ctJSON),
			body: job(nil), wantErr: []string{"missing required header Location"}},
		{name: "Location not a job path", method: "POST", path: "/v1/predictions", status: 202,
			header: hdr("Content-Type", ctJSON, "Location", "http://x/v1/jobs/"+jobID), body: job(nil),
			wantErr: []string{"header Location"}},
		{name: "missing Retry-After", method: "POST", path: "/v1/predictions", status: 429, header: hdr("Content-Type", ctProblem),
			body: problem("rate-limited", 429, nil), wantErr: []string{"missing required header Retry-After"}},
		{name: "Retry-After not seconds", method: "POST", path: "/v1/predictions", status: 503,
			header: hdr("Content-Type", ctProblem, "Retry-After", "Wed, 21 Oct 2026 07:28:00 GMT"),
			body:   problem("unavailable", 503, nil), wantErr: []string{"header Retry-After", "not a number"}},
		{name: "wrong slug", method: "GET", path: jobURL, status: 404, header: hdr("Content-Type", ctProblem),
			body: problem("conflict", 404, nil), wantErr: []string{"'/type'"}},
		{name: "status not mirrored", method: "GET", path: jobURL, status: 404, header: hdr("Content-Type", ctProblem),
			body: problem("not-found", 400, nil), wantErr: []string{"'/status'"}},
		{name: "500 without request_id", method: "GET", path: jobURL, status: 500, header: hdr("Content-Type", ctProblem),
			body: problem("internal", 500, nil), wantErr: []string{"missing property 'request_id'"}},
		{name: "body not JSON", method: "GET", path: "/v1/health", status: 200, header: hdr("Content-Type", ctJSON),
			body: []byte(`ok`), wantErr: []string{"body is not JSON"}},
		{name: "ok row without plddt", method: "GET", path: jobURL + "/results", status: 200, header: hdr("Content-Type", ctJSON),
			body:    results("predict", map[string]any{"rows": []any{okRow(map[string]any{"plddt": drop})}}),
			wantErr: []string{"missing property 'plddt'"}},
		{name: "nested results", method: "GET", path: jobURL + "/results", status: 200, header: hdr("Content-Type", ctJSON),
			body:    results("embed", map[string]any{"embedding": map[string]any{"model": "esmc-300m"}}),
			wantErr: []string{"body does not match"}},
		{name: "artifact without url", method: "GET", path: jobURL + "/results", status: 200, header: hdr("Content-Type", ctJSON),
			body:    results("predict", map[string]any{"rows": []any{}, "artifacts": []any{map[string]any{"path": "a", "target": "", "type": "structure"}}}),
			wantErr: []string{"body does not match"}},
		{name: "archive without disposition", method: "GET", path: jobURL + "/archive", status: 200,
			header: hdr("Content-Type", "application/zip", "ETag", etag, "Accept-Ranges", "bytes"), wantErr: []string{"missing required header Content-Disposition"}},
		{name: "artifact without ETag", method: "GET", path: jobURL + "/artifacts/t1.cif", status: 200,
			header: hdr("Content-Type", "chemical/x-cif", "Accept-Ranges", "bytes"), wantErr: []string{"missing required header ETag"}},
		{name: "weak ETag", method: "GET", path: jobURL + "/artifacts/t1.cif", status: 200,
			header: hdr("Content-Type", "chemical/x-cif", "Accept-Ranges", "bytes", "ETag", `W/"x"`), wantErr: []string{"header ETag"}},
		{name: "206 without Content-Range", method: "GET", path: jobURL + "/artifacts/t1.cif", status: 206,
			header: hdr("Content-Type", "chemical/x-cif", "Accept-Ranges", "bytes", "ETag", etag), wantErr: []string{"missing required header Content-Range"}},
		{name: "416 without the length", method: "GET", path: jobURL + "/logs", status: 416,
			header: hdr("Content-Type", ctProblem, "Content-Range", "bytes 0-1/*"), body: problem("range-not-satisfiable", 416, nil),
			wantErr: []string{"header Content-Range"}},
		{name: "304 on the log", method: "GET", path: jobURL + "/logs", status: 304, wantErr: []string{"status 304 not documented"}},
		{name: "unknown path not 404", method: "GET", path: "/v1/nothing", status: 200, header: hdr("Content-Type", ctJSON),
			wantErr: []string{"no documented path matches"}},
		{name: "undeclared method not 405", method: "PATCH", path: jobURL, status: 200, header: hdr("Content-Type", ctJSON),
			body: job(nil), wantErr: []string{"method not documented", "DELETE, GET"}},
		{name: "405 without Allow", method: "GET", path: "/v1/predictions", status: 405, header: hdr("Content-Type", ctProblem),
			body: problem("method-not-allowed", 405, nil), wantErr: []string{"missing required header Allow"}},
		{name: "405 Allow incomplete", method: "PUT", path: jobURL, status: 405, header: hdr("Content-Type", ctProblem, "Allow", "GET"),
			body: problem("method-not-allowed", 405, nil), wantErr: []string{"does not name DELETE"}},
		{name: "unknown path 404 as text", method: "GET", path: "/nope", status: 404, header: hdr("Content-Type", "text/plain"),
			body: []byte("404 page not found"), wantErr: []string{`Content-Type "text/plain" is not documented`}},
		{name: "health with extra field", method: "GET", path: "/v1/health", status: 200, header: hdr("Content-Type", ctJSON),
			body:    []byte(`{"status":"ok","service":"chaperone","api_version":"1.0.0","version":"x","uptime":3}`),
			wantErr: []string{"additional properties 'uptime' not allowed"}},
		{name: "catalog limit not integer", method: "GET", path: "/v1/models", status: 200, header: hdr("Content-Type", ctJSON),
			body: func() []byte {
				var m map[string]any
				_ = json.Unmarshal(catalog(), &m)
				m["limits"].(map[string]any)["stall"] = "15m"
				return object(m, nil)
			}(), wantErr: []string{"'/limits/stall'"}},
	}
	c := mustLoad(t)
	for _, tc := range cases {
		err := c.Check(tc.method, tc.path, tc.status, tc.header, tc.body)
		if err == nil {
			t.Errorf("%s: want an error, got none", tc.name)
			continue
		}
		for _, want := range tc.wantErr {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error does not say %q:\n%v", tc.name, want, err)
			}
		}
	}
	if covered := len(c.Responses()) - len(c.Uncovered()); covered != 0 {
		t.Errorf("failed checks marked %d responses covered: %v", covered, c.Covered())
	}
}

func TestPathMatching(t *testing.T) {
	t.Parallel()
	c := mustLoad(t)
	cases := []struct{ path, want string }{
		{"/v1/jobs", "/v1/jobs"},
		{"/v1/jobs?cursor=abc&limit=3", "/v1/jobs"},
		{"http://127.0.0.1:8080/v1/jobs/abc/logs", "/v1/jobs/{job_id}/logs"},
		{jobURL, "/v1/jobs/{job_id}"},
		{jobURL + "/results", "/v1/jobs/{job_id}/results"},
		{jobURL + "/cancel", "/v1/jobs/{job_id}/cancel"},
		{jobURL + "/artifacts/t1.cif", "/v1/jobs/{job_id}/artifacts/{path}"},
		{jobURL + "/artifacts/t1/results", "/v1/jobs/{job_id}/artifacts/{path}"},
		{jobURL + "/artifacts/a/b/c.npz", "/v1/jobs/{job_id}/artifacts/{path}"},
		{"/errors/conflict", "/errors/{slug}"},
		{"/v1/openapi.json", "/v1/openapi.json"},
		{jobURL + "/artifacts/", ""},
		{jobURL + "/artifacts", ""},
		{jobURL + "/results/extra", ""},
		{"/v1/jobs/", ""},
		{"/v1//results", ""},
		{"/", ""},
		{"/metrics/x", ""},
	}
	for _, tc := range cases {
		got := ""
		if item := c.match(requestPath(tc.path)); item != nil {
			got = item.template
		}
		if got != tc.want {
			t.Errorf("match(%q) = %q, want %q", tc.path, got, tc.want)
		}
	}
}

func TestCoverage(t *testing.T) {
	t.Parallel()
	c := mustLoad(t)
	health := []byte(`{"status":"ok","service":"chaperone","api_version":"1.0.0","version":"dev"}`)
	if err := c.Check("GET", "/v1/health", 200, hdr("Content-Type", ctJSON), health); err != nil {
		t.Fatal(err)
	}
	// A failing check of another response must not count.
	_ = c.Check("GET", "/v1/health", 500, hdr("Content-Type", ctProblem), problem("internal", 500, nil))

	cov := c.Covered()
	if !cov["GET /v1/health 200"] {
		t.Error(`Covered()["GET /v1/health 200"] = false after a passing check`)
	}
	if v, ok := cov["GET /v1/health 500"]; !ok || v {
		t.Errorf(`Covered()["GET /v1/health 500"] = %v, %v; want false, true`, v, ok)
	}
	un := c.Uncovered()
	if slices.Contains(un, "GET /v1/health 200") || !slices.Contains(un, "GET /v1/health 500") {
		t.Errorf("Uncovered() = %v", un)
	}
	if len(un) != len(c.Responses())-1 {
		t.Errorf("Uncovered() has %d of %d responses, want all but one", len(un), len(c.Responses()))
	}
	for _, want := range []string{"POST /v1/predictions 202", "POST /v1/predictions 200",
		"GET /v1/jobs/{job_id}/artifacts/{path} 404", "POST /v1/jobs/{job_id}/cancel 409"} {
		if _, ok := cov[want]; !ok {
			t.Errorf("Covered() lacks %q", want)
		}
	}
	cov["GET /v1/health 500"] = true // a copy: must not change the Checker
	if c.Covered()["GET /v1/health 500"] {
		t.Error("Covered() returned the Checker's own map")
	}
}

func TestOperations(t *testing.T) {
	t.Parallel()
	want := []string{
		"DELETE /v1/jobs/{job_id}",
		"GET /errors/{slug}",
		"GET /metrics",
		"GET /v1/health",
		"GET /v1/jobs",
		"GET /v1/jobs/{job_id}",
		"GET /v1/jobs/{job_id}/archive",
		"GET /v1/jobs/{job_id}/artifacts/{path}",
		"GET /v1/jobs/{job_id}/logs",
		"GET /v1/jobs/{job_id}/results",
		"GET /v1/models",
		"GET /v1/openapi.json",
		"GET /v1/ready",
		"POST /v1/designs",
		"POST /v1/embeddings",
		"POST /v1/jobs/{job_id}/cancel",
		"POST /v1/predictions",
	}
	if got := mustLoad(t).Operations(); !slices.Equal(got, want) {
		t.Errorf("Operations() =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestLoadRejects(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, doc, want string }{
		{"not JSON", `{`, "parse document"},
		{"OpenAPI 3.0", `{"openapi":"3.0.3","paths":{"/x":{"get":{"responses":{"200":{"description":"ok"}}}}}}`, "3.1"},
		{"no paths", `{"openapi":"3.1.0","paths":{}}`, "no paths"},
		{"dangling response ref", `{"openapi":"3.1.0","paths":{"/x":{"get":{"responses":{"200":{"$ref":"#/components/responses/Nope"}}}}}}`, "Nope"},
		{"dangling schema ref", `{"openapi":"3.1.0","paths":{"/x":{"get":{"responses":{"200":{"description":"ok",
			"content":{"application/json":{"schema":{"$ref":"#/components/schemas/Nope"}}}}}}}}}`, "Nope"},
		{"multi-segment not last", `{"openapi":"3.1.0","paths":{"/a/{p}/b":{"parameters":[{"name":"p","in":"path","required":true,
			"x-multi-segment":true,"schema":{"type":"string"}}],"get":{"responses":{"200":{"description":"ok"}}}}}}`, "last segment"},
	}
	for _, tc := range cases {
		_, err := Load([]byte(tc.doc))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Load error = %v, want one mentioning %q", tc.name, err, tc.want)
		}
	}
}
