// Package problem is what every error answer of chaperone's HTTP server looks like: an
// RFC 9457 problem detail (application/problem+json) of one of a fixed set of types, each
// with a short page for humans at /errors/<slug>. The public API and the worker API answer
// with the same types, so that a client reads every error one way, and a type names one
// condition, so that a client tells conditions apart by it.
//
// It imports nothing of chaperone's.
package problem

import (
	"encoding/json"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
)

// Kind is one problem type: its slug, the status it answers with, its title, and the
// page served at /errors/<slug>.
type Kind struct {
	Slug   string
	Status int
	Title  string
	Page   string // one paragraph for humans
}

var (
	Invalid = Kind{"invalid-input", http.StatusBadRequest, "Invalid input",
		"The request was malformed or asked for something the service cannot do: a missing or extra input field, an unknown model, protocol or parameter, a value of the wrong type, or an input over a size cap. The detail names the field and what to change. Fix the request; sending it again unchanged will fail the same way."}
	Unauthorized = Kind{"unauthorized", http.StatusUnauthorized, "Unauthorized",
		"An API key was sent but it is not valid: unknown, revoked or malformed. Requests without any key are accepted and owned by the client address; requests with a bad key are refused so that jobs never land under the wrong owner. Check the key, or send none."}
	NotFound = Kind{"not-found", http.StatusNotFound, "Not found",
		"There is nothing at this address for you: the path is unknown, or the job does not exist, was deleted, was evicted by retention, or belongs to another owner. Check the id and the credentials you used to create the job."}
	MethodNotAllowed = Kind{"method-not-allowed", http.StatusMethodNotAllowed, "Method not allowed",
		"The path exists but does not accept this HTTP method. The Allow header lists the methods it accepts."}
	Conflict = Kind{"conflict", http.StatusConflict, "Conflict",
		"The job's current state does not allow this action: for example cancelling a job that already succeeded or failed, or downloading the archive of a job whose results are not ready. The detail names the state."}
	PreconditionFailed = Kind{"precondition-failed", http.StatusPreconditionFailed, "Precondition failed",
		"The request named a version of a download (If-Match or If-Unmodified-Since) that is not the one the service holds. Fetch it again without the condition to get the current version and its ETag."}
	RangeNotSatisfiable = Kind{"range-not-satisfiable", http.StatusRequestedRangeNotSatisfiable, "Range not satisfiable",
		"The Range header asks for bytes past the end of the file. The Content-Range header gives the file's length; a resumed download that already has that many bytes is complete."}
	TooLarge = Kind{"payload-too-large", http.StatusRequestEntityTooLarge, "Payload too large",
		"The request body is larger than the service accepts (8 MB by default; GET /v1/models lists the limit). Split the work into several jobs or shrink the input."}
	IdempotencyKeyReused = Kind{"idempotency-key-reused", http.StatusUnprocessableEntity, "Idempotency key reused",
		"This Idempotency-Key was already used by you with a different request body. A key names one request; use a fresh key for a different request."}
	RateLimited = Kind{"rate-limited", http.StatusTooManyRequests, "Rate limited",
		"You are over a per-owner quota: too many active jobs or too many creates per minute. Wait for the number of seconds in the Retry-After header, then retry; back off if it repeats."}
	AtCapacity = Kind{"at-capacity", http.StatusTooManyRequests, "At capacity",
		"The service's queue is full. Your turn will come: wait for the number of seconds in the Retry-After header and retry."}
	Unavailable = Kind{"unavailable", http.StatusServiceUnavailable, "Unavailable",
		"No worker that can run this model is online, so a job could not start. Reads and downloads keep working. Retry after the Retry-After header; the detail says what is missing so an operator can fix it."}
	Malformed = Kind{"malformed-request", http.StatusBadRequest, "Malformed request",
		"The request is not well-formed HTTP: a request line or header that cannot be parsed, or control characters in a header. Fix the client; the detail says what was wrong."}
	UnsupportedMediaType = Kind{"unsupported-media-type", http.StatusUnsupportedMediaType, "Unsupported media type",
		"Requests that create jobs must send their body as JSON, with Content-Type: application/json. This also keeps other web sites from creating jobs through their visitors' browsers."}
	ExpectationFailed = Kind{"expectation-failed", http.StatusExpectationFailed, "Expectation failed",
		"The request's Expect header asks for something the server does not do; the only expectation it meets is 100-continue."}
	HeadersTooLarge = Kind{"headers-too-large", http.StatusRequestHeaderFieldsTooLarge, "Request header fields too large",
		"The request's headers are larger than the server accepts (1 MB). Send fewer or shorter headers."}
	NotImplemented = Kind{"not-implemented", http.StatusNotImplemented, "Not implemented",
		"The request uses an HTTP feature the server does not implement, such as an unknown transfer coding. Send the body with Content-Length or chunked transfer coding."}
	VersionNotSupported = Kind{"http-version-not-supported", http.StatusHTTPVersionNotSupported, "HTTP version not supported",
		"The request names an HTTP version the server does not speak. Use HTTP/1.1."}
	TooManyConnections = Kind{"too-many-connections", http.StatusTooManyRequests, "Too many connections",
		"This client holds more connections open than the service allows one client (an IPv6 client counts by its /64). Reuse connections with keep-alive, or close some; the connection that got this answer is closed."}
	Internal = Kind{"internal", http.StatusInternalServerError, "Internal error",
		"Something went wrong inside the service. Nothing about it is shown here; the operator can find it in the server log under the request_id of this response."}
	LeaseLost = Kind{"lease-lost", http.StatusConflict, "Lease lost",
		"A worker wrote about an attempt of a job that no longer runs under it: the job was canceled or deleted, or its lease ran out and the job went back to the queue or to another worker. Nothing it sent is kept; the worker stops the job and asks for the next."}
	OffsetMismatch = Kind{"offset-mismatch", http.StatusConflict, "Offset mismatch",
		"A part of an upload starts at another offset than the server holds of it. The Upload-Offset header says how many bytes the server holds; the worker resumes from there."}
)

// Kinds are every problem type, for the pages at /errors/<slug>.
var Kinds = []Kind{Invalid, Unauthorized, NotFound, MethodNotAllowed, Conflict, PreconditionFailed,
	TooLarge, RangeNotSatisfiable, IdempotencyKeyReused, RateLimited, AtCapacity, Unavailable, Internal,
	Malformed, UnsupportedMediaType, ExpectationFailed, HeadersTooLarge, NotImplemented, VersionNotSupported,
	TooManyConnections, LeaseLost, OffsetMismatch}

// Lookup finds the kind of a slug.
func Lookup(slug string) (Kind, bool) {
	for _, k := range Kinds {
		if k.Slug == slug {
			return k, true
		}
	}
	return Kind{}, false
}

// Problem is a problem detail as chaperone sends it.
type Problem struct {
	Type     string `json:"type"`
	Title    string `json:"title"`
	Status   int    `json:"status"`
	Detail   string `json:"detail"`
	Instance string `json:"instance"`
	// RequestID is the id under which the operator's log has what a 500 does not show.
	RequestID string `json:"request_id,omitempty"`
}

// New is the problem of kind k, with its type under base (see Base).
func New(base string, k Kind, detail, instance string) Problem {
	return Problem{Type: base + "/errors/" + k.Slug, Title: k.Title, Status: k.Status, Detail: detail, Instance: instance}
}

// Slug is the slug of the problem's type, whatever base the type has.
func (p Problem) Slug() string {
	i := strings.LastIndex(p.Type, "/errors/")
	if i < 0 {
		return ""
	}
	return p.Type[i+len("/errors/"):]
}

// Write answers with p.
func Write(w http.ResponseWriter, p Problem) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Del("Content-Length")
	w.WriteHeader(p.Status)
	_ = json.NewEncoder(w).Encode(p)
}

// Base is the base URL of problem types: publicURL when it is set, else the scheme and
// Host of r when the Host is a plain host name or address, else "" (the type stays a
// reference relative to the server).
func Base(publicURL string, r *http.Request) string {
	if publicURL != "" {
		return strings.TrimSuffix(publicURL, "/")
	}
	if !plainHost(r.Host) {
		return ""
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// plainHost reports whether a Host header is a DNS name or an IP literal, with an optional
// port, and nothing else: what net/http accepts is wider (userinfo-like and sub-delimiter
// characters), and the problem type must not carry what a client slipped in.
func plainHost(h string) bool {
	host, port, err := net.SplitHostPort(h)
	if err != nil {
		host, port = h, ""
	} else if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return false
	}
	if strings.HasPrefix(h, "[") {
		inner, closed := strings.CutSuffix(strings.TrimPrefix(host, "["), "]")
		if port == "" && !closed { // with a port, SplitHostPort took the brackets off
			return false
		}
		a, err := netip.ParseAddr(inner)
		return err == nil && a.Is6() && a.Zone() == ""
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return a.Is4() // an IPv6 address must be in brackets
	}
	host = strings.TrimSuffix(host, ".")
	if host == "" || len(host) > 253 {
		return false
	}
	for _, label := range strings.Split(host, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range []byte(label) {
			if !(c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
				return false
			}
		}
	}
	return true
}

// Unrouted says how to answer a request that no route of mux takes: MethodNotAllowed with
// the methods that the path allows, when some route takes it under another method, else
// NotFound. ok is false when a route takes r.
func Unrouted(mux *http.ServeMux, r *http.Request) (k Kind, allow string, ok bool) {
	h, pattern := mux.Handler(r)
	if pattern != "" {
		return Kind{}, "", false
	}
	// Only the mux's own fallback knows the methods of a path: ask it, writing nothing.
	probe := &headerProbe{header: http.Header{}}
	h.ServeHTTP(probe, r)
	if probe.code == http.StatusMethodNotAllowed {
		return MethodNotAllowed, probe.header.Get("Allow"), true
	}
	return NotFound, "", true
}

// headerProbe captures what a handler would answer, writing nothing.
type headerProbe struct {
	header http.Header
	code   int
}

func (p *headerProbe) Header() http.Header         { return p.header }
func (p *headerProbe) Write(b []byte) (int, error) { return len(b), nil }
func (p *headerProbe) WriteHeader(code int)        { p.code = code }
