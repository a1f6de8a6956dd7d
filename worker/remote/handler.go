package remote

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/chaperone-bio/chaperone/api/problem"
	"github.com/chaperone-bio/chaperone/apikey"
	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/store"
	"github.com/chaperone-bio/chaperone/worker"
)

// Keys finds the record of a token by its hash (store.Keys.KeyByHash).
type Keys interface {
	KeyByHash(ctx context.Context, hash string) (*store.Key, error)
}

// HandlerConfig is what Handler serves.
type HandlerConfig struct {
	Queue worker.Queue
	Keys  Keys
	// Leases says who holds a job's lease (backend.Queue): parts of uploads and log appends
	// are taken only from a worker of the token that holds the attempt's lease.
	Leases Leases
	// Staging is the folder that holds artifact uploads until their last part arrives.
	// StagingPerJob and StagingPerWorker cap the bytes staged there for one job and for
	// the workers of one token (0: DefaultStagingPerJob, DefaultStagingPerWorker), and
	// SweepEvery is how often what attempts whose lease ended staged is removed (0: a
	// minute); see upload.go.
	Staging                         string
	StagingPerJob, StagingPerWorker int64
	SweepEvery                      time.Duration
	// BodyIdle is how long a request body may go without a byte arriving before the
	// request is answered as broken; 0: DefaultBodyIdle.
	BodyIdle time.Duration
	// PublicURL is the base of problem type URIs, as api.Config.PublicURL.
	PublicURL string
	Logger    *slog.Logger
}

// Request body caps: a completion holds the job's results, a log append what a worker
// buffered between two flushes.
const (
	maxJSONBody = 64 << 20
	maxLogBody  = 16 << 20
)

// NewHandler serves cfg.Queue under Prefix to requests bearing a live worker token.
func NewHandler(cfg HandlerConfig) (*Handler, error) {
	if cfg.Queue == nil || cfg.Keys == nil || cfg.Leases == nil {
		return nil, errors.New("remote: HandlerConfig needs a Queue, Keys and Leases")
	}
	st, err := newStaging(cfg.Staging, cfg.StagingPerJob, cfg.StagingPerWorker)
	if err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.SweepEvery <= 0 {
		cfg.SweepEvery = time.Minute
	}
	if cfg.BodyIdle <= 0 {
		cfg.BodyIdle = DefaultBodyIdle
	}
	h := &Handler{cfg: cfg, mux: http.NewServeMux(), staging: st}
	h.closing, h.close = context.WithCancel(context.Background())
	go h.sweepUntilClosed()
	h.mux.HandleFunc("POST "+pathAnnounce, h.announce)
	h.mux.HandleFunc("POST "+pathLease, h.lease)
	h.mux.HandleFunc("POST "+pathHeartbeat, h.heartbeat)
	h.mux.HandleFunc("POST "+pathComplete, h.complete)
	h.mux.HandleFunc("POST "+pathRelease, h.release)
	h.mux.HandleFunc("POST "+pathHandBack, h.handBack)
	h.mux.HandleFunc("POST "+pathRemove, h.remove)
	h.mux.HandleFunc("GET "+pathToken, h.token)
	h.mux.HandleFunc("POST "+Prefix+"jobs/{id}/attempts/{attempt}/log", h.appendLog)
	h.mux.HandleFunc("PUT "+Prefix+"jobs/{id}/attempts/{attempt}/artifacts/{path...}", h.putArtifact)
	h.mux.HandleFunc("HEAD "+Prefix+"jobs/{id}/attempts/{attempt}/artifacts/{path...}", h.uploadOffset)
	return h, nil
}

// Handler is the server side of the worker endpoints.
type Handler struct {
	cfg HandlerConfig
	mux *http.ServeMux
	// closing ends when the server stops: held leases answer "no job" then, so that
	// their workers ask again, through another replica, at once.
	closing context.Context
	close   context.CancelFunc
	staging *staging
}

// sweepUntilClosed removes what attempts whose lease ended staged, at once and then every
// SweepEvery, until Close.
func (h *Handler) sweepUntilClosed() {
	tick := time.NewTicker(h.cfg.SweepEvery)
	defer tick.Stop()
	for {
		h.staging.sweep(h.closing, h.cfg.Leases)
		select {
		case <-h.closing.Done():
			return
		case <-tick.C:
		}
	}
}

// Close answers the leases held now, and any asked for later, with "no job", and stops the
// sweeps of staged uploads; the server calls it as it shuts down, before it waits for open
// requests to finish.
func (h *Handler) Close() { h.close() }

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name, err := h.authorize(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if k, allow, unrouted := problem.Unrouted(h.mux, r); unrouted {
		detail := "There is no worker endpoint at " + r.URL.Path + "."
		if k == problem.MethodNotAllowed {
			w.Header().Set("Allow", allow)
			detail = r.Method + " is not allowed on " + r.URL.Path + "; allowed: " + allow + "."
		}
		h.problem(w, r, k, detail)
		return
	}
	r.Body = &idleBody{ReadCloser: r.Body, rc: http.NewResponseController(w), idle: h.cfg.BodyIdle}
	h.mux.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), tokenName{}, name)))
}

// DefaultBodyIdle is HandlerConfig.BodyIdle's default.
const DefaultBodyIdle = 30 * time.Second

// idleBody bounds the wait for each read of a request body, so that a body announced and
// never sent holds its connection no longer than that: an upload part of any size may
// take its time as long as it keeps arriving. Once the body is read to its end, net/http
// clears the deadline as it starts reading ahead on the connection, so that what the
// handler does next (a lease waits up to a minute) is not cut short.
type idleBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	idle time.Duration
}

func (b *idleBody) Read(p []byte) (int, error) {
	// Not every ResponseWriter supports deadlines (httptest's recorder does not).
	_ = b.rc.SetReadDeadline(time.Now().Add(b.idle))
	return b.ReadCloser.Read(p)
}

// tokenName is the context key of the name of the request's worker token.
type tokenName struct{}

// scoped is the worker id that the server records for id, as the worker of the request
// names itself: under its token's name ("gpu-node-1/worker-a"), so that a token can only
// announce, release or remove workers of its own, and two nodes that pick the same id
// under different tokens stay apart.
func scoped(ctx context.Context, id string) string {
	return ctx.Value(tokenName{}).(string) + "/" + id
}

// authorize accepts a live worker token, and nothing else: not an API key. It returns the
// token's name.
func (h *Handler) authorize(r *http.Request) (string, error) {
	scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	token = strings.TrimSpace(token)
	if !strings.EqualFold(scheme, "Bearer") || !apikey.WellFormed(token) {
		return "", ErrUnauthorized
	}
	hash := apikey.Hash(token)
	k, err := h.cfg.Keys.KeyByHash(r.Context(), hash)
	if errors.Is(err, job.ErrNotFound) {
		return "", ErrUnauthorized
	}
	if err != nil {
		return "", err
	}
	if subtle.ConstantTimeCompare([]byte(k.Hash), []byte(hash)) != 1 || !k.RevokedAt.IsZero() || !k.Worker {
		return "", ErrUnauthorized
	}
	return k.Name, nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// call answers a JSON request with fn's result: 200 and its JSON, 204 when it has none.
func call[In, Out any](h *Handler, fn func(context.Context, In) (Out, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var in In
		if err := readJSON(w, r, &in); err != nil {
			h.fail(w, r, err)
			return
		}
		out, err := fn(r.Context(), in)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, out)
	}
}

func (h *Handler) announce(w http.ResponseWriter, r *http.Request) {
	call(h, func(ctx context.Context, a worker.Announcement) (worker.Timing, error) {
		a.WorkerID = scoped(ctx, a.WorkerID)
		return h.cfg.Queue.Announce(ctx, a)
	})(w, r)
}

// token answers a request whose worker token was accepted with the token's name.
func (h *Handler) token(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, TokenInfo{Name: r.Context().Value(tokenName{}).(string)})
}

func (h *Handler) lease(w http.ResponseWriter, r *http.Request) {
	var req worker.LeaseRequest
	if err := readJSON(w, r, &req); err != nil {
		h.fail(w, r, err)
		return
	}
	req.WorkerID = scoped(r.Context(), req.WorkerID)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(h.closing, cancel)()
	l, err := h.cfg.Queue.Lease(ctx, req)
	switch {
	case err != nil && h.closing.Err() != nil && r.Context().Err() == nil:
		w.WriteHeader(http.StatusNoContent) // the server stops: no job from this one
	case err != nil:
		h.fail(w, r, err)
	case l == nil:
		w.WriteHeader(http.StatusNoContent)
	default:
		writeJSON(w, http.StatusOK, l)
	}
}

// noResult adapts a call that answers nothing to call.
func noResult[In any](fn func(context.Context, In) error) func(context.Context, In) (struct{}, error) {
	return func(ctx context.Context, in In) (struct{}, error) { return struct{}{}, fn(ctx, in) }
}

func (h *Handler) heartbeat(w http.ResponseWriter, r *http.Request) {
	call(h, noResult(func(ctx context.Context, hb worker.Heartbeat) error {
		err := h.cfg.Queue.Heartbeat(ctx, hb)
		if errors.Is(err, job.ErrLeaseLost) {
			h.dropStaged(ctx, hb.Fence)
		}
		return err
	}))(w, r)
}

func (h *Handler) complete(w http.ResponseWriter, r *http.Request) {
	call(h, noResult(func(ctx context.Context, c worker.Completion) error {
		err := h.cfg.Queue.Complete(ctx, c)
		if err == nil || errors.Is(err, job.ErrLeaseLost) {
			// The attempt is over: what it left staged (an upload it gave up) is garbage.
			h.dropStaged(ctx, c.Fence)
		}
		return err
	}))(w, r)
}

// dropStaged removes what attempt f staged under the request's token: its lease ended.
func (h *Handler) dropStaged(ctx context.Context, f worker.Fence) {
	if job.ValidID(f.JobID) && f.Attempt > 0 { // it names folders
		h.staging.dropAttempt(h.staging.upload(ctx.Value(tokenName{}).(string), f, ""))
	}
}

func (h *Handler) release(w http.ResponseWriter, r *http.Request) {
	call(h, noResult(func(ctx context.Context, ref workerRef) error {
		return h.cfg.Queue.ReleaseWorker(ctx, scoped(ctx, ref.WorkerID))
	}))(w, r)
}

func (h *Handler) handBack(w http.ResponseWriter, r *http.Request) {
	call(h, noResult(func(ctx context.Context, ref workerRef) error {
		return h.cfg.Queue.HandBack(ctx, scoped(ctx, ref.WorkerID))
	}))(w, r)
}

func (h *Handler) remove(w http.ResponseWriter, r *http.Request) {
	call(h, noResult(func(ctx context.Context, ref workerRef) error {
		return h.cfg.Queue.RemoveWorker(ctx, scoped(ctx, ref.WorkerID))
	}))(w, r)
}

// appendLog adds a part of an attempt's output to the job's log, at the offset in that
// output that the Upload-Offset header names.
func (h *Handler) appendLog(w http.ResponseWriter, r *http.Request) {
	f, err := parseFence(r.PathValue("id"), r.PathValue("attempt"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	offset, err := strconv.ParseInt(r.Header.Get(headerOffset), 10, 64)
	if err != nil || offset < 0 {
		h.fail(w, r, badRequest{"Send the offset of this output in the attempt's, a whole number of bytes, in an " + headerOffset + " header."})
		return
	}
	p, err := readAll(w, r, maxLogBody)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if err := h.holds(r.Context(), r.Context().Value(tokenName{}).(string), f); err != nil {
		h.fail(w, r, err)
		return
	}
	if err := h.cfg.Queue.AppendLog(r.Context(), f, offset, p); err != nil {
		h.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
