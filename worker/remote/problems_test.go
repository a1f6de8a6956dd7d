package remote_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/api/problem"
	artifactfs "github.com/chaperone-bio/chaperone/artifact/fs"
	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/store"
	"github.com/chaperone-bio/chaperone/store/sqlite"
	"github.com/chaperone-bio/chaperone/worker"
	"github.com/chaperone-bio/chaperone/worker/backend"
	"github.com/chaperone-bio/chaperone/worker/remote"
)

// workerServer is the worker endpoints on a real backend (a SQLite store, an artifact
// folder), with a worker token and one job that the token's worker "w" holds.
type workerServer struct {
	url, token string
	keys       *keys
	store      *sqlite.Store
	arts       *artifactfs.Store
	queue      *backend.Queue
	handler    *remote.Handler
	staging    string // the uploads folder
	lease      *worker.Lease
}

func newWorkerServer(t *testing.T, cfg remote.HandlerConfig) *workerServer {
	t.Helper()
	dir := t.TempDir()
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	arts, err := artifactfs.Open(filepath.Join(dir, "artifacts"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { arts.Close() })
	quiet := slog.New(slog.DiscardHandler)
	q := backend.New(backend.Config{Store: st, Artifacts: arts, MaxAttempts: 2, Logger: quiet})
	ks := &keys{}
	ws := &workerServer{token: ks.add("gpu-node-1", true), keys: ks, store: st, arts: arts, queue: q, staging: filepath.Join(dir, "uploads")}
	cfg.Queue, cfg.Keys, cfg.Leases, cfg.Staging, cfg.Logger = q, ks, q, ws.staging, quiet
	if ws.handler, err = remote.NewHandler(cfg); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(ws.handler)
	t.Cleanup(srv.Close)
	t.Cleanup(ws.handler.Close)
	ws.url = srv.URL
	ws.lease = ws.queueAndLease(t)
	return ws
}

// owner owns the jobs of a workerServer.
var owner = job.Owner{Kind: job.OwnerIP, ID: "192.0.2.1"}

// queueAndLease queues a job and leases it as the token's worker "w".
func (ws *workerServer) queueAndLease(t *testing.T) *worker.Lease {
	t.Helper()
	ctx := context.Background()
	j := &job.Job{ID: job.NewID(), Owner: owner, Kind: job.PredictKind,
		Model: "boltz2", RunModel: "boltz2", Status: job.Queued, CreatedAt: time.Now(), Total: 1}
	if _, err := ws.store.CreateJob(ctx, j, store.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	l, err := client(t, ws.url, ws.token).Lease(ctx, worker.LeaseRequest{WorkerID: "w", Models: []string{"boltz2"}})
	if err != nil || l == nil || l.JobID != j.ID {
		t.Fatalf("lease: %+v %v", l, err)
	}
	return l
}

// do sends one request with the server's token unless headers name an Authorization.
func (ws *workerServer) do(t *testing.T, method, path, body string, headers ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, ws.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+ws.token)
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, b
}

// TestWorkerErrorsAreProblems: every refusal of the worker endpoints is a problem detail
// of the public API's types, with a detail in the request's own terms: no Go types, no
// store, no socket addresses.
func TestWorkerErrorsAreProblems(t *testing.T) {
	t.Parallel()
	ws := newWorkerServer(t, remote.HandlerConfig{})
	attempt := func(id string, n int) string { return "/v1/worker/jobs/" + id + "/attempts/" + strconv.Itoa(n) }
	held := attempt(ws.lease.JobID, ws.lease.Attempt)
	other := "Authorization: Bearer " + ws.keys.add("gpu-node-2", true)
	at0 := []string{"Upload-Offset: 0"}
	unknown, stale := attempt(job.NewID(), 1), attempt(ws.lease.JobID, ws.lease.Attempt+1)
	fence := func(id string, n int, extra string) string {
		return `{"job_id":"` + id + `","attempt":` + strconv.Itoa(n) + extra + `}`
	}
	tests := []struct {
		name, method, path, body string
		headers                  []string
		status                   int
		slug, says               string
	}{
		{"no token", "POST", "/v1/worker/announce", `{}`, []string{"Authorization: "}, 401, "unauthorized", "worker token"},
		{"an API key's scheme", "GET", "/v1/worker/token", ``, []string{"Authorization: Basic eDp5"}, 401, "unauthorized", "worker token"},
		{"broken JSON", "POST", "/v1/worker/announce", `{"worker_id":`, nil, 400, "invalid-input", "ends in the middle"},
		{"not JSON", "POST", "/v1/worker/heartbeat", `hello`, nil, 400, "invalid-input", "not JSON"},
		{"an array for an object", "POST", "/v1/worker/announce", `[]`, nil, 400, "invalid-input", "must be a JSON object, not array"},
		{"a number for a string", "POST", "/v1/worker/lease", `{"worker_id":5}`, nil, 400, "invalid-input", "worker_id: want a string, not number"},
		{"a string for a number", "POST", "/v1/worker/heartbeat", `{"job_id":"x","attempt":"1"}`, nil, 400, "invalid-input", "attempt: want a whole number, not string"},
		{"an empty body", "POST", "/v1/worker/release", ``, nil, 400, "invalid-input", "empty"},
		{"a heartbeat of an unknown job", "POST", "/v1/worker/heartbeat", fence(job.NewID(), 1, ""), nil, 409, "lease-lost", "no longer holds"},
		{"a heartbeat of a stale attempt", "POST", "/v1/worker/heartbeat", fence(ws.lease.JobID, ws.lease.Attempt+1, ""), nil, 409, "lease-lost", "no longer holds"},
		{"an outcome that is none", "POST", "/v1/worker/complete", fence(ws.lease.JobID, ws.lease.Attempt, `,"status":"bogus"`), nil, 400, "invalid-input", `not "bogus"`},
		{"a log of an unknown job", "POST", unknown + "/log", "line\n", at0, 409, "lease-lost", "no longer holds"},
		{"a log of a stale attempt", "POST", stale + "/log", "line\n", at0, 409, "lease-lost", "no longer holds"},
		{"a log of another token's lease", "POST", held + "/log", "line\n", []string{other, "Upload-Offset: 0"}, 409, "lease-lost", "no longer holds"},
		{"a log of a malformed job id", "POST", "/v1/worker/jobs/job_1/attempts/1/log", "line\n", at0, 400, "invalid-input", "not a job id"},
		{"a log of attempt 0", "POST", attempt(ws.lease.JobID, 0) + "/log", "line\n", at0, 400, "invalid-input", "not an attempt"},
		{"a log without an offset", "POST", held + "/log", "line\n", nil, 400, "invalid-input", "Upload-Offset"},
		{"a log past what the server holds", "POST", held + "/log", "line\n", []string{"Upload-Offset: 9"}, 409, "offset-mismatch", "holds 0 bytes"},
		{"an upload without an offset", "PUT", held + "/artifacts/t1.cif", "data", nil, 400, "invalid-input", "Upload-Offset"},
		{"an upload at another offset", "PUT", held + "/artifacts/t1.cif", "data", []string{"Upload-Offset: 7"}, 409, "offset-mismatch", "holds 0 bytes"},
		{"an unknown endpoint", "POST", "/v1/worker/nope", `{}`, nil, 404, "not-found", "no worker endpoint"},
		{"a wrong method", "GET", "/v1/worker/announce", ``, nil, 405, "method-not-allowed", "allowed: POST"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, body := ws.do(t, tc.method, tc.path, tc.body, tc.headers...)
			p := mustProblem(t, res, body)
			if res.StatusCode != tc.status || p.Slug() != tc.slug || !strings.Contains(p.Detail, tc.says) {
				t.Errorf("%d %s %q; want %d %s saying %q", res.StatusCode, p.Slug(), p.Detail, tc.status, tc.slug, tc.says)
			}
		})
	}
}

// internals are what an answer must not show: Go types (worker.Announcement), encoding/json's
// and the stores' words, socket addresses.
var internals = regexp.MustCompile(`\b[a-z]+\.[A-Z][A-Za-z]+\b|Go (value|struct)|json: |sqlite|postgres|\d+\.\d+\.\d+\.\d+:\d+`)

// mustProblem decodes a problem answer and checks that it is one and shows nothing
// internal.
func mustProblem(t *testing.T, res *http.Response, body []byte) problem.Problem {
	t.Helper()
	var p problem.Problem
	if ct := res.Header.Get("Content-Type"); ct != "application/problem+json" || json.Unmarshal(body, &p) != nil {
		t.Fatalf("%d %s: not a problem: %s", res.StatusCode, ct, body)
	}
	if p.Status != res.StatusCode || p.Title == "" || p.Detail == "" || !strings.Contains(p.Type, "/errors/") {
		t.Errorf("an incomplete problem: %s", body)
	}
	if tell := internals.FindString(p.Detail); tell != "" {
		t.Errorf("the detail shows %q: %s", tell, p.Detail)
	}
	return p
}
