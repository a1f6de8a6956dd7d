package api

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

// Before net/http reuses a kept-alive connection it reads what is left of the request
// body, so that the next request starts where this one ends. A handler that takes no body
// (a health check, a cancel, a delete) leaves all of it, and net/http reads it before it
// even sends the answer: a client that announced 100,000 bytes and sent 3, or opened a
// chunked body and never ended it, waits for an answer that never comes, on a connection
// the server holds forever. So ServeHTTP watches what a handler reads of the body. When
// the answer starts before the body was read to its end, the connection closes after the
// answer instead of being reused, and once the handler is done the rest of the body is
// not waited for at all.

// bodyWatch counts what a handler reads of a request body. Only the request's own
// goroutine reads it.
type bodyWatch struct {
	io.ReadCloser
	read int64
	eof  bool
}

func (b *bodyWatch) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.read += int64(n)
	if errors.Is(err, io.EOF) {
		b.eof = true
	}
	return n, err
}

// watchBody puts a bodyWatch on r's body and returns it.
func watchBody(r *http.Request) *bodyWatch {
	b := &bodyWatch{ReadCloser: r.Body}
	r.Body = b
	return b
}

// unread reports whether the body of r, whose body b watches, still has bytes the
// handler did not read: a Content-Length not reached, or a chunked body whose end was
// not seen.
func (b *bodyWatch) unread(r *http.Request) bool {
	switch {
	case r.ContentLength == 0 || b.eof:
		return false
	case r.ContentLength > 0:
		return b.read < r.ContentLength
	}
	return true
}

// closeIfUnread marks the answer to r as the connection's last when the handler left
// some of the body unread. It must run before the answer's header is written.
func closeIfUnread(w http.ResponseWriter, r *http.Request) {
	if b, ok := r.Body.(*bodyWatch); ok && b.unread(r) {
		w.Header().Set("Connection", "close")
	}
}

// abandonUnread makes net/http give up at once on what is left of r's body once the
// handler is done, instead of reading it to reuse a connection that closes anyway: a read
// deadline in the past fails the read without waiting for the client.
func abandonUnread(w http.ResponseWriter, r *http.Request, b *bodyWatch) {
	if b.unread(r) {
		_ = http.NewResponseController(w).SetReadDeadline(time.Unix(1, 0))
	}
}

// bodyError says, in the request's own terms, why a body could not be read; the error
// itself may name socket addresses, which are nobody's business but the operator's.
func bodyError(err error) string {
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Sprintf("The request body did not arrive within %d seconds; send it whole, at once.", int(bodyReadTimeout.Seconds()))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "The request body ended before the length its headers announced."
	}
	return "The request body could not be read: its framing (Content-Length or chunked encoding) is broken."
}
