// Package e2e tests chaperone from the outside: each test starts the real server on
// 127.0.0.1:0 with a temporary data folder and speaks HTTP to it, as a client would.
// Every response is checked against the server's own OpenAPI document.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/align/aligntest"
	"github.com/chaperone-bio/chaperone/api"
	"github.com/chaperone-bio/chaperone/app"
	"github.com/chaperone-bio/chaperone/catalog"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/enginetest"
	"github.com/chaperone-bio/chaperone/internal/contract"
)

// testModels are the catalog models the test engine claims in these tests.
var testModels = []string{"boltz2", "esmfold2", "boltzgen", "esmc-300m", "esmc-600m"}

var (
	checker     *contract.Checker
	checkerOnce sync.Once
)

func contractChecker(t *testing.T) *contract.Checker {
	checkerOnce.Do(func() {
		c, err := contract.Load(api.OpenAPI())
		if err != nil {
			t.Fatalf("loading the OpenAPI document: %v", err)
		}
		checker = c
	})
	return checker
}

// server is a running chaperone under test.
type server struct {
	*app.App
	t      *testing.T
	engine *enginetest.Engine
	dir    string
	// msa is the stand-in ColabFold server that the alignment stage searches on, unless
	// an option chose another.
	msa *aligntest.ColabFold
}

// option changes the server's configuration before it starts.
type option func(*app.Config)

func withLimits(change func(*catalog.Limits)) option {
	return func(c *app.Config) { change(&c.Limits) }
}

func withoutWorker() option { return func(c *app.Config) { c.NoWorker = true } }

func startServer(t *testing.T, opts ...option) *server {
	t.Helper()
	dir := t.TempDir()
	eng := enginetest.New(testModels...)
	msa := aligntest.NewColabFold(0)
	t.Cleanup(msa.Close)
	cfg := app.Config{
		MSAServerURL: msa.URL,
		Addr:         "127.0.0.1:0",
		DataDir:      dir,
		Version:      "test",
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
		Limits:       catalog.DefaultLimits(),
		Engines:      []engine.Engine{eng},
		Slots:        2,
		WorkerID:     "test-worker",
		Heartbeat:    100 * time.Millisecond,
		ReapEvery:    200 * time.Millisecond,
		LeaseTTL:     3 * time.Second,
	}
	if os.Getenv("E2E_VERBOSE") != "" {
		cfg.Logger = slog.Default()
	}
	for _, o := range opts {
		o(&cfg)
	}
	stores, err := app.OpenStores(context.Background(), cfg.DataDir)
	if err != nil {
		t.Fatalf("opening the stores: %v", err)
	}
	cfg.Store, cfg.Artifacts = stores.Jobs, stores.Artifacts
	a, err := app.Start(context.Background(), cfg)
	if err != nil {
		stores.Close()
		t.Fatalf("starting the server: %v", err)
	}
	t.Cleanup(func() { a.Close(); stores.Close() })
	s := &server{App: a, t: t, engine: eng, dir: dir, msa: msa}
	return s
}

// response is a recorded HTTP response.
type response struct {
	t      *testing.T
	Status int
	Header http.Header
	Body   []byte
	method string
	path   string
}

// request is one call; headers are "Name: value" strings.
func (s *server) request(method, path string, body any, headers ...string) *response {
	s.t.Helper()
	return call(s.t, s.URL, method, path, body, headers...)
}

func call(t *testing.T, base, method, path string, body any, headers ...string) *response {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		enc, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(enc)
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ":")
		if k = strings.TrimSpace(k); http.CanonicalHeaderKey(k) == "Content-Type" {
			req.Header.Set(k, strings.TrimSpace(v)) // instead of the JSON default
			continue
		}
		req.Header.Add(k, strings.TrimSpace(v))
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", method, path, err)
	}
	r := &response{t: t, Status: res.StatusCode, Header: res.Header, Body: b, method: method, path: req.URL.Path}
	if err := contractChecker(t).Check(method, req.URL.Path, res.StatusCode, res.Header, b); err != nil {
		t.Errorf("%s %s → %d does not match the OpenAPI document: %v\nbody: %s", method, path, res.StatusCode, err, truncate(b))
	}
	return r
}

func (s *server) get(path string, headers ...string) *response {
	s.t.Helper()
	return s.request(http.MethodGet, path, nil, headers...)
}

func (s *server) post(path string, body any, headers ...string) *response {
	s.t.Helper()
	return s.request(http.MethodPost, path, body, headers...)
}

func truncate(b []byte) string {
	if len(b) > 600 {
		return string(b[:600]) + "…"
	}
	return string(b)
}

// expect fails the test unless the status is want.
func (r *response) expect(want int) *response {
	r.t.Helper()
	if r.Status != want {
		r.t.Fatalf("%s %s: status %d, want %d; body: %s", r.method, r.path, r.Status, want, truncate(r.Body))
	}
	return r
}

func (r *response) json() map[string]any {
	r.t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		r.t.Fatalf("%s %s: body is not a JSON object: %v: %s", r.method, r.path, err, truncate(r.Body))
	}
	return m
}

// problem checks that the response is a problem of the given status and slug and returns
// its detail.
func (r *response) problem(status int, slug string) string {
	r.t.Helper()
	r.expect(status)
	if ct := r.Header.Get("Content-Type"); ct != "application/problem+json" {
		r.t.Fatalf("%s %s: Content-Type %q, want application/problem+json", r.method, r.path, ct)
	}
	p := r.json()
	if typ, _ := p["type"].(string); !strings.HasSuffix(typ, "/errors/"+slug) {
		r.t.Fatalf("%s %s: problem type %q, want slug %q", r.method, r.path, typ, slug)
	}
	if p["status"] != float64(status) || p["instance"] != r.path || p["title"] == "" {
		r.t.Fatalf("%s %s: problem fields wrong: %s", r.method, r.path, r.Body)
	}
	detail, _ := p["detail"].(string)
	if detail == "" {
		r.t.Fatalf("%s %s: problem without detail", r.method, r.path)
	}
	return detail
}

// create submits a job and returns its id.
func (s *server) create(path string, body any, headers ...string) string {
	s.t.Helper()
	r := s.post(path, body, headers...).expect(http.StatusAccepted)
	id, _ := r.json()["id"].(string)
	if r.Header.Get("Location") != "/v1/jobs/"+id {
		s.t.Fatalf("Location %q, want /v1/jobs/%s", r.Header.Get("Location"), id)
	}
	return id
}

func (s *server) predict(name string, headers ...string) string {
	s.t.Helper()
	return s.create("/v1/predictions", map[string]any{"sequence": "MKTAYIAKQRQISFVKSHFSRQ", "name": name}, headers...)
}

// waitFor long-polls the job until pred holds, failing after timeout.
func (s *server) waitFor(id string, timeout time.Duration, pred func(job map[string]any) bool, headers ...string) map[string]any {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		j := s.get("/v1/jobs/"+id, append([]string{"Prefer: wait=1"}, headers...)...).expect(http.StatusOK).json()
		if pred(j) {
			return j
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("job %s: condition not reached in %s; last state: %v", id, timeout, j)
		}
	}
}

func (s *server) waitStatus(id, status string, headers ...string) map[string]any {
	s.t.Helper()
	return s.waitFor(id, 20*time.Second, func(j map[string]any) bool { return j["status"] == status }, headers...)
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func mustf(t *testing.T, ok bool, format string, args ...any) {
	t.Helper()
	if !ok {
		t.Fatalf(format, args...)
	}
}
