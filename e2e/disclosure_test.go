package e2e

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/chaperone-bio/chaperone/app"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/boltz"
)

// lockedBuffer is a log the server writes from several goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestUnavailableTellsCallersWhatIsMissingAndTheOperatorTheRest: a boltz whose self-check
// fails with a secret in its output makes boltz2 unavailable; the caller's 503 names the
// model and the kind of fault, the operator's log has the tool's path and output.
func TestUnavailableTellsCallersWhatIsMissingAndTheOperatorTheRest(t *testing.T) {
	t.Parallel()
	const secret = "AWS_SECRET_ACCESS_KEY=hunter2"
	dir := t.TempDir()
	tool := filepath.Join(dir, "boltz")
	if err := os.WriteFile(tool, []byte("#!/bin/sh\necho 'Traceback: "+secret+"' >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var log lockedBuffer
	s := startServer(t, func(c *app.Config) {
		c.Engines = []engine.Engine{boltz.New(boltz.Config{})}
		c.Tools = engine.Tools{"boltz": tool}
		c.Logger = slog.New(slog.NewTextHandler(&log, nil))
	})
	detail := s.post("/v1/predictions", map[string]any{"sequence": "MKTAYIAK"}).problem(http.StatusServiceUnavailable, "unavailable")
	mustf(t, detail == "No live worker can run model boltz2: self-check failed: the boltz command is installed but its --help fails.", "503 detail %q", detail)
	for _, leak := range []string{secret, dir, "Traceback"} {
		mustf(t, !strings.Contains(detail, leak), "503 detail %q carries %q", detail, leak)
	}
	mustf(t, strings.Contains(log.String(), "hunter2") && strings.Contains(log.String(), tool), "the operator's log lacks the tool's path and output:\n%s", log.String())
}

// TestMetricsCanLiveOnAnOperatorOnlyAddress: with MetricsAddr the API answers /metrics
// with a 404 problem and the metrics are served on their own address.
func TestMetricsCanLiveOnAnOperatorOnlyAddress(t *testing.T) {
	t.Parallel()
	s := startServer(t, func(c *app.Config) { c.MetricsAddr = "127.0.0.1:0" })
	s.get("/metrics").problem(http.StatusNotFound, "not-found")
	mustf(t, !strings.HasPrefix(s.MetricsURL, s.URL), "metrics at %s, with the API at %s", s.MetricsURL, s.URL)
	res, err := http.Get(s.MetricsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	mustf(t, res.StatusCode == http.StatusOK && strings.Contains(string(body), "chaperone_http_requests_total"), "metrics: %d %s", res.StatusCode, body)

	shared := startServer(t)
	mustf(t, shared.MetricsURL == shared.URL+"/metrics", "metrics URL %s", shared.MetricsURL)
	shared.get("/metrics").expect(http.StatusOK)
}

// TestCreatesNeedJSONAndRequestsMustParse: a create sent as anything but JSON is a 415 (a
// browser form from another site cannot create jobs); duplicate keys, a query string that
// does not parse is a 400, and a path that is not clean a 404, never ignored or redirected.
func TestCreatesNeedJSONAndRequestsMustParse(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	for _, path := range []string{"/v1/predictions", "/v1/designs", "/v1/embeddings"} {
		for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"} {
			s.post(path, `{"sequence":"MKT"}`, "Content-Type: "+ct).problem(http.StatusUnsupportedMediaType, "unsupported-media-type")
		}
	}
	s.post("/v1/predictions", `{"sequence":"MKT"}`, "Content-Type: application/json; charset=utf-8").expect(http.StatusAccepted)
	detail := s.post("/v1/predictions", `{"sequence":"MKT","sequence":"AAAA"}`).problem(http.StatusBadRequest, "invalid-input")
	mustf(t, strings.Contains(detail, `"sequence" appears twice`), "duplicate key: %q", detail)
	s.get("/v1/jobs?cursor=%%%x").problem(http.StatusBadRequest, "invalid-input")
	for _, path := range []string{"/v1//jobs", "/v1/jobs/./x", "/v1/models/.."} {
		r := call(t, s.URL, http.MethodGet, path, nil)
		mustf(t, r.Status == http.StatusNotFound && r.Header.Get("Content-Type") == "application/problem+json" && r.Header.Get("Location") == "",
			"GET %s: %d %s, Location %q", path, r.Status, r.Header.Get("Content-Type"), r.Header.Get("Location"))
	}
}
