package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"syscall"
	"time"

	"github.com/chaperone-bio/chaperone/api/problem"
)

// net/http answers a few requests by itself, before any handler sees them: a request line
// or header it cannot parse (400), headers over the limit (431), a transfer coding it does
// not know (501), an HTTP version it does not speak (505), and an Expect other than
// 100-continue (417). It writes those answers straight to the connection, in plain text.
// problemConn recognises them there and writes the same status as a problem instead, so
// that every error of the server is problem+json.
type problemListener struct {
	net.Listener
	s *Server
}

// Accept also bounds the connections one client holds open (clients.go), so that clients
// that open connections and dribble their requests cannot use up the server's file
// descriptors: a connection over the bound gets a 429 problem and is closed. Connections
// of a trusted proxy are not bounded here; the proxy bounds its clients.
func (l problemListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		pc := &problemConn{Conn: c, s: l.s, release: func() {}}
		peer := addrOf(c.RemoteAddr())
		if l.s.trusted(peer) {
			return pc, nil
		}
		release, ok := l.s.conns.take(clientGroup(peer))
		if ok {
			pc.release = release
			return pc, nil
		}
		go refuse(c, l.s.rawProblem(problem.TooManyConnections, "This client has too many connections open; close some, or reuse them with keep-alive."))
	}
}

// refuse writes a problem to a connection it will not serve, and closes it.
func refuse(c net.Conn, answer []byte) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	_, _ = c.Write(answer)
}

func addrOf(a net.Addr) netip.Addr {
	if tcp, ok := a.(*net.TCPAddr); ok {
		return tcp.AddrPort().Addr().Unmap()
	}
	return netip.IPv4Unspecified()
}

type problemConn struct {
	net.Conn
	s       *Server
	release func() // gives back the client's connection count, once
}

func (c *problemConn) Close() error {
	c.release()
	return c.Conn.Close()
}

// netHTTPErrorHeaders is how net/http's own plain-text answers end their header.
const netHTTPErrorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

func (c *problemConn) Write(p []byte) (int, error) {
	k, detail, ok := netHTTPAnswer(p)
	if !ok {
		return c.Conn.Write(p)
	}
	if _, err := c.Conn.Write(c.s.rawProblem(k, detail)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// SyscallConn lets the hangup watch of a detached hold reach the socket (hangup_linux.go).
func (c *problemConn) SyscallConn() (syscall.RawConn, error) {
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return nil, errors.New("api: the connection has no file descriptor")
	}
	return sc.SyscallConn()
}

// netHTTPAnswer recognises one of net/http's own answers in a write to the connection,
// and returns its kind and what net/http said. A handler's answer never matches: it
// carries a Date header, and no handler answers 417.
func netHTTPAnswer(p []byte) (problem.Kind, string, bool) {
	const prefix = "HTTP/1.1 "
	if len(p) < len(prefix)+3 || !bytes.HasPrefix(p, []byte(prefix)) {
		return problem.Kind{}, "", false
	}
	code, err := strconv.Atoi(string(p[len(prefix) : len(prefix)+3]))
	if err != nil {
		return problem.Kind{}, "", false
	}
	var detail string
	if i := bytes.Index(p, []byte(netHTTPErrorHeaders)); i > 0 {
		detail = string(p[i+len(netHTTPErrorHeaders):])
	} else if code == http.StatusExpectationFailed && bytes.HasPrefix(p[len(prefix)+3:], []byte(" Expectation Failed\r\n")) {
		detail = "the Expect header asks for something other than 100-continue"
	} else {
		return problem.Kind{}, "", false
	}
	switch code {
	case http.StatusBadRequest:
		return problem.Malformed, "The request could not be parsed as HTTP/1.1 (" + detail + ").", true
	case http.StatusRequestHeaderFieldsTooLarge:
		return problem.HeadersTooLarge, "The request's headers are over the limit of 1 MB.", true
	case http.StatusNotImplemented:
		return problem.NotImplemented, "The request uses a transfer coding the server does not implement; send the body with Content-Length or chunked.", true
	case http.StatusHTTPVersionNotSupported:
		return problem.VersionNotSupported, "The request's HTTP version is not supported; use HTTP/1.1 or HTTP/1.0.", true
	case http.StatusExpectationFailed:
		return problem.ExpectationFailed, "The request's Expect header asks for something other than 100-continue.", true
	}
	return problem.Kind{}, "", false
}

// rawProblem is a whole HTTP response carrying a problem of kind k, for a connection that
// closes after it. The request was not parsed, so neither its path nor its Host is known.
func (s *Server) rawProblem(k problem.Kind, detail string) []byte {
	body, _ := json.Marshal(problem.New(s.publicURL, k, detail, ""))
	body = append(body, '\n')
	return fmt.Appendf(nil, "HTTP/1.1 %d %s\r\nContent-Type: application/problem+json\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s",
		k.Status, http.StatusText(k.Status), len(body), body)
}
