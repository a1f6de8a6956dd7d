package remote

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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
	// Staging is the folder that holds artifact uploads until their last chunk arrives.
	Staging string
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
	if err := os.MkdirAll(cfg.Staging, 0o750); err != nil {
		return nil, fmt.Errorf("remote: staging folder: %w", err)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	h := &Handler{cfg: cfg, mux: http.NewServeMux()}
	h.closing, h.close = context.WithCancel(context.Background())
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
	// uploads serialises the chunks of one staged upload.
	uploads sync.Map // staging file name -> *sync.Mutex
	// swept is when stale uploads were last removed, in unix nanoseconds.
	swept atomic.Int64
}

// Uploads that no chunk has touched for staleAfter are abandoned (their attempt lost, their
// worker gone); the first upload after each sweepEvery removes them.
const (
	staleAfter = 24 * time.Hour
	sweepEvery = time.Hour
)

// sweepStale removes abandoned uploads, at most once per sweepEvery.
func (h *Handler) sweepStale(now time.Time) {
	last := h.swept.Load()
	if now.UnixNano()-last < int64(sweepEvery) || !h.swept.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	entries, err := os.ReadDir(h.cfg.Staging)
	if err != nil {
		return
	}
	for _, e := range entries {
		if info, err := e.Info(); err == nil && now.Sub(info.ModTime()) > staleAfter {
			os.Remove(filepath.Join(h.cfg.Staging, e.Name()))
		}
	}
}

// Close answers the leases held now, and any asked for later, with "no job"; the server
// calls it as it shuts down, before it waits for open requests to finish.
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
	h.mux.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), tokenName{}, name)))
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
	call(h, noResult(h.cfg.Queue.Heartbeat))(w, r)
}

func (h *Handler) complete(w http.ResponseWriter, r *http.Request) {
	call(h, noResult(h.cfg.Queue.Complete))(w, r)
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

func (h *Handler) appendLog(w http.ResponseWriter, r *http.Request) {
	f, err := parseFence(r.PathValue("id"), r.PathValue("attempt"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	p, err := readAll(w, r, maxLogBody)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if err := h.cfg.Queue.AppendLog(r.Context(), f, p); err != nil {
		h.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// staged is the staging file of one artifact of one attempt, and the lock of its upload.
func (h *Handler) staged(r *http.Request) (worker.Fence, string, string, *sync.Mutex, error) {
	f, err := parseFence(r.PathValue("id"), r.PathValue("attempt"))
	if err != nil {
		return f, "", "", nil, err
	}
	path := r.PathValue("path")
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%d\x00%s", f.JobID, f.Attempt, path)))
	name := filepath.Join(h.cfg.Staging, hex.EncodeToString(sum[:]))
	mu, _ := h.uploads.LoadOrStore(name, new(sync.Mutex))
	return f, path, name, mu.(*sync.Mutex), nil
}

// uploadOffset answers how many bytes of an upload the server holds.
func (h *Handler) uploadOffset(w http.ResponseWriter, r *http.Request) {
	_, _, name, mu, err := h.staged(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	mu.Lock()
	defer mu.Unlock()
	w.Header().Set(headerOffset, strconv.FormatInt(sizeOf(name), 10))
	w.WriteHeader(http.StatusNoContent)
}

func sizeOf(name string) int64 {
	if st, err := os.Stat(name); err == nil {
		return st.Size()
	}
	return 0
}

// putArtifact appends one chunk to a staged upload at the offset it names, and hands the
// whole file to the queue with its last chunk. A chunk at another offset than the server
// holds is refused with the offset the server holds, from which the client resumes.
func (h *Handler) putArtifact(w http.ResponseWriter, r *http.Request) {
	fence, path, name, mu, err := h.staged(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	offset, err := strconv.ParseInt(r.Header.Get(headerOffset), 10, 64)
	if err != nil || offset < 0 {
		h.fail(w, r, badRequest{"Send the offset this part starts at, a whole number of bytes, in an " + headerOffset + " header."})
		return
	}
	if offset == 0 {
		h.sweepStale(time.Now())
	}
	mu.Lock()
	defer mu.Unlock()
	held := sizeOf(name)
	w.Header().Set(headerOffset, strconv.FormatInt(held, 10))
	if offset != held {
		h.fail(w, r, offsetMismatch{held: held, sent: offset})
		return
	}
	file, err := os.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	// What arrived before a dropped connection stays: the next chunk resumes after it.
	body := &bodyReader{r: r.Body}
	_, copyErr := io.Copy(file, body)
	if err := errors.Join(copyErr, file.Close()); err != nil {
		if body.err != nil {
			err = badRequest{brokenBody + " The server holds what arrived: resume from its " + headerOffset + "."}
		}
		h.fail(w, r, err)
		return
	}
	w.Header().Set(headerOffset, strconv.FormatInt(sizeOf(name), 10))
	if r.Header.Get(headerComplete) != "1" {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	defer func() {
		os.Remove(name)
		h.uploads.Delete(name)
	}()
	whole, err := os.Open(name)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	defer whole.Close()
	if err := h.cfg.Queue.PutArtifact(r.Context(), fence, path, whole); err != nil {
		h.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// bodyReader remembers an error of reading a request body, to tell it from one of writing
// what was read.
type bodyReader struct {
	r   io.Reader
	err error
}

func (b *bodyReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		b.err = err
	}
	return n, err
}
