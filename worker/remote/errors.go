package remote

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"

	"github.com/chaperone-bio/chaperone/api/problem"
	"github.com/chaperone-bio/chaperone/artifact"
	"github.com/chaperone-bio/chaperone/job"
)

// The worker endpoints answer errors as the public API does: problem details of the same
// types (package problem), whose detail says what is wrong in the request's own terms.
// What went wrong inside the server goes to the operator's log under the request id that
// a 500 carries, never into the answer.

// badRequest is a request the handler cannot take, with what to fix.
type badRequest struct{ detail string }

func (e badRequest) Error() string { return e.detail }

// tooLarge is a body or an upload over a cap, with which cap.
type tooLarge struct{ detail string }

func (e tooLarge) Error() string { return e.detail }

// offsetMismatch is an upload part, or an attempt's output, that starts past what the
// server holds of it.
type offsetMismatch struct{ held, sent int64 }

func (e offsetMismatch) Error() string {
	return fmt.Sprintf("The server holds %d bytes of this upload or output, not %d; resume from %d.", e.held, e.sent, e.held)
}

const leaseLostDetail = "This attempt no longer holds the job: it was canceled or deleted, or its lease ran out and it went back to the queue. Stop it; nothing more it sends is kept."

// fail answers r with the problem that err is.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	var (
		bad     badRequest
		big     tooLarge
		offset  offsetMismatch
		gap     *artifact.LogOffsetError
		invalid *job.InvalidError
	)
	if errors.As(err, &gap) {
		err = offsetMismatch{held: gap.Held, sent: gap.Offset}
	}
	switch {
	case errors.Is(err, job.ErrLeaseLost):
		h.problem(w, r, problem.LeaseLost, leaseLostDetail)
	case errors.Is(err, ErrUnauthorized):
		h.problem(w, r, problem.Unauthorized, "Send a live worker token as Authorization: Bearer <token>; this one is missing, unknown, revoked, or an API key. Worker tokens come from chaperone keys create --worker.")
	case errors.As(err, &bad):
		h.problem(w, r, problem.Invalid, bad.detail)
	case errors.As(err, &invalid):
		h.problem(w, r, problem.Invalid, invalid.Error())
	case errors.As(err, &big):
		h.problem(w, r, problem.TooLarge, big.detail)
	case errors.As(err, &offset):
		w.Header().Set(headerOffset, strconv.FormatInt(offset.held, 10))
		h.problem(w, r, problem.OffsetMismatch, offset.Error())
	default:
		if !errors.Is(err, context.Canceled) {
			// A worker that hung up (a long-polled lease it gave up, a worker stopping)
			// reads no answer, and nothing went wrong here; anything else is logged.
			h.cfg.Logger.Warn("worker endpoint failed", "request_id", requestID(w), "method", r.Method,
				"path", r.URL.Path, "error", err.Error())
		}
		h.problem(w, r, problem.Internal, "An internal error occurred. Quote the request_id to the operator.")
	}
}

func (h *Handler) problem(w http.ResponseWriter, r *http.Request, k problem.Kind, detail string) {
	p := problem.New(problem.Base(h.cfg.PublicURL, r), k, detail, r.URL.Path)
	if k.Status >= 500 {
		p.RequestID = requestID(w)
	}
	problem.Write(w, p)
}

// requestID is the id under which the server logs the request: the one the API server
// gave it, or a new one when the handler is served alone.
func requestID(w http.ResponseWriter) string {
	if id := w.Header().Get("X-Request-Id"); id != "" {
		return id
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	w.Header().Set("X-Request-Id", id)
	return id
}

// readJSON decodes a request body of at most maxJSONBody bytes into v. Fields v does not
// know are ignored, so that workers and servers of neighbouring versions understand each
// other.
func readJSON(w http.ResponseWriter, r *http.Request, v any) error {
	if r.ContentLength > maxJSONBody {
		return tooLarge{fmt.Sprintf("The request body is over the limit of %d bytes.", maxJSONBody)}
	}
	body := &bodyReader{r: http.MaxBytesReader(w, r.Body, maxJSONBody)}
	err := json.NewDecoder(body).Decode(v)
	var big *http.MaxBytesError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &big):
		return tooLarge{fmt.Sprintf("The request body is over the limit of %d bytes.", big.Limit)}
	case body.err != nil:
		return badRequest{brokenBody}
	}
	return badRequest{jsonProblem(err, v)}
}

// jsonProblem says why a body did not decode into v, in the terms of the JSON sent:
// encoding/json's own words name Go types.
func jsonProblem(err error, v any) string {
	var (
		syntax *json.SyntaxError
		typ    *json.UnmarshalTypeError
	)
	switch {
	case errors.Is(err, io.EOF):
		return "The request body is empty; send a JSON object."
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "The request body ends in the middle of a JSON value."
	case errors.As(err, &syntax):
		return fmt.Sprintf("The request body is not JSON: %s (at byte %d).", syntax.Error(), syntax.Offset)
	case errors.As(err, &typ) && typ.Field == "":
		return fmt.Sprintf("The request body must be %s, not %s.", jsonKind(reflect.TypeOf(v)), typ.Value)
	case errors.As(err, &typ):
		return fmt.Sprintf("%s: want %s, not %s.", typ.Field, jsonKind(typ.Type), typ.Value)
	}
	return "The request body is not a message of the worker protocol: a field holds a value of the wrong form."
}

// jsonKind names what JSON value a Go type takes.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "a JSON object"
	}
	return "another JSON value"
}

// readAll reads a request body of at most limit bytes.
func readAll(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if r.ContentLength > limit {
		return nil, tooLarge{fmt.Sprintf("The request body is over the limit of %d bytes.", limit)}
	}
	p, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var big *http.MaxBytesError
	switch {
	case err == nil:
		return p, nil
	case errors.As(err, &big):
		return nil, tooLarge{fmt.Sprintf("The request body is over the limit of %d bytes.", big.Limit)}
	}
	return nil, badRequest{brokenBody}
}

const brokenBody = "The request body ended before the length its headers announced, broke its chunked framing, or stopped arriving before its end."
