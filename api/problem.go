package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/chaperone-bio/chaperone/artifact"
	"github.com/chaperone-bio/chaperone/job"
)

// problemKind is one error slug of decisions.md, with its status and the page served at
// /errors/<slug>.
type problemKind struct {
	slug   string
	status int
	title  string
	page   string // one paragraph for humans
}

var (
	probInvalid = problemKind{"invalid-input", http.StatusBadRequest, "Invalid input",
		"The request was malformed or asked for something the service cannot do: a missing or extra input field, an unknown model, protocol or parameter, a value of the wrong type, or an input over a size cap. The detail names the field and what to change. Fix the request; sending it again unchanged will fail the same way."}
	probUnauthorized = problemKind{"unauthorized", http.StatusUnauthorized, "Unauthorized",
		"An API key was sent but it is not valid: unknown, revoked or malformed. Requests without any key are accepted and owned by the client address; requests with a bad key are refused so that jobs never land under the wrong owner. Check the key, or send none."}
	probNotFound = problemKind{"not-found", http.StatusNotFound, "Not found",
		"There is nothing at this address for you: the path is unknown, or the job does not exist, was deleted, was evicted by retention, or belongs to another owner. Check the id and the credentials you used to create the job."}
	probMethod = problemKind{"method-not-allowed", http.StatusMethodNotAllowed, "Method not allowed",
		"The path exists but does not accept this HTTP method. The Allow header lists the methods it accepts."}
	probConflict = problemKind{"conflict", http.StatusConflict, "Conflict",
		"The job's current state does not allow this action: for example cancelling a job that already succeeded or failed, or downloading the archive of a job whose results are not ready. The detail names the state."}
	probPrecondition = problemKind{"precondition-failed", http.StatusPreconditionFailed, "Precondition failed",
		"The request named a version of a download (If-Match or If-Unmodified-Since) that is not the one the service holds. Fetch it again without the condition to get the current version and its ETag."}
	probRange = problemKind{"range-not-satisfiable", http.StatusRequestedRangeNotSatisfiable, "Range not satisfiable",
		"The Range header asks for bytes past the end of the file. The Content-Range header gives the file's length; a resumed download that already has that many bytes is complete."}
	probTooLarge = problemKind{"payload-too-large", http.StatusRequestEntityTooLarge, "Payload too large",
		"The request body is larger than the service accepts (8 MB by default; GET /v1/models lists the limit). Split the work into several jobs or shrink the input."}
	probIdemReused = problemKind{"idempotency-key-reused", http.StatusUnprocessableEntity, "Idempotency key reused",
		"This Idempotency-Key was already used by you with a different request body. A key names one request; use a fresh key for a different request."}
	probRateLimited = problemKind{"rate-limited", http.StatusTooManyRequests, "Rate limited",
		"You are over a per-owner quota: too many active jobs or too many creates per minute. Wait for the number of seconds in the Retry-After header, then retry; back off if it repeats."}
	probAtCapacity = problemKind{"at-capacity", http.StatusTooManyRequests, "At capacity",
		"The service's queue is full. Your turn will come: wait for the number of seconds in the Retry-After header and retry."}
	probUnavailable = problemKind{"unavailable", http.StatusServiceUnavailable, "Unavailable",
		"No worker that can run this model is online, so a job could not start. Reads and downloads keep working. Retry after the Retry-After header; the detail says what is missing so an operator can fix it."}
	probMalformed = problemKind{"malformed-request", http.StatusBadRequest, "Malformed request",
		"The request is not well-formed HTTP: a request line or header that cannot be parsed, or control characters in a header. Fix the client; the detail says what was wrong."}
	probUnsupportedMedia = problemKind{"unsupported-media-type", http.StatusUnsupportedMediaType, "Unsupported media type",
		"Requests that create jobs must send their body as JSON, with Content-Type: application/json. This also keeps other web sites from creating jobs through their visitors' browsers."}
	probExpectation = problemKind{"expectation-failed", http.StatusExpectationFailed, "Expectation failed",
		"The request's Expect header asks for something the server does not do; the only expectation it meets is 100-continue."}
	probHeadersTooLarge = problemKind{"headers-too-large", http.StatusRequestHeaderFieldsTooLarge, "Request header fields too large",
		"The request's headers are larger than the server accepts (1 MB). Send fewer or shorter headers."}
	probNotImplemented = problemKind{"not-implemented", http.StatusNotImplemented, "Not implemented",
		"The request uses an HTTP feature the server does not implement, such as an unknown transfer coding. Send the body with Content-Length or chunked transfer coding."}
	probVersion = problemKind{"http-version-not-supported", http.StatusHTTPVersionNotSupported, "HTTP version not supported",
		"The request names an HTTP version the server does not speak. Use HTTP/1.1."}
	probTooManyConns = problemKind{"too-many-connections", http.StatusTooManyRequests, "Too many connections",
		"This client holds more connections open than the service allows one client (an IPv6 client counts by its /64). Reuse connections with keep-alive, or close some; the connection that got this answer is closed."}
	probInternal = problemKind{"internal", http.StatusInternalServerError, "Internal error",
		"Something went wrong inside the service. Nothing about it is shown here; the operator can find it in the server log under the request_id of this response."}
)

var problemKinds = []problemKind{probInvalid, probUnauthorized, probNotFound, probMethod,
	probConflict, probPrecondition, probTooLarge, probRange, probIdemReused, probRateLimited,
	probAtCapacity, probUnavailable, probInternal, probMalformed, probUnsupportedMedia, probExpectation,
	probHeadersTooLarge, probNotImplemented, probVersion, probTooManyConns}

// problem is an RFC 9457 problem detail as chaperone sends it.
type problem struct {
	Type      string `json:"type"`
	Title     string `json:"title"`
	Status    int    `json:"status"`
	Detail    string `json:"detail"`
	Instance  string `json:"instance"`
	RequestID string `json:"request_id,omitempty"`
}

// writeProblem answers with a problem of kind k.
func (s *Server) writeProblem(w http.ResponseWriter, r *http.Request, k problemKind, detail string) {
	p := problem{
		Type:     s.publicBase(r) + "/errors/" + k.slug,
		Title:    k.title,
		Status:   k.status,
		Detail:   detail,
		Instance: r.URL.Path,
	}
	if k.status >= 500 {
		p.RequestID = requestID(r.Context())
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Del("Content-Length")
	w.WriteHeader(k.status)
	_ = json.NewEncoder(w).Encode(p)
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
		s.writeProblem(w, r, probInvalid, invalid.Error())
	case errors.Is(err, job.ErrNotFound), errors.Is(err, artifact.ErrNotFound):
		s.writeProblem(w, r, probNotFound, "No such job or file: it does not exist, was deleted or evicted, or belongs to another owner.")
	case errors.As(err, &conflict):
		s.writeProblem(w, r, probConflict, conflict.Reason)
	case errors.Is(err, job.ErrIdempotencyReused):
		s.writeProblem(w, r, probIdemReused, "This Idempotency-Key was already used with a different request body; use a new key for a new request.")
	case errors.As(err, &limit):
		w.Header().Set("Retry-After", retryAfterSeconds(limit.RetryAfter))
		kind := probRateLimited
		if limit.Capacity {
			kind = probAtCapacity
		}
		s.writeProblem(w, r, kind, limit.Reason)
	case errors.Is(err, errStarting):
		w.Header().Set("Retry-After", retryAfterSeconds(startingRetry))
		s.writeProblem(w, r, probUnavailable, startingDetail)
	case errors.As(err, &unavailable):
		w.Header().Set("Retry-After", "300")
		s.writeProblem(w, r, probUnavailable, unavailable.Reason)
	default:
		s.log.ErrorContext(r.Context(), "internal error", "request_id", requestID(r.Context()),
			"method", r.Method, "path", r.URL.Path, "error", err.Error())
		s.writeProblem(w, r, probInternal, "An internal error occurred. Quote the request_id to the operator.")
	}
}

// retryAfterSeconds renders a wait as whole seconds, rounded up and at least 1.
func retryAfterSeconds(d time.Duration) string {
	return strconv.Itoa(max(1, int(math.Ceil(d.Seconds()))))
}

// errorPage serves the short human page of a problem type.
func (s *Server) errorPage(w http.ResponseWriter, r *http.Request) {
	slug := r.PathValue("slug")
	for _, k := range problemKinds {
		if k.slug == slug {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprintf(w, "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>%d %s · chaperone</title></head>\n"+
				"<body><h1>%d %s</h1>\n<p><code>%s</code></p>\n<p>%s</p>\n<p>The response body is an RFC 9457 problem (<code>application/problem+json</code>); its <code>detail</code> field says exactly what went wrong.</p></body></html>\n",
				k.status, k.title, k.status, k.title, k.slug, k.page)
			return
		}
	}
	s.writeProblem(w, r, probNotFound, fmt.Sprintf("There is no error type %q.", slug))
}

// logRecovered turns a panic in a handler into a 500 with a request id.
func (s *Server) recoverPanic(w http.ResponseWriter, r *http.Request) {
	if v := recover(); v != nil {
		if v == http.ErrAbortHandler {
			panic(v)
		}
		s.log.ErrorContext(r.Context(), "panic in handler", "request_id", requestID(r.Context()),
			slog.Any("panic", v), "path", r.URL.Path)
		s.writeProblem(w, r, probInternal, "An internal error occurred. Quote the request_id to the operator.")
	}
}
