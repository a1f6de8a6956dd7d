// Package api is chaperone's HTTP interface: the v1 job API of spec/interface.md as
// spec/decisions.md settles it, with problem+json errors, ownership by key, session or
// client IP, long-poll waits woken by store notifications (held outside net/http, see
// detach.go), idempotent creates, and Prometheus metrics. It speaks to the rest of
// chaperone only through the store, artifact and catalog packages.
package api

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"errors"
	"github.com/prometheus/client_golang/prometheus"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/chaperone-bio/chaperone/api/problem"
	"github.com/chaperone-bio/chaperone/artifact"
	"github.com/chaperone-bio/chaperone/catalog"
	"github.com/chaperone-bio/chaperone/store"
)

//go:embed openapi.json
var openAPIDocument []byte

// OpenAPI returns the OpenAPI 3.1 document the server serves at /v1/openapi.json.
func OpenAPI() []byte { return openAPIDocument }

// Config is everything the HTTP layer needs.
type Config struct {
	Catalog   *catalog.Catalog
	Store     store.Store
	Artifacts artifact.Store
	Logger    *slog.Logger
	// Version is the build version reported by /v1/health.
	Version string
	// PublicURL is the base of problem type URIs (for example https://fold.example.org);
	// empty means the scheme and Host of each request.
	PublicURL string
	// TrustedProxies are the peers whose forwarding header is believed.
	TrustedProxies []netip.Prefix
	// ForwardedHeader is the one header the trusted proxies set (see clientIP); empty means
	// X-Forwarded-For. New panics on a name CanonicalForwardedHeader refuses.
	ForwardedHeader string
	// SessionSecret signs web-session cookies.
	SessionSecret []byte
	// Starting is closed once this server's start-up is over: its own worker has checked
	// its engines and announced them. Until then creates wait up to StartupWait for it,
	// and /v1/ready answers 503. Nil means ready at once (no worker in this process).
	Starting <-chan struct{}
	// StartupWait is how long a create waits for start-up to end; default 10 s.
	StartupWait time.Duration
	// MetricsElsewhere keeps /metrics off the API: the caller serves Metrics on an
	// operator-only address instead.
	MetricsElsewhere bool
	// WorkerTTL is how long a worker counts as live after its last heartbeat.
	WorkerTTL time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Workers serves the worker protocol to workers on other machines under WorkerPrefix,
	// with authentication of its own (worker tokens); nil serves none.
	Workers http.Handler
	// Collectors add the metrics of the server's other parts (the alignment stage) to
	// /metrics.
	Collectors []prometheus.Collector
}

// WorkerPrefix is where Config.Workers is served, apart from the caller routes.
const WorkerPrefix = "/v1/worker/"

// Server is the HTTP handler of the whole API.
type Server struct {
	cat             *catalog.Catalog
	store           store.Store
	artifacts       artifact.Store
	log             *slog.Logger
	version         string
	publicURL       string
	trustedProxies  []netip.Prefix
	forwardedHeader string
	sessionSecret   []byte
	workerTTL       time.Duration
	starting        <-chan struct{}
	startupWait     time.Duration
	now             func() time.Time
	workers         http.Handler
	mux             *http.ServeMux
	metrics         *metrics
	finishes        *finishWatch
	partials        partialMemo // partial of succeeded jobs, which never change
	detached        detachedHolds
	holding         atomic.Int64 // requests held by Prefer: wait, detached or not
	conns, held     *clientCounts
}

// New builds the server.
func New(cfg Config) *Server {
	s := &Server{
		cat:            cfg.Catalog,
		store:          cfg.Store,
		artifacts:      cfg.Artifacts,
		log:            cfg.Logger,
		version:        cfg.Version,
		publicURL:      strings.TrimSuffix(cfg.PublicURL, "/"),
		trustedProxies: cfg.TrustedProxies,
		sessionSecret:  cfg.SessionSecret,
		workerTTL:      cfg.WorkerTTL,
		starting:       cfg.Starting,
		startupWait:    cfg.StartupWait,
		now:            cfg.Now,
		workers:        cfg.Workers,
		mux:            http.NewServeMux(),
	}
	header, err := CanonicalForwardedHeader(cfg.ForwardedHeader)
	if err != nil {
		panic("api: ForwardedHeader: " + err.Error())
	}
	s.forwardedHeader = header
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.startupWait == 0 {
		s.startupWait = 10 * time.Second
	}
	if s.workerTTL == 0 {
		s.workerTTL = 30 * time.Second
	}
	if len(s.sessionSecret) == 0 {
		s.sessionSecret = make([]byte, 32)
		_, _ = rand.Read(s.sessionSecret)
	}
	s.conns = newClientCounts(s.cat.Limits.ConnectionsPerClient)
	s.held = newClientCounts(s.cat.Limits.HeldWaitsPerClient)
	s.metrics = newMetrics(s, cfg.Collectors)
	s.finishes = newFinishWatch(s.store)
	s.routes(!cfg.MetricsElsewhere)
	return s
}

// Metrics serves the Prometheus metrics, for an operator-only listener.
func (s *Server) Metrics() http.Handler { return s.metrics.handler() }

func (s *Server) routes(withMetrics bool) {
	handle := func(pattern string, h http.HandlerFunc) { s.mux.Handle(pattern, h) }
	handle("GET /v1/health", s.health)
	handle("GET /v1/ready", s.readiness)
	handle("GET /v1/models", s.models)
	handle("GET /v1/openapi.json", s.openapi)
	handle("POST /v1/predictions", s.createPrediction)
	handle("POST /v1/designs", s.createDesign)
	handle("POST /v1/embeddings", s.createEmbedding)
	handle("GET /v1/jobs", s.listJobs)
	handle("GET /v1/jobs/{id}", s.getJob)
	handle("DELETE /v1/jobs/{id}", s.deleteJob)
	handle("POST /v1/jobs/{id}/cancel", s.cancelJob)
	handle("GET /v1/jobs/{id}/results", s.results)
	handle("GET /v1/jobs/{id}/archive", s.archive)
	handle("GET /v1/jobs/{id}/artifacts/{path...}", s.artifact)
	handle("GET /v1/jobs/{id}/logs", s.logs)
	handle("GET /errors/{slug}", s.errorPage)
	if withMetrics {
		s.mux.Handle("GET /metrics", s.metrics.handler())
	}
	if s.workers != nil {
		s.mux.Handle(WorkerPrefix, s.workers)
	}
}

// Handle serves pattern with h beside the API, with the API's request ids, metrics and
// problem answers for unmatched paths; the web app is mounted so.
func (s *Server) Handle(pattern string, h http.Handler) { s.mux.Handle(pattern, h) }

// ServeHTTP adds a request id, recovers panics, records metrics, and turns the mux's own
// plain-text 404 and 405 into problems.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	info := &requestInfo{id: newRequestID(), start: time.Now()}
	r = r.WithContext(context.WithValue(r.Context(), requestInfoKey{}, info))
	w.Header().Set("X-Request-Id", info.id)
	body := watchBody(r)
	rec := &statusRecorder{ResponseWriter: w, req: r}
	defer func() {
		if !info.detached { // a detached hold records its request when it answers
			abandonUnread(w, r, body)
			s.record(r, info, rec.status())
		}
	}()
	defer s.recoverPanic(rec, r)

	if k, detail, ok := malformed(r); !ok {
		s.writeProblem(rec, r, k, detail)
		return
	}
	if k, allow, unrouted := problem.Unrouted(s.mux, r); unrouted {
		s.unmatched(rec, r, k, allow)
		return
	}
	s.mux.ServeHTTP(rec, r)
}

// malformed finds what the mux would redirect (a path with . or .. segments or doubled
// slashes: it answers those with a redirect to the clean path, here a 404 as no API path
// has them) and what handlers would silently ignore (a query string that does not parse),
// and says what is wrong.
func malformed(r *http.Request) (k problem.Kind, detail string, ok bool) {
	if p := r.URL.Path; r.Method != http.MethodConnect && (p == "" || p[0] != '/' || path.Clean(p) != p && path.Clean(p)+"/" != p) {
		return problem.NotFound, "There is no endpoint at " + strconv.Quote(p) + ": API paths have no . or .. segments and no doubled slashes.", false
	}
	if _, err := url.ParseQuery(r.URL.RawQuery); err != nil {
		return problem.Invalid, "The query string does not parse: " + err.Error() + ".", false
	}
	return problem.Kind{}, "", true
}

// record counts a request in the metrics and writes its access-log line.
func (s *Server) record(r *http.Request, info *requestInfo, status int) {
	route := r.Pattern
	if route == "" {
		route = "unmatched"
	}
	elapsed := time.Since(info.start)
	s.metrics.observe(r.Method, route, status, elapsed)
	s.log.LogAttrs(r.Context(), slog.LevelInfo, "request", slog.String("request_id", info.id),
		slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.String("route", route),
		slog.Int("status", status), slog.Float64("ms", float64(elapsed.Microseconds())/1000))
}

// unmatched answers a request no route took: 405 with Allow when the path exists under
// another method, else 404.
func (s *Server) unmatched(w http.ResponseWriter, r *http.Request, k problem.Kind, allow string) {
	if k == problem.MethodNotAllowed {
		w.Header().Set("Allow", allow)
		s.writeProblem(w, r, k, r.Method+" is not allowed on "+r.URL.Path+"; allowed: "+allow+".")
		return
	}
	s.writeProblem(w, r, problem.NotFound, "There is no endpoint at "+r.URL.Path+"; see /v1/openapi.json for the API.")
}

// statusRecorder remembers the status a handler wrote, for metrics, and closes the
// connection after an answer that left the request body unread (unread.go).
type statusRecorder struct {
	http.ResponseWriter
	req  *http.Request
	code int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.code == 0 {
		closeIfUnread(r.ResponseWriter, r.req)
		r.code = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		closeIfUnread(r.ResponseWriter, r.req)
		r.code = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach Flush and deadlines.
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func (r *statusRecorder) status() int {
	if r.code == 0 {
		return http.StatusOK
	}
	return r.code
}

type requestInfoKey struct{}

// requestInfo is what ServeHTTP knows of a request, in its context.
type requestInfo struct {
	id       string
	start    time.Time
	detached bool // its hold was taken from net/http, which answers it later (detach.go)
}

func newRequestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func requestID(ctx context.Context) string {
	if info, ok := ctx.Value(requestInfoKey{}).(*requestInfo); ok {
		return info.id
	}
	return ""
}

// publicBase is the base URL of problem types.
func (s *Server) publicBase(r *http.Request) string { return problem.Base(s.publicURL, r) }

// health is liveness: 200 while the process serves. Whether start-up is over is its
// "ready" field, and the status of /v1/ready, for load balancers.
func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"status": "ok", "service": "chaperone", "api_version": catalog.APIVersion, "version": s.version,
		"ready": s.ready(),
	})
}

// startingRetry is the Retry-After of a refusal during start-up: the first engine check
// takes seconds (a Python tool imports torch), not the minutes of a missing tool.
const startingRetry = 5 * time.Second

func (s *Server) readiness(w http.ResponseWriter, r *http.Request) {
	if !s.ready() {
		w.Header().Set("Retry-After", retryAfterSeconds(startingRetry))
		s.writeProblem(w, r, problem.Unavailable, startingDetail)
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"ready": true})
}

// ready reports whether start-up is over.
func (s *Server) ready() bool {
	select {
	case <-s.starting:
		return true
	default:
		return s.starting == nil
	}
}

// errStarting refuses a create that start-up kept waiting longer than StartupWait.
var errStarting = errors.New("api: start-up not over")

const startingDetail = "The server is starting: its worker is still checking its engines. Retry in a few seconds."

// awaitStartup waits up to StartupWait for start-up to end, and reports whether it has.
func (s *Server) awaitStartup(ctx context.Context) bool {
	if s.ready() {
		return true
	}
	t := time.NewTimer(s.startupWait)
	defer t.Stop()
	select {
	case <-s.starting:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

func (s *Server) openapi(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(openAPIDocument)
}

func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	live, err := s.liveModels(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	unavailable := map[string]string{}
	for _, m := range s.cat.Models {
		if why := live.unavailable(m.ID); why != "" {
			unavailable[m.ID] = why
		}
	}
	walls, err := s.store.MeasuredWalls(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s.cat.Document(unavailable, walls))
}
