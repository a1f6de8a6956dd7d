package api

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// A request held by Prefer: wait spends nearly all its life doing nothing, and net/http
// charges it for the whole of it: the connection's goroutine and the one that watches for a
// hang-up, their stacks, and the connection's read and write buffers, some 30 KB a request.
// So a held HTTP/1.1 request is detached: its connection is taken from net/http (hijacked),
// the hold waits on a timer and the job's watch, which cost no goroutine, and the client
// hanging up is watched for by one epoll for the whole process (hangup_linux.go; elsewhere
// by a small read per connection). When the hold ends the response is written to the
// connection directly, and the connection goes back to net/http (through the listener from
// Server.Listener) to serve the client's next request, as keep-alive would have.

// Listener wraps ln, the listener the server is to be served on, so that a connection
// whose held request was answered outside net/http comes back to it. Without it every hold
// blocks its handler, as net/http does by default. Call it once, before serving, and only
// for a listener of plain HTTP (TLS is for a proxy in front, as chaperone is deployed).
// Its connections also turn the answers net/http writes by itself into problems
// (framing.go).
func (s *Server) Listener(ln net.Listener) net.Listener {
	l := &rejoinListener{Listener: problemListener{Listener: ln, s: s}, accepted: make(chan acceptResult), rejoined: make(chan net.Conn), done: make(chan struct{})}
	s.detached.listener = l
	return l
}

// EndHolds answers every detached hold at once with the job as it stands and closes its
// connection, and makes later holds block in their handlers. It is for shutting down,
// before http.Server.Shutdown, which does not see detached connections. Connections still
// being written to when ctx ends are closed.
func (s *Server) EndHolds(ctx context.Context) { s.detached.endAll(ctx) }

// detachedHolds are the holds taken from net/http, for EndHolds.
type detachedHolds struct {
	listener *rejoinListener // nil: holds are not detached

	mu     sync.Mutex
	held   map[*detachedHold]struct{}
	ending bool
	wg     sync.WaitGroup
}

// add registers h for EndHolds, unless it has run.
func (dh *detachedHolds) add(h *detachedHold) bool {
	dh.mu.Lock()
	defer dh.mu.Unlock()
	if dh.ending {
		return false
	}
	if dh.held == nil {
		dh.held = map[*detachedHold]struct{}{}
	}
	dh.held[h] = struct{}{}
	dh.wg.Add(1)
	return true
}

// remove unregisters h once it is answered.
func (dh *detachedHolds) remove(h *detachedHold) {
	dh.mu.Lock()
	defer dh.mu.Unlock()
	if _, ok := dh.held[h]; ok {
		delete(dh.held, h)
		dh.wg.Done()
	}
}

func (dh *detachedHolds) endAll(ctx context.Context) {
	dh.mu.Lock()
	dh.ending = true
	held := make([]*detachedHold, 0, len(dh.held))
	for h := range dh.held {
		held = append(held, h)
	}
	dh.mu.Unlock()
	for _, h := range held {
		go h.end(false)
	}
	ended := make(chan struct{})
	go func() {
		dh.wg.Wait()
		close(ended)
	}()
	select {
	case <-ended:
		return
	case <-ctx.Done():
	}
	// Clients too slow to take their answer: cut them off, which fails the writes at once.
	dh.mu.Lock()
	for h := range dh.held {
		h.conn.Close()
	}
	dh.mu.Unlock()
	<-ended
}

// detachedHold is one held request after its handler has returned.
type detachedHold struct {
	s       *Server
	r       *http.Request
	info    *requestInfo
	header  http.Header // what the handler had set before the hold; net/http no longer reads it
	answer  holdAnswer
	jobID   string
	release func()

	conn    net.Conn
	pending []byte // bytes of the client's next request, read before the hold

	once      sync.Once
	mu        sync.Mutex    // guards stops and stopWatch, which end may need before detach has set them
	stops     []func() bool // unregister the triggers: the timer, the job's end
	stopWatch func()        // stops watching for a hang-up
	peek      [1]byte       // a byte of the next request, when peeked is set
	peeked    bool
}

// detach takes a held request from net/http if it can, and reports whether it did. It
// cannot for a server served without its Listener, once EndHolds has run, for HTTP/2 or
// TLS, for other methods than GET and POST, and while a request body is still unread.
func (s *Server) detach(w http.ResponseWriter, r *http.Request, jobID string, d time.Duration, answer holdAnswer) bool {
	info, _ := r.Context().Value(requestInfoKey{}).(*requestInfo)
	if s.detached.listener == nil || info == nil || r.ProtoMajor != 1 || r.ProtoMinor < 1 || r.TLS != nil ||
		(r.Method != http.MethodGet && r.Method != http.MethodPost) {
		return false
	}
	// The next request on the connection starts after this one's body: all of it must be
	// read before the connection is taken. A create's body is read by now; a body that a
	// handler left unread is not waited for (unread.go), and its hold stays in net/http.
	if b, ok := r.Body.(*bodyWatch); !ok || b.unread(r) {
		return false
	}
	if _, err := io.CopyN(io.Discard, r.Body, 4<<10); err != io.EOF {
		return false
	}
	if s.detached.isEnding() {
		return false
	}
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return false
	}
	h := &detachedHold{s: s, r: slimRequest(r, info), info: info, header: w.Header(), answer: answer, jobID: jobID}
	info.detached = true
	s.holding.Add(1)
	h.conn = conn
	if n := buf.Reader.Buffered(); n > 0 {
		p, _ := buf.Reader.Peek(n)
		h.pending = bytes.Clone(p)
	}
	// net/http's deadlines (headers, idle) are not those of a hold.
	_ = conn.SetDeadline(time.Time{})

	f := s.finishes.acquire(jobID)
	h.release = func() { s.finishes.release(jobID, f) }
	// Under h.mu until every trigger is set, so that one firing at once (or EndHolds) finds
	// what end needs.
	h.mu.Lock()
	registered := s.detached.add(h)
	timer := time.AfterFunc(d, func() { h.end(false) })
	stopEnded := context.AfterFunc(f.ended, func() { h.end(false) })
	h.stops = []func() bool{timer.Stop, stopEnded}
	// A client that hangs up ends its hold at once, as it would in net/http.
	var ok bool
	if h.stopWatch, ok = watchHangUp(conn, func() { h.end(true) }); !ok {
		h.stopWatch = h.readForHangUp()
	}
	h.mu.Unlock()
	if !registered { // EndHolds began meanwhile: answer now
		go h.end(false)
	}
	return true
}

// readForHangUp watches for a hang-up where watchHangUp cannot: with a goroutine reading
// from the connection. A byte read is the start of the client's next request, kept for when
// the connection goes back to net/http. It returns the function that stops the read.
func (h *detachedHold) readForHangUp() func() {
	var aborting atomic.Bool
	done := make(chan struct{})
	go func() {
		n, _ := h.conn.Read(h.peek[:])
		h.peeked = n == 1
		hungUp := n == 0 && !aborting.Load()
		close(done)
		if hungUp {
			h.end(true)
		}
	}()
	return func() {
		aborting.Store(true)
		_ = h.conn.SetReadDeadline(time.Unix(1, 0))
		<-done
		_ = h.conn.SetReadDeadline(time.Time{})
	}
}

// end ends the hold, once: it answers the request and hands the connection back.
func (h *detachedHold) end(hungUp bool) {
	h.once.Do(func() {
		defer h.s.detached.remove(h)
		h.mu.Lock()
		for _, stop := range h.stops {
			stop()
		}
		h.stopWatch()
		h.mu.Unlock()
		h.release()
		h.s.holding.Add(-1)

		rw := &bufferedResponse{header: h.header}
		h.respond(rw)
		closeAfter := hungUp || h.r.Close || h.s.detached.isEnding()
		if err := h.write(rw, closeAfter); err != nil || closeAfter {
			h.conn.Close()
		} else {
			h.rejoin()
		}
		h.s.record(h.r, h.info, rw.status())
	})
}

// respond runs the handler's answer with the job as it stands, recovering a panic into a
// 500 problem as ServeHTTP does.
func (h *detachedHold) respond(rw *bufferedResponse) {
	defer h.s.recoverPanic(rw, h.r)
	cur, err := h.s.reread(h.r, h.jobID)
	h.answer(rw, h.r, cur, true, err)
}

// slimRequest copies what an answer and the access log read of r: method, path, host,
// route, the request id. The hold keeps it instead of r, whose headers, context and body
// (which reads from net/http's buffer of the connection) would stay alive as long.
func slimRequest(r *http.Request, info *requestInfo) *http.Request {
	slim := &http.Request{Method: r.Method, URL: &url.URL{Path: r.URL.Path}, Proto: r.Proto, ProtoMajor: r.ProtoMajor,
		ProtoMinor: r.ProtoMinor, Header: http.Header{}, Host: r.Host, RemoteAddr: r.RemoteAddr, Close: r.Close,
		Pattern: r.Pattern, Body: http.NoBody}
	return slim.WithContext(context.WithValue(context.Background(), requestInfoKey{}, info))
}

// writeTimeout bounds the write of a held request's response to a client that reads it
// slowly or not at all.
const writeTimeout = 30 * time.Second

func (h *detachedHold) write(rw *bufferedResponse, closeAfter bool) error {
	rw.header.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	res := &http.Response{StatusCode: rw.status(), ProtoMajor: 1, ProtoMinor: 1, Request: h.r, Header: rw.header,
		ContentLength: int64(rw.body.Len()), Body: io.NopCloser(&rw.body), Close: closeAfter}
	var out bytes.Buffer // one write to the connection, not one per line
	if err := res.Write(&out); err != nil {
		return err
	}
	_ = h.conn.SetWriteDeadline(time.Now().Add(writeTimeout))
	if _, err := h.conn.Write(out.Bytes()); err != nil {
		return err
	}
	return h.conn.SetWriteDeadline(time.Time{})
}

// rejoin gives the connection back to net/http, with what the client has already sent of
// its next request in front.
func (h *detachedHold) rejoin() {
	pending := h.pending
	if h.peeked {
		pending = append(pending, h.peek[0])
	}
	conn := h.conn
	if len(pending) > 0 {
		conn = &prefixedConn{Conn: h.conn, prefix: pending}
	}
	if !h.s.detached.listener.rejoin(conn) {
		conn.Close()
	}
}

func (dh *detachedHolds) isEnding() bool {
	dh.mu.Lock()
	defer dh.mu.Unlock()
	return dh.ending
}

// bufferedResponse is the ResponseWriter a detached hold's answer writes to.
type bufferedResponse struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (b *bufferedResponse) Header() http.Header { return b.header }

func (b *bufferedResponse) WriteHeader(code int) {
	if b.code == 0 {
		b.code = code
	}
}

func (b *bufferedResponse) Write(p []byte) (int, error) {
	if b.code == 0 {
		b.code = http.StatusOK
	}
	return b.body.Write(p)
}

func (b *bufferedResponse) status() int {
	if b.code == 0 {
		return http.StatusOK
	}
	return b.code
}

// prefixedConn reads prefix before what arrives on the connection.
type prefixedConn struct {
	net.Conn
	prefix []byte
}

func (c *prefixedConn) Read(p []byte) (int, error) {
	if len(c.prefix) > 0 {
		n := copy(p, c.prefix)
		c.prefix = c.prefix[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// rejoinListener accepts the connections of its listener and those that detached holds
// hand back.
type rejoinListener struct {
	net.Listener
	accepted  chan acceptResult
	rejoined  chan net.Conn
	done      chan struct{}
	feedOnce  sync.Once
	closeOnce sync.Once
}

type acceptResult struct {
	conn net.Conn
	err  error
}

func (l *rejoinListener) Accept() (net.Conn, error) {
	l.feedOnce.Do(func() { go l.feed() })
	select {
	case c := <-l.rejoined:
		return c, nil
	case a := <-l.accepted:
		return a.conn, a.err
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// feed accepts from the wrapped listener until it is closed.
func (l *rejoinListener) feed() {
	for {
		c, err := l.Listener.Accept()
		select {
		case l.accepted <- acceptResult{c, err}:
		case <-l.done:
			if c != nil {
				c.Close()
			}
			return
		}
		if errors.Is(err, net.ErrClosed) {
			return
		}
	}
}

// rejoin hands c to the server's accept loop, and reports false once the listener is
// closed (the server is shutting down).
func (l *rejoinListener) rejoin(c net.Conn) bool {
	select {
	case l.rejoined <- c:
		return true
	case <-l.done:
		return false
	}
}

func (l *rejoinListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}
