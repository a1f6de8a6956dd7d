package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeServer answers each request with the next of its replies and records what it got.
type fakeServer struct {
	*httptest.Server
	mu       sync.Mutex
	requests []*http.Request
	bodies   []string
	replies  []func(w http.ResponseWriter, r *http.Request)
}

func newFake(t *testing.T, replies ...func(w http.ResponseWriter, r *http.Request)) *fakeServer {
	t.Helper()
	f := &fakeServer{replies: replies}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		n := len(f.requests)
		f.requests = append(f.requests, r)
		f.bodies = append(f.bodies, string(b))
		f.mu.Unlock()
		if n >= len(f.replies) {
			t.Errorf("request %d (%s %s) beyond the %d scripted", n+1, r.Method, r.URL, len(f.replies))
			http.Error(w, "unscripted", http.StatusTeapot)
			return
		}
		f.replies[n](w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeServer) got() []*http.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*http.Request(nil), f.requests...)
}

func problemReply(status int, slug string, header ...string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"type":"http://x/errors/%s","title":"T","status":%d,"detail":"because","instance":%q}`, slug, status, r.URL.Path)
	}
}

func jobReply(status int, job string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, job)
	}
}

const jobJSON = `{"object":"job","id":"0123456789abcdef0123456789abcdef","kind":"predict","status":"queued","name":"n",
	"model":"boltz2","protocol":null,"progress":null,"stage":null,"done":0,"total":1,"params":{"fast":true},
	"error":null,"created_at":"2026-01-02T03:04:05.000Z","started_at":null,"finished_at":null,"results_ready":false,
	"links":{"self":"/v1/jobs/0123456789abcdef0123456789abcdef","results":"r","archive":"a","logs":"l"}}`

// testClient talks to url and records the delays it would have slept instead of sleeping.
func testClient(t *testing.T, url string, r Retry) (*Client, *[]time.Duration) {
	t.Helper()
	c, err := New(url, WithRetry(r))
	if err != nil {
		t.Fatal(err)
	}
	var slept []time.Duration
	c.sleep = func(ctx context.Context, d time.Duration) error {
		slept = append(slept, d)
		return ctx.Err()
	}
	return c, &slept
}

func TestCreateRetriesWithOneIdempotencyKeyAndHonoursRetryAfter(t *testing.T) {
	t.Parallel()
	f := newFake(t,
		problemReply(429, "rate-limited", "Retry-After", "2"),
		problemReply(503, "unavailable", "Retry-After", "3"),
		jobReply(202, jobJSON),
		jobReply(202, jobJSON),
	)
	c, slept := testClient(t, f.URL, Retry{Attempts: 3})
	ctx := t.Context()
	j, err := c.CreatePrediction(ctx, &PredictRequest{Sequence: "MKT"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if j.ID != "0123456789abcdef0123456789abcdef" || j.Status != Queued || j.Model != "boltz2" {
		t.Errorf("job = %+v", j)
	}
	reqs := f.got()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	key := reqs[0].Header.Get("Idempotency-Key")
	for i, r := range reqs {
		if got := r.Header.Get("Idempotency-Key"); got == "" || got != key {
			t.Errorf("attempt %d: Idempotency-Key %q, want the first attempt's %q", i+1, got, key)
		}
		if f.bodies[i] != `{"sequence":"MKT"}` {
			t.Errorf("attempt %d: body %s", i+1, f.bodies[i])
		}
	}
	if len(*slept) != 2 || (*slept)[0] < 2*time.Second || (*slept)[0] > 2200*time.Millisecond ||
		(*slept)[1] < 3*time.Second || (*slept)[1] > 3300*time.Millisecond {
		t.Errorf("slept %v; want the Retry-After of each answer, plus at most a tenth", *slept)
	}

	// A new call is a new request: a new key.
	if _, err := c.CreatePrediction(ctx, &PredictRequest{Sequence: "MKT"}, nil); err != nil {
		t.Fatal(err)
	}
	if next := f.got()[3].Header.Get("Idempotency-Key"); next == key {
		t.Errorf("a second create reused the key %q", key)
	}
}

func TestCallerIdempotencyKeyAndWaitAreSent(t *testing.T) {
	t.Parallel()
	f := newFake(t, jobReply(200, jobJSON))
	c, _ := testClient(t, f.URL, Retry{})
	_, err := c.CreateDesign(t.Context(), &DesignRequest{Protocol: "protein-anything", Spec: "x"},
		&CreateOptions{IdempotencyKey: "mine-1", Wait: 1500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	r := f.got()[0]
	if r.Header.Get("Idempotency-Key") != "mine-1" || r.Header.Get("Prefer") != "wait=2" || r.URL.Path != "/v1/designs" {
		t.Errorf("sent %s %s with Idempotency-Key %q, Prefer %q", r.Method, r.URL.Path, r.Header.Get("Idempotency-Key"), r.Header.Get("Prefer"))
	}
}

func TestWhatIsRetriedAndWhatIsNot(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		replies    []func(http.ResponseWriter, *http.Request)
		wantStatus int // of the final error; 0: success
		wantSlept  int
	}{
		{"429 waits out every Retry-After, beyond Attempts", []func(http.ResponseWriter, *http.Request){
			problemReply(429, "rate-limited", "Retry-After", "1"),
			problemReply(429, "rate-limited", "Retry-After", "1"),
			problemReply(429, "rate-limited", "Retry-After", "1"),
			problemReply(429, "rate-limited", "Retry-After", "1"),
			jobReply(200, jobJSON),
		}, 0, 4},
		{"429 until patience runs out", []func(http.ResponseWriter, *http.Request){
			problemReply(429, "rate-limited", "Retry-After", "2"),
			problemReply(429, "rate-limited", "Retry-After", "2"),
			problemReply(429, "rate-limited", "Retry-After", "2"),
		}, 429, 2},
		{"429 without Retry-After until attempts run out", []func(http.ResponseWriter, *http.Request){
			problemReply(429, "rate-limited"),
			problemReply(429, "rate-limited"),
			problemReply(429, "rate-limited"),
		}, 429, 2},
		{"503 asking longer than MaxRetryAfter ends at once", []func(http.ResponseWriter, *http.Request){
			problemReply(503, "unavailable", "Retry-After", "300"),
		}, 503, 0},
		{"502 from a proxy, without Retry-After, backs off", []func(http.ResponseWriter, *http.Request){
			func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, "<html>bad gateway</html>", http.StatusBadGateway)
			},
			jobReply(200, jobJSON),
		}, 0, 1},
		{"500 is not retried", []func(http.ResponseWriter, *http.Request){
			problemReply(500, "internal"),
		}, 500, 0},
		{"400 is not retried", []func(http.ResponseWriter, *http.Request){
			problemReply(400, "invalid-input"),
		}, 400, 0},
		{"404 is not retried", []func(http.ResponseWriter, *http.Request){
			problemReply(404, "not-found"),
		}, 404, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, tt.replies...)
			c, slept := testClient(t, f.URL, Retry{Attempts: 3, Backoff: 100 * time.Millisecond, Patience: 4 * time.Second})
			_, err := c.GetJob(t.Context(), "0123456789abcdef0123456789abcdef")
			if got := StatusCode(err); got != tt.wantStatus {
				t.Errorf("status of the error = %d (%v), want %d", got, err, tt.wantStatus)
			}
			if len(f.got()) != len(tt.replies) {
				t.Errorf("%d requests, want %d", len(f.got()), len(tt.replies))
			}
			if len(*slept) != tt.wantSlept {
				t.Errorf("slept %v, want %d waits", *slept, tt.wantSlept)
			}
		})
	}
}

func TestProblemsBecomeErrors(t *testing.T) {
	t.Parallel()
	f := newFake(t,
		problemReply(503, "unavailable", "Retry-After", "300", "X-Request-Id", "req-9"),
		func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(403)
			io.WriteString(w, "  <html>error 1010: forbidden</html>  ")
		},
	)
	c, _ := testClient(t, f.URL, Retry{Attempts: 1})
	_, err := c.CreateEmbedding(t.Context(), &EmbedRequest{Sequence: "MKT"}, nil)
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("err = %v, want an *Error", err)
	}
	if e.Status != 503 || e.Slug() != "unavailable" || e.Title != "T" || e.Detail != "because" ||
		e.Instance != "/v1/embeddings" || e.RequestID != "req-9" || e.RetryAfter != 300*time.Second || !IsUnavailable(err) {
		t.Errorf("error = %+v", e)
	}
	if want := "503 Service Unavailable: because"; err.Error() != want {
		t.Errorf("Error() = %q, want %q", err.Error(), want)
	}

	_, err = c.GetJob(t.Context(), "x")
	if !errors.As(err, &e) || e.Status != 403 || e.Slug() != "" || e.Detail != "<html>error 1010: forbidden</html>" || e.Title != "Forbidden" {
		t.Errorf("a non-problem answer became %+v", e)
	}
}

func TestConnectionFailuresBackOffAndEndAsConnectionError(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now: connection refused
	c, slept := testClient(t, "http://"+addr, Retry{Attempts: 4, Backoff: 100 * time.Millisecond, MaxBackoff: 250 * time.Millisecond})
	_, err = c.Health(t.Context())
	var ce *ConnectionError
	if !errors.As(err, &ce) || ce.Attempts != 4 {
		t.Fatalf("err = %v, want a *ConnectionError after 4 attempts", err)
	}
	// Each delay lies in the upper half of 100 ms doubling per retry, capped at 250 ms.
	bounds := []time.Duration{100, 200, 250}
	if len(*slept) != len(bounds) {
		t.Fatalf("slept %v, want %d waits", *slept, len(bounds))
	}
	for i, d := range *slept {
		hi := bounds[i] * time.Millisecond
		if d < hi/2 || d > hi {
			t.Errorf("wait %d = %v, want within [%v, %v]", i+1, d, hi/2, hi)
		}
	}
}

func TestCanceledContextStopsRetrying(t *testing.T) {
	t.Parallel()
	f := newFake(t, problemReply(429, "rate-limited", "Retry-After", "5"))
	c, err := New(f.URL)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	c.sleep = func(ctx context.Context, d time.Duration) error {
		cancel() // the caller gives up while the client waits
		return sleepCtx(ctx, d)
	}
	if _, err := c.GetJob(ctx, "0123456789abcdef0123456789abcdef"); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if n := len(f.got()); n != 1 {
		t.Errorf("%d requests after the cancel, want 1", n)
	}
}

func TestRetryAfterForms(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		v    string
		want time.Duration
	}{
		{"", 0},
		{"7", 7 * time.Second},
		{" 0 ", 0},
		{"-3", 0},
		{"Fri, 02 Jan 2026 03:04:35 GMT", 30 * time.Second},
		{"Fri, 02 Jan 2026 03:00:00 GMT", 0}, // in the past
		{"soon", 0},
	}
	for _, tt := range tests {
		if got := retryAfter(tt.v, now); got != tt.want {
			t.Errorf("retryAfter(%q) = %v, want %v", tt.v, got, tt.want)
		}
	}
}

func TestNewRejectsBadURLs(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"", "localhost:8080", "ftp://x", "http://", "http://x/?a=1", "http://x/#f"} {
		if _, err := New(u); err == nil {
			t.Errorf("New(%q) succeeded", u)
		}
	}
	c, err := New("https://fold.example.org/chaperone/")
	if err != nil || c.base != "https://fold.example.org/chaperone" {
		t.Errorf("New with a path prefix: base %q, %v", c.base, err)
	}
}

func TestPathsEscapeEachSegment(t *testing.T) {
	t.Parallel()
	tests := []struct {
		id   string
		sub  []string
		want string
	}{
		{"abc", nil, "/v1/jobs/abc"},
		{"abc", []string{"artifacts", "t1/pae t1.npz"}, "/v1/jobs/abc/artifacts/t1/pae%20t1.npz"},
		{"../x", []string{"logs"}, "/v1/jobs/..%2Fx/logs"},
		{"abc", []string{"artifacts", "a?b#c.json"}, "/v1/jobs/abc/artifacts/a%3Fb%23c.json"},
	}
	for _, tt := range tests {
		if got := jobPath(tt.id, tt.sub...); got != tt.want {
			t.Errorf("jobPath(%q, %q) = %q, want %q", tt.id, tt.sub, got, tt.want)
		}
	}
}

func TestAPIKeyIsSentAsBearer(t *testing.T) {
	t.Parallel()
	f := newFake(t, jobReply(200, `{"status":"ok","service":"chaperone","api_version":"1.0.0","version":"x"}`))
	c, err := New(f.URL, WithAPIKey("chp_live_abc"), WithUserAgent("mytool/1"))
	if err != nil {
		t.Fatal(err)
	}
	h, err := c.Health(t.Context())
	if err != nil || h.APIVersion != "1.0.0" {
		t.Fatalf("Health = %+v, %v", h, err)
	}
	r := f.got()[0]
	if r.Header.Get("Authorization") != "Bearer chp_live_abc" || !strings.HasPrefix(r.Header.Get("User-Agent"), "mytool/1") {
		t.Errorf("headers %v", r.Header)
	}
}
