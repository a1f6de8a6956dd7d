package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/chaperone-bio/chaperone/api/problem"
	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/worker"
)

// Defaults of Client.
const (
	DefaultChunkSize = 8 << 20
	// DefaultResumes is how many times one artifact upload resumes after a failed chunk.
	DefaultResumes = 5
	resumeBackoff  = 500 * time.Millisecond
)

// Client is a worker.Queue on a server's worker endpoints. It is safe for concurrent use.
type Client struct {
	base  string // server URL without a trailing slash
	token string
	HTTP  *http.Client
	// ChunkSize is the size of one artifact upload request; Resumes how often an upload
	// resumes after a chunk failed before it gives up.
	ChunkSize int64
	Resumes   int
}

var _ worker.Queue = (*Client)(nil)

// NewClient returns a client of the server at serverURL (http or https) with a worker token.
func NewClient(serverURL, token string) (*Client, error) {
	u, err := url.Parse(serverURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("remote: %q is not an http(s) URL", serverURL)
	}
	if token == "" {
		return nil, errors.New("remote: a worker token is required")
	}
	return &Client{base: strings.TrimSuffix(serverURL, "/"), token: token, HTTP: &http.Client{},
		ChunkSize: DefaultChunkSize, Resumes: DefaultResumes}, nil
}

func (c *Client) request(ctx context.Context, method, path string, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	return req, nil
}

// send makes req and returns the answer when it is a success; otherwise the error its
// problem detail says.
func (c *Client) send(req *http.Request) (*http.Response, error) {
	res, err := c.HTTP.Do(req)
	if err != nil {
		return nil, err
	}
	if res.StatusCode < 300 {
		return res, nil
	}
	defer res.Body.Close()
	var p problem.Problem
	_ = json.NewDecoder(io.LimitReader(res.Body, 1<<20)).Decode(&p)
	switch {
	case p.Slug() == problem.LeaseLost.Slug:
		return nil, job.ErrLeaseLost
	case p.Slug() == problem.Unauthorized.Slug:
		return nil, ErrUnauthorized
	case p.Slug() == problem.Invalid.Slug:
		// The in-process queue's own error for a message it refuses.
		return nil, &job.InvalidError{Reason: p.Detail}
	}
	return nil, &statusError{status: res.StatusCode, answer: p}
}

// statusError is a refusal other than a lost lease, a bad token or an invalid message: the
// server's problem detail, or only its status when the answer was not one (a proxy's
// error page, or none at all from a server that went away).
type statusError struct {
	status int
	answer problem.Problem
}

// retryable reports whether a call that failed with err may succeed when made again: when
// the server was not reached or did not answer for itself (a replica going away behind a
// load balancer answers 502 or 503 there), or was busy. A refusal of the request itself
// (a lost lease, a bad token, an invalid message, a cap, an offset) stays a refusal.
func retryable(err error) bool {
	var refused *statusError
	if !errors.As(err, &refused) {
		return !errors.Is(err, job.ErrLeaseLost) && !errors.Is(err, ErrUnauthorized) && !isInvalid(err)
	}
	return refused.status >= 500 || refused.status == http.StatusTooManyRequests
}

// isOffsetMismatch reports whether err is the server holding another part of an upload.
func isOffsetMismatch(err error) bool {
	var refused *statusError
	return errors.As(err, &refused) && refused.answer.Slug() == problem.OffsetMismatch.Slug
}

func isInvalid(err error) bool {
	var invalid *job.InvalidError
	return errors.As(err, &invalid)
}

func (e *statusError) Error() string {
	if e.answer.Detail == "" {
		return fmt.Sprintf("remote: the server answered %d %s", e.status, http.StatusText(e.status))
	}
	return fmt.Sprintf("remote: the server answered %d %s: %s", e.status, e.answer.Slug(), e.answer.Detail)
}

// post sends in as JSON and decodes the answer into out, unless out is nil or the answer
// has no content.
func (c *Client) post(ctx context.Context, path string, in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := c.request(ctx, http.MethodPost, path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := c.send(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if out == nil || res.StatusCode == http.StatusNoContent {
		return nil
	}
	if err := json.NewDecoder(res.Body).Decode(out); err != nil {
		return fmt.Errorf("remote: reading the answer to %s: %w", path, err)
	}
	return nil
}

// Token asks the server whether it accepts the client's token as a worker token, changing
// nothing there: ErrUnauthorized when it does not.
func (c *Client) Token(ctx context.Context) (TokenInfo, error) {
	var info TokenInfo
	req, err := c.request(ctx, http.MethodGet, pathToken, nil)
	if err != nil {
		return info, err
	}
	res, err := c.send(req)
	if err != nil {
		return info, err
	}
	defer res.Body.Close()
	if err := json.NewDecoder(res.Body).Decode(&info); err != nil {
		return info, fmt.Errorf("remote: reading the answer to %s: %w", pathToken, err)
	}
	return info, nil
}

// Announce implements worker.Queue.
func (c *Client) Announce(ctx context.Context, a worker.Announcement) (worker.Timing, error) {
	var t worker.Timing
	err := c.post(ctx, pathAnnounce, a, &t)
	return t, err
}

// Lease implements worker.Queue; the server holds the request for up to req.Wait.
func (c *Client) Lease(ctx context.Context, req worker.LeaseRequest) (*worker.Lease, error) {
	var l *worker.Lease // stays nil when the answer is 204: no job
	if err := c.post(ctx, pathLease, req, &l); err != nil {
		return nil, err
	}
	return l, nil
}

// Heartbeat implements worker.Queue.
func (c *Client) Heartbeat(ctx context.Context, hb worker.Heartbeat) error {
	return c.post(ctx, pathHeartbeat, hb, nil)
}

// Complete implements worker.Queue.
func (c *Client) Complete(ctx context.Context, cm worker.Completion) error {
	return c.post(ctx, pathComplete, cm, nil)
}

// ReleaseWorker implements worker.Queue.
func (c *Client) ReleaseWorker(ctx context.Context, workerID string) error {
	return c.post(ctx, pathRelease, workerRef{WorkerID: workerID}, nil)
}

// HandBack implements worker.Queue.
func (c *Client) HandBack(ctx context.Context, workerID string) error {
	return c.post(ctx, pathHandBack, workerRef{WorkerID: workerID}, nil)
}

// RemoveWorker implements worker.Queue.
func (c *Client) RemoveWorker(ctx context.Context, workerID string) error {
	return c.post(ctx, pathRemove, workerRef{WorkerID: workerID}, nil)
}

// Backoff of a log append sent again.
const (
	appendRetryFirst = 100 * time.Millisecond
	appendRetryMax   = 2 * time.Second
)

// AppendLog implements worker.Queue. An append that fails on the way (a server gone, a
// load balancer answering for it, a server busy) is sent again until ctx ends: its offset
// makes the server keep it once, through whichever server it reaches, and whether or not
// the failed try went through.
func (c *Client) AppendLog(ctx context.Context, f worker.Fence, offset int64, p []byte) error {
	for wait := appendRetryFirst; ; wait = min(2*wait, appendRetryMax) {
		err := c.appendLog(ctx, f, offset, p)
		if err == nil || !retryable(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
	}
}

func (c *Client) appendLog(ctx context.Context, f worker.Fence, offset int64, p []byte) error {
	req, err := c.request(ctx, http.MethodPost, attemptPath(f)+"log", bytes.NewReader(p))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set(headerOffset, strconv.FormatInt(offset, 10))
	res, err := c.send(req)
	if err != nil {
		return err
	}
	return res.Body.Close()
}

// PutArtifact implements worker.Queue. The file goes up in chunks of ChunkSize, each at the
// offset it starts at. When a chunk fails (a dropped connection, a server restarting), the
// upload asks the server how much it holds and goes on from there: from inside the chunk
// in hand, or, when r can seek, from anywhere (an upload that a load balancer sent on to
// another replica starts over there). It gives up after Resumes such failures.
func (c *Client) PutArtifact(ctx context.Context, f worker.Fence, path string, r io.Reader) error {
	target := attemptPath(f) + "artifacts/" + escapePath(path)
	buf := make([]byte, max(c.ChunkSize, 1))
	var (
		base    int64     // where pending starts in the file: what the server holds
		pending = buf[:0] // bytes read from r, not yet held by the server
		eof     bool      // r has no more
		resumes int
	)
	for {
		if !eof && len(pending) < len(buf) {
			n, err := io.ReadFull(r, buf[len(pending):])
			eof = errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
			if err != nil && !eof {
				return err
			}
			pending = buf[:len(pending)+n]
		}
		err := c.putChunk(ctx, target, base, pending, eof)
		if err == nil {
			if eof {
				return nil
			}
			base += int64(len(pending))
			pending = buf[:0]
			continue
		}
		if ctx.Err() != nil || !retryable(err) && !isOffsetMismatch(err) || resumes >= c.Resumes {
			return err
		}
		resumes++
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(resumeBackoff):
		}
		held, herr := c.heldOffset(ctx, target)
		switch {
		case herr != nil:
			// Send the same bytes again; the server refuses them if it holds others.
		case held >= base && held <= base+int64(len(pending)):
			n := copy(buf, pending[held-base:])
			base, pending = held, buf[:n]
		default:
			seeker, ok := r.(io.Seeker)
			if !ok {
				return fmt.Errorf("remote: the server holds %d bytes of %s, which this upload cannot go back to: %w", held, path, err)
			}
			if _, err := seeker.Seek(held, io.SeekStart); err != nil {
				return err
			}
			base, pending, eof = held, buf[:0], false
		}
	}
}

// putChunk sends p as the bytes of the upload at target from offset.
func (c *Client) putChunk(ctx context.Context, target string, offset int64, p []byte, last bool) error {
	req, err := c.request(ctx, http.MethodPut, target, bytes.NewReader(p))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set(headerOffset, strconv.FormatInt(offset, 10))
	if last {
		req.Header.Set(headerComplete, "1")
	}
	res, err := c.send(req)
	if err != nil {
		return err
	}
	return res.Body.Close()
}

// heldOffset asks how many bytes of the upload at target the server holds.
func (c *Client) heldOffset(ctx context.Context, target string) (int64, error) {
	req, err := c.request(ctx, http.MethodHead, target, nil)
	if err != nil {
		return 0, err
	}
	res, err := c.send(req)
	if err != nil {
		return 0, err
	}
	res.Body.Close()
	return strconv.ParseInt(res.Header.Get(headerOffset), 10, 64)
}

// escapePath escapes each segment of an artifact path for a URL.
func escapePath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}
