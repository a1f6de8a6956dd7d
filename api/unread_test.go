package api

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/api/problem"
)

// atOnce bounds how long an answer that needs nothing from the client may take. Before
// the fix these requests had no answer at all: the server waited for the rest of the body.
const atOnce = 5 * time.Second

// exchange sends head (a request line and headers, without the blank line that ends
// them) and then body on conn, and reads one answer within atOnce.
func exchange(t *testing.T, conn net.Conn, br *bufio.Reader, head, body string) (*http.Response, []byte) {
	t.Helper()
	conn.SetDeadline(time.Now().Add(atOnce))
	if _, err := io.WriteString(conn, head+"\r\n"+body); err != nil {
		t.Fatalf("sending %q: %v", head, err)
	}
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("%q: no answer within %s: %v", firstLine(head), atOnce, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%q: reading the answer: %v", firstLine(head), err)
	}
	return res, b
}

func firstLine(s string) string { l, _, _ := strings.Cut(s, "\r\n"); return l }

// dial opens a connection to the server at url, closed when the test ends: a server that
// waits for a body must not be left waiting by a test that failed.
func dial(t *testing.T, url string) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn, bufio.NewReader(conn)
}

// expectClosed checks that the server closes conn within atOnce.
func expectClosed(t *testing.T, conn net.Conn, br *bufio.Reader, what string) {
	t.Helper()
	conn.SetDeadline(time.Now().Add(atOnce))
	if _, err := br.ReadByte(); !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !isReset(err) {
		t.Errorf("%s: the connection is still open after the answer (%v); want it closed", what, err)
	}
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && strings.Contains(op.Err.Error(), "reset")
}

// TestAnUnreadBodyIsNotWaitedFor: a request whose handler takes no body, sent with a body
// that never arrives whole (a Content-Length larger than what is sent, or a chunked body
// that is never ended) on a kept-alive connection, is answered at once, and its connection
// is closed rather than held for the rest of the body.
func TestAnUnreadBodyIsNotWaitedFor(t *testing.T) {
	t.Parallel()
	framings := []struct {
		name, headers, body string
	}{
		{"a Content-Length larger than the body", "Content-Length: 100000\r\n", "abc"},
		{"an open chunked body", "Transfer-Encoding: chunked\r\n", "3\r\nabc\r\n"},
	}
	for _, f := range framings {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			hs := newHoldServer(t)
			requests := []struct {
				method, path string
				want         int
			}{
				{"GET", "/v1/health", http.StatusOK},
				{"GET", "/v1/jobs/" + hs.jobID, http.StatusOK},
				{"POST", "/v1/jobs/" + hs.jobID + "/cancel", http.StatusOK},
				{"DELETE", "/v1/jobs/" + hs.jobID, http.StatusOK},
				{"GET", "/v1/nowhere", http.StatusNotFound},
			}
			for _, req := range requests {
				conn, br := dial(t, hs.url)
				// A whole request first, so that the connection is one kept alive.
				if res, _ := exchange(t, conn, br, "GET /v1/health HTTP/1.1\r\nHost: h\r\n", ""); res.StatusCode != http.StatusOK || res.Close {
					t.Fatalf("a plain health check: %d, close %v", res.StatusCode, res.Close)
				}
				head := req.method + " " + req.path + " HTTP/1.1\r\nHost: h\r\nPrefer: wait=1\r\n" + f.headers
				res, body := exchange(t, conn, br, head, f.body)
				if res.StatusCode != req.want {
					t.Errorf("%s %s: %d %s, want %d", req.method, req.path, res.StatusCode, body, req.want)
				}
				if !res.Close {
					t.Errorf("%s %s: the answer does not say Connection: close", req.method, req.path)
				}
				expectClosed(t, conn, br, req.method+" "+req.path)
			}
		})
	}
}

// TestABodyReadToItsEndKeepsTheConnection: a body that its handler reads to its end,
// by length or chunked, leaves the connection to be reused.
func TestABodyReadToItsEndKeepsTheConnection(t *testing.T) {
	t.Parallel()
	hs := newHoldServer(t)
	conn, br := dial(t, hs.url)
	create := "POST /v1/predictions HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\n"
	for _, req := range []struct{ framing, body string }{
		{"Content-Length: 2\r\n", "{}"},
		{"Transfer-Encoding: chunked\r\n", "2\r\n{}\r\n0\r\n\r\n"},
		{"Content-Length: 2\r\n", "{}"},
	} {
		res, body := exchange(t, conn, br, create+req.framing, req.body)
		if res.Close || res.StatusCode >= 500 {
			t.Errorf("a create with %q: %d %s, close %v; want the connection kept", req.framing, res.StatusCode, body, res.Close)
		}
	}
}

// TestAnOversizeBodyIsRefusedUpFront: a create that announces more than the body cap is a
// 413 at once, before a byte of the body arrives, not a 400 after the read timeout.
func TestAnOversizeBodyIsRefusedUpFront(t *testing.T) {
	t.Parallel()
	hs := newHoldServer(t)
	for _, length := range []string{"9437184", "9000000000000000000"} {
		conn, br := dial(t, hs.url)
		head := "POST /v1/predictions HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nContent-Length: " + length + "\r\n"
		res, body := exchange(t, conn, br, head, "{}")
		p := decodeProblem(t, res, body)
		if p.Status != http.StatusRequestEntityTooLarge || !strings.Contains(p.Detail, "8388608") {
			t.Errorf("Content-Length %s: %d %+v; want a 413 naming the limit", length, res.StatusCode, p)
		}
		expectClosed(t, conn, br, "Content-Length "+length)
	}
}

// TestABrokenBodyIsDescribedInTheRequestsTerms: a create whose body ends early or breaks
// its chunked framing is a 400 that says so, without the socket addresses or Go errors
// behind it.
func TestABrokenBodyIsDescribedInTheRequestsTerms(t *testing.T) {
	t.Parallel()
	hs := newHoldServer(t)
	for _, tc := range []struct {
		name, framing, body, want string
	}{
		{"a body cut short", "Content-Length: 100\r\n", `{"sequence":`, "ended before"},
		{"broken chunks", "Transfer-Encoding: chunked\r\n", "zz\r\n{}\r\n0\r\n\r\n", "framing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, br := dial(t, hs.url)
			head := "POST /v1/predictions HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\n" + tc.framing + "\r\n" + tc.body
			conn.SetDeadline(time.Now().Add(atOnce))
			io.WriteString(conn, head)
			conn.(*net.TCPConn).CloseWrite() // the client is done sending
			res, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("no answer: %v", err)
			}
			b, _ := io.ReadAll(res.Body)
			p := decodeProblem(t, res, b)
			if p.Status != http.StatusBadRequest || !strings.Contains(p.Detail, tc.want) || leaksInternals(p.Detail) {
				t.Errorf("%d %q; want a 400 saying %q, with nothing internal", p.Status, p.Detail, tc.want)
			}
		})
	}
}

func decodeProblem(t *testing.T, res *http.Response, body []byte) problem.Problem {
	t.Helper()
	var p problem.Problem
	if ct := res.Header.Get("Content-Type"); ct != "application/problem+json" || json.Unmarshal(body, &p) != nil {
		t.Fatalf("%d %s: not a problem: %s", res.StatusCode, ct, body)
	}
	return p
}

// leaksInternals reports whether an answer names what only the operator may see: socket
// addresses, Go types and packages, the store's drivers.
func leaksInternals(s string) bool {
	for _, tell := range []string{"127.0.0.1", "tcp ", "->", "Go value", "Go struct", "json:", "sqlite", "postgres", "pgx", "*", "goroutine"} {
		if strings.Contains(s, tell) {
			return true
		}
	}
	return false
}
