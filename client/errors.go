package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Error is an error answer of the API: an RFC 9457 problem, or for a response that is not
// one (a proxy's error page) its status with the body's start as Detail. Find it with
// errors.As, or ask StatusCode or one of the Is functions.
type Error struct {
	// Status is the HTTP status: 400 invalid input, 401 a bad key, 404 no such job (or not
	// yours), 409 the job's state forbids it, 413 too large, 422 an Idempotency-Key reused
	// with another body, 429 a quota or a full queue, 503 no worker for the model.
	Status int `json:"status"`
	// Type is the problem type URI, "<server>/errors/<slug>"; Slug gives the slug alone.
	Type     string `json:"type"`
	Title    string `json:"title"`
	Detail   string `json:"detail"`
	Instance string `json:"instance"`
	// RequestID names the server's log entry of the request: from the problem (always
	// there on a 500), else from the X-Request-Id header. Quote it to the operator.
	RequestID string `json:"request_id,omitempty"`
	// RetryAfter is how long the server asked the client to wait (429, 503), zero if it
	// did not say.
	RetryAfter time.Duration `json:"-"`

	header http.Header // of the answer, for what a caller in this package needs of it
}

func (e *Error) Error() string {
	msg := e.Detail
	if msg == "" {
		msg = e.Title
	}
	return fmt.Sprintf("%d %s: %s", e.Status, http.StatusText(e.Status), msg)
}

// Slug is the last segment of Type, such as "not-found" or "rate-limited"; empty when the
// answer was not a chaperone problem.
func (e *Error) Slug() string {
	i := strings.LastIndex(e.Type, "/errors/")
	if i < 0 {
		return ""
	}
	return e.Type[i+len("/errors/"):]
}

// StatusCode is the HTTP status of an *Error in err's chain, or 0 when there is none (a
// connection failure, a canceled context).
func StatusCode(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

// IsNotFound reports whether err is a 404: the job does not exist, was deleted or
// evicted, or belongs to another owner.
func IsNotFound(err error) bool { return StatusCode(err) == http.StatusNotFound }

// IsRateLimited reports whether err is a 429 that outlasted the client's retries.
func IsRateLimited(err error) bool { return StatusCode(err) == http.StatusTooManyRequests }

// IsUnavailable reports whether err is a 503: no live worker can run the model.
func IsUnavailable(err error) bool { return StatusCode(err) == http.StatusServiceUnavailable }

// ConnectionError is a call that got no complete answer on any attempt: the server could
// not be reached, or the connection broke before the answer was whole.
type ConnectionError struct {
	Method, URL string
	Attempts    int
	Err         error
}

func (e *ConnectionError) Error() string {
	tries := ""
	if e.Attempts > 1 {
		tries = fmt.Sprintf(" (%d attempts)", e.Attempts)
	}
	return fmt.Sprintf("%s %s: %v%s", e.Method, e.URL, e.Err, tries)
}

func (e *ConnectionError) Unwrap() error { return e.Err }

// readError turns an error response into an *Error, closing its body.
func readError(res *http.Response, now time.Time) *Error {
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	e := &Error{}
	mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type"))
	if mt == "application/problem+json" || mt == "application/json" {
		_ = json.Unmarshal(body, e) // a body that is not a problem leaves the fields empty
	}
	e.Status = res.StatusCode
	if e.Title == "" {
		e.Title = http.StatusText(res.StatusCode)
	}
	if e.Detail == "" && e.Type == "" {
		e.Detail = strings.TrimSpace(string(body[:min(len(body), 300)]))
	}
	if e.Instance == "" {
		e.Instance = res.Request.URL.Path
	}
	if e.RequestID == "" {
		e.RequestID = res.Header.Get("X-Request-Id")
	}
	e.RetryAfter = retryAfter(res.Header.Get("Retry-After"), now)
	e.header = res.Header
	return e
}

// retryAfter reads a Retry-After header: delay seconds or an HTTP date (RFC 9110 §10.2.3).
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(v); err == nil {
		return time.Duration(max(n, 0)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0)
	}
	return 0
}
