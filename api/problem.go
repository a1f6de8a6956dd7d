package api

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/chaperone-bio/chaperone/api/problem"
	"github.com/chaperone-bio/chaperone/artifact"
	"github.com/chaperone-bio/chaperone/job"
)

// writeProblem answers with a problem of kind k; a 500 carries the request id.
func (s *Server) writeProblem(w http.ResponseWriter, r *http.Request, k problem.Kind, detail string) {
	p := problem.New(s.publicBase(r), k, detail, r.URL.Path)
	if k.Status >= 500 {
		p.RequestID = requestID(r.Context())
	}
	problem.Write(w, p)
}

// writeError maps an error from any layer to its problem. Errors the program does not
// know are logged in full and answered as a bare 500.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var (
		invalid     *job.InvalidError
		conflict    *job.ConflictError
		limit       *job.LimitError
		unavailable *job.UnavailableError
	)
	switch {
	case errors.As(err, &invalid):
		s.writeProblem(w, r, problem.Invalid, invalid.Error())
	case errors.Is(err, job.ErrNotFound), errors.Is(err, artifact.ErrNotFound):
		s.writeProblem(w, r, problem.NotFound, "No such job or file: it does not exist, was deleted or evicted, or belongs to another owner.")
	case errors.As(err, &conflict):
		s.writeProblem(w, r, problem.Conflict, conflict.Reason)
	case errors.Is(err, job.ErrIdempotencyReused):
		s.writeProblem(w, r, problem.IdempotencyKeyReused, "This Idempotency-Key was already used with a different request body; use a new key for a new request.")
	case errors.As(err, &limit):
		w.Header().Set("Retry-After", retryAfterSeconds(limit.RetryAfter))
		kind := problem.RateLimited
		if limit.Capacity {
			kind = problem.AtCapacity
		}
		s.writeProblem(w, r, kind, limit.Reason)
	case errors.Is(err, errStarting):
		w.Header().Set("Retry-After", retryAfterSeconds(startingRetry))
		s.writeProblem(w, r, problem.Unavailable, startingDetail)
	case errors.As(err, &unavailable):
		w.Header().Set("Retry-After", "300")
		s.writeProblem(w, r, problem.Unavailable, unavailable.Reason)
	default:
		s.log.ErrorContext(r.Context(), "internal error", "request_id", requestID(r.Context()),
			"method", r.Method, "path", r.URL.Path, "error", err.Error())
		s.writeProblem(w, r, problem.Internal, "An internal error occurred. Quote the request_id to the operator.")
	}
}

// retryAfterSeconds renders a wait as whole seconds, rounded up and at least 1.
func retryAfterSeconds(d time.Duration) string {
	return strconv.Itoa(max(1, int(math.Ceil(d.Seconds()))))
}

// errorPage serves the short human page of a problem type.
func (s *Server) errorPage(w http.ResponseWriter, r *http.Request) {
	slug := r.PathValue("slug")
	k, ok := problem.Lookup(slug)
	if !ok {
		s.writeProblem(w, r, problem.NotFound, fmt.Sprintf("There is no error type %q.", slug))
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(w, "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>%d %s · chaperone</title></head>\n"+
		"<body><h1>%d %s</h1>\n<p><code>%s</code></p>\n<p>%s</p>\n<p>The response body is an RFC 9457 problem (<code>application/problem+json</code>); its <code>detail</code> field says exactly what went wrong.</p></body></html>\n",
		k.Status, k.Title, k.Status, k.Title, k.Slug, k.Page)
}

// logRecovered turns a panic in a handler into a 500 with a request id.
func (s *Server) recoverPanic(w http.ResponseWriter, r *http.Request) {
	if v := recover(); v != nil {
		if v == http.ErrAbortHandler {
			panic(v)
		}
		s.log.ErrorContext(r.Context(), "panic in handler", "request_id", requestID(r.Context()),
			slog.Any("panic", v), "path", r.URL.Path)
		s.writeProblem(w, r, problem.Internal, "An internal error occurred. Quote the request_id to the operator.")
	}
}
