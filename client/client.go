package client

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultURL is the address of a chaperone server on its defaults, on this machine.
const DefaultURL = "http://127.0.0.1:8080"

// Client calls one chaperone server. It is safe for concurrent use.
type Client struct {
	base  string // scheme://host[/prefix], without a trailing slash
	key   string
	http  *http.Client
	retry Retry
	agent string

	// sleep waits between attempts; tests replace it to see the delays without waiting.
	sleep func(ctx context.Context, d time.Duration) error
	now   func() time.Time
}

// Option configures a Client.
type Option func(*Client)

// WithAPIKey sends key as "Authorization: Bearer <key>", so that jobs belong to the key
// instead of to the client's address.
func WithAPIKey(key string) Option { return func(c *Client) { c.key = key } }

// WithHTTPClient makes the calls with hc instead of a client of the SDK's own. Keep its
// Timeout at zero or well above a minute: waits hold a request open for up to 60 s, and
// downloads last as long as they last. Bound calls with their context instead.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.http = hc } }

// WithRetry replaces the retry policy; zero fields keep their defaults.
func WithRetry(r Retry) Option { return func(c *Client) { c.retry = r.withDefaults() } }

// WithUserAgent names the program in the User-Agent header.
func WithUserAgent(ua string) Option { return func(c *Client) { c.agent = ua } }

// New returns a client of the server at baseURL (for example http://127.0.0.1:8080, or an
// address with a path prefix behind a proxy).
func New(baseURL string, opts ...Option) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("chaperone: server URL %q: want http:// or https:// and a host", baseURL)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("chaperone: server URL %q: no query or fragment, please", baseURL)
	}
	c := &Client{
		base:  strings.TrimSuffix(u.String(), "/"),
		http:  &http.Client{},
		retry: Retry{}.withDefaults(),
		agent: "chaperone-go",
		sleep: sleepCtx,
		now:   time.Now,
	}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// Retry is how a call is repeated when another attempt may succeed: a 429 (a quota or a
// full queue) or a 503 (no worker for the model) after the Retry-After the server asked
// for; a 502 or 504 from a proxy, and a connection that could not be made or broke,
// after an exponential backoff with jitter. Every call of the SDK is safe to repeat:
// reads are, cancel and delete are idempotent, and creates carry an Idempotency-Key that
// stays the same across the attempts of one call, so a retried create never makes a
// second job. A 500 is not retried, and neither is anything else.
type Retry struct {
	// Attempts is the most attempts one call makes, the first included, not counting
	// those after a wait the server announced (see Patience); 1 never retries. Default 5.
	Attempts int
	// Backoff is the delay before the first retry when the server named none; it doubles
	// with every further retry, up to MaxBackoff. Each delay is drawn at random from its
	// upper half, so that clients that failed together do not retry together.
	// Defaults 500 ms and 30 s.
	Backoff, MaxBackoff time.Duration
	// MaxRetryAfter is the longest Retry-After the client waits out. When the server asks
	// for longer (a 503 asks for 300 s: no hardware will appear in a moment), the call
	// ends at once with the *Error, whose RetryAfter tells the caller how long it was.
	// Default 60 s.
	MaxRetryAfter time.Duration
	// Patience is how long one call waits out the Retry-Afters the server announces on
	// 429 and 503, in all. Those waits do not count against Attempts: a quota that frees
	// a slot when a job ends may take several announced waits, and giving up on a wait
	// the server named would fail a call that was bound to succeed. Default 30 min.
	Patience time.Duration
}

func (r Retry) withDefaults() Retry {
	if r.Attempts < 1 {
		r.Attempts = 5
	}
	if r.Backoff <= 0 {
		r.Backoff = 500 * time.Millisecond
	}
	if r.MaxBackoff <= 0 {
		r.MaxBackoff = 30 * time.Second
	}
	if r.MaxRetryAfter <= 0 {
		r.MaxRetryAfter = 60 * time.Second
	}
	if r.Patience <= 0 {
		r.Patience = 30 * time.Minute
	}
	return r
}

// backoff is the delay before retry n (1-based) when the server named none.
func (r Retry) backoff(n int) time.Duration {
	d := r.Backoff
	for i := 1; i < n && d < r.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, r.MaxBackoff)
	return d/2 + rand.N(d/2+1)
}

// honour is the delay before a retry the server asked for with Retry-After: that long and
// up to a tenth more, so a crowd told the same number does not return at one instant.
func honour(after time.Duration) time.Duration {
	return after + rand.N(after/10+1)
}

// call is one API call, which send may make several times.
type call struct {
	method string
	path   string // escaped path and query under the base URL
	body   []byte // nil: no body
	header http.Header
}

// send makes the call, retrying as the policy says, and returns the first answer below
// 400 with its body open for the caller to read and close. An error answer becomes an
// *Error; no answer at all, after the last attempt, a *ConnectionError.
func (c *Client) send(ctx context.Context, cl call) (*http.Response, error) {
	var announced time.Duration // the server's Retry-Afters waited out so far
	for attempt := 1; ; attempt++ {
		res, err := c.once(ctx, cl)
		var delay time.Duration
		switch {
		case ctx.Err() != nil:
			if res != nil {
				res.Body.Close()
			}
			return nil, ctx.Err()
		case err != nil:
			if attempt >= c.retry.Attempts {
				// The *url.Error of net/http repeats the method and URL; keep its cause.
				var ue *url.Error
				if errors.As(err, &ue) {
					err = ue.Err
				}
				return nil, &ConnectionError{Method: cl.method, URL: c.base + cl.path, Attempts: attempt, Err: err}
			}
			delay = c.retry.backoff(attempt)
		case res.StatusCode < 400:
			return res, nil
		default:
			apiErr := readError(res, c.now())
			wait := res.Header.Get("Retry-After") != "" && apiErr.RetryAfter <= c.retry.MaxRetryAfter
			switch {
			case !retryable(res.StatusCode), apiErr.RetryAfter > c.retry.MaxRetryAfter,
				wait && announced+apiErr.RetryAfter > c.retry.Patience:
				return nil, apiErr
			case wait && c.retry.Attempts > 1:
				announced += apiErr.RetryAfter
				attempt-- // a wait the server announced is not a failed attempt
				delay = honour(apiErr.RetryAfter)
			case attempt >= c.retry.Attempts:
				return nil, apiErr
			default:
				delay = c.retry.backoff(attempt)
			}
		}
		if err := c.sleep(ctx, delay); err != nil {
			return nil, err
		}
	}
}

func retryable(status int) bool {
	switch status {
	case http.StatusTooManyRequests, http.StatusServiceUnavailable, http.StatusBadGateway, http.StatusGatewayTimeout:
		return true
	}
	return false
}

func (c *Client) once(ctx context.Context, cl call) (*http.Response, error) {
	var body io.Reader
	if cl.body != nil {
		body = bytes.NewReader(cl.body)
	}
	req, err := http.NewRequestWithContext(ctx, cl.method, c.base+cl.path, body)
	if err != nil {
		return nil, err
	}
	for k, v := range cl.header {
		req.Header[k] = v
	}
	if cl.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json, application/problem+json;q=0.9, */*;q=0.8")
	req.Header.Set("User-Agent", c.agent)
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	return c.http.Do(req)
}

// do makes a call whose answer is a JSON document, decoded into out (nil: discarded).
func (c *Client) do(ctx context.Context, cl call, out any) (*http.Response, error) {
	res, err := c.send(ctx, cl)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if out == nil {
		_, err = io.Copy(io.Discard, res.Body)
	} else {
		err = json.NewDecoder(res.Body).Decode(out)
	}
	if err != nil {
		return nil, fmt.Errorf("chaperone: %s %s: reading the answer: %w", cl.method, cl.path, err)
	}
	return res, nil
}

func (c *Client) getJSON(ctx context.Context, path string, out any) error {
	_, err := c.do(ctx, call{method: http.MethodGet, path: path}, out)
	return err
}

// jobPath is the escaped path of a job or one of its sub-resources; each segment is
// escaped on its own, so an id or artifact path cannot step outside the job.
func jobPath(id string, sub ...string) string {
	var b strings.Builder
	b.WriteString("/v1/jobs/")
	b.WriteString(url.PathEscape(id))
	for _, s := range sub {
		for seg := range strings.SplitSeq(s, "/") {
			b.WriteByte('/')
			b.WriteString(url.PathEscape(seg))
		}
	}
	return b.String()
}

// newIdempotencyKey names one create: 128 random bits.
func newIdempotencyKey() string {
	var b [16]byte
	_, _ = crand.Read(b[:]) // never fails (Go ≥1.24)
	return "chaperone-go-" + hex.EncodeToString(b[:])
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
