package align

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strings"
	"sync"
	"time"
)

// DefaultServer is the public ColabFold MMseqs2 server, the default of every upstream
// tool that aligns on a server, and chaperone's. Every sequence searched there leaves the
// machine.
const DefaultServer = "https://api.colabfold.com"

// RemoteConfig configures a Remote; zero fields take the defaults the package doc gives.
type RemoteConfig struct {
	// URL is the server, for example https://api.colabfold.com.
	URL string
	// Mode is the unpaired tickets' mode: env (default) or env-nofilter.
	Mode string
	// Pairing is the paired tickets' mode: pairgreedy (default), paircomplete,
	// pairgreedy-env or paircomplete-env.
	Pairing string
	// UserAgent names the client to the server, which asks clients to name themselves.
	UserAgent string
	// Username and Password, when set, are sent as HTTP basic authentication, and
	// APIKeyHeader with APIKey as a header of that name: how a private server behind an
	// authenticating proxy is reached (Boltz's --msa_server_username/--msa_server_password
	// and --api_key_header/--api_key_value). APIKeyHeader defaults to X-API-Key.
	Username, Password   string
	APIKeyHeader, APIKey string
	// Client sends the requests; the default gives up on a request after 2 minutes.
	Client *http.Client
	// Poll is the wait between two polls of a ticket under way.
	Poll time.Duration
	// Retry bounds the retries through failures.
	Retry Retry
}

// Retry bounds how long a search keeps trying through failures.
type Retry struct {
	// Attempts is how many failed tries end a search (default 6).
	Attempts int
	// Backoff is the wait after the first failure, doubled after each next (default 5 s).
	Backoff time.Duration
	// MaxBackoff caps the wait (default 1 minute).
	MaxBackoff time.Duration
}

// wait is how long to wait after the n-th failure (n ≥ 1).
func (r Retry) wait(n int) time.Duration {
	d := r.Backoff
	for i := 1; i < n && d < r.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, r.MaxBackoff)
}

// Remote searches on a ColabFold-compatible MMseqs2 server.
type Remote struct {
	cfg RemoteConfig
}

// The archive files of a ticket's alignments, in the order ColabFold joins them.
var (
	unpairedFiles = []string{"uniref.a3m", "bfd.mgnify30.metaeuk30.smag30.a3m"}
	pairedFiles   = []string{"pair.a3m"}
)

// NewRemote checks cfg and fills in its defaults.
func NewRemote(cfg RemoteConfig) (*Remote, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("align: the MSA server %q is not an http(s) URL", cfg.URL)
	}
	cfg.URL = strings.TrimSuffix(cfg.URL, "/")
	if cfg.Mode == "" {
		cfg.Mode = "env"
	}
	if cfg.Mode != "env" && cfg.Mode != "env-nofilter" {
		return nil, fmt.Errorf("align: MSA mode %q; it is env or env-nofilter", cfg.Mode)
	}
	if cfg.Pairing == "" {
		cfg.Pairing = "pairgreedy"
	}
	switch cfg.Pairing {
	case "pairgreedy", "paircomplete", "pairgreedy-env", "paircomplete-env":
	default:
		return nil, fmt.Errorf("align: pairing mode %q; it is pairgreedy or paircomplete, either with -env", cfg.Pairing)
	}
	if cfg.APIKeyHeader == "" {
		cfg.APIKeyHeader = "X-API-Key"
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "chaperone"
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 2 * time.Minute}
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 5 * time.Second
	}
	if cfg.Retry.Attempts <= 0 {
		cfg.Retry.Attempts = 6
	}
	if cfg.Retry.Backoff <= 0 {
		cfg.Retry.Backoff = 5 * time.Second
	}
	if cfg.Retry.MaxBackoff <= 0 {
		cfg.Retry.MaxBackoff = time.Minute
	}
	return &Remote{cfg: cfg}, nil
}

// Source says which server and modes r searches with.
func (r *Remote) Source() Source {
	return Source{Server: r.cfg.URL, Mode: r.cfg.Mode, Pairing: r.cfg.Pairing}
}

// ticket is one kind of search on the server: where it is submitted, in which mode, and
// which archive files hold its alignments.
type ticket struct {
	endpoint string
	mode     string
	files    []string
}

// Search submits the unpaired ticket of q's distinct chains and, for two or more, the
// paired one, both at once.
func (r *Remote) Search(ctx context.Context, q Query) (Result, error) {
	chains, err := q.distinct()
	if err != nil {
		return Result{}, err
	}
	tickets := []ticket{{"/ticket/msa", r.cfg.Mode, unpairedFiles}}
	if len(chains) > 1 {
		tickets = append(tickets, ticket{"/ticket/pair", r.cfg.Pairing, pairedFiles})
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	found := make([][]string, len(tickets))
	errs := make([]error, len(tickets))
	var wg sync.WaitGroup
	for i, t := range tickets {
		wg.Go(func() {
			found[i], errs[i] = r.search(ctx, t, chains)
			if errs[i] != nil {
				cancel() // the other ticket is of no use without this one
			}
		})
	}
	wg.Wait()
	if err := firstError(errs); err != nil {
		return Result{}, err
	}
	res := Result{Chains: chains, Unpaired: found[0], Source: r.Source()}
	if len(found) > 1 {
		res.Paired = found[1]
	}
	return res, nil
}

// firstError is the error that ended a search: a failure rather than the cancellation it
// caused in the other ticket.
func firstError(errs []error) error {
	var canceled error
	for _, err := range errs {
		switch {
		case err == nil:
		case !errors.Is(err, context.Canceled):
			return err
		case canceled == nil:
			canceled = err
		}
	}
	return canceled
}

// search runs one ticket to each chain's alignment, trying again after a failure within
// the bounds of Retry.
func (r *Remote) search(ctx context.Context, t ticket, chains []string) ([]string, error) {
	for fails := 1; ; fails++ {
		found, err := r.try(ctx, t, chains)
		if err == nil {
			return found, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("align: %s on %s: %w", t.endpoint, r.cfg.URL, context.Cause(ctx))
		}
		var final *finalError
		if errors.As(err, &final) || fails >= r.cfg.Retry.Attempts {
			return nil, fmt.Errorf("align: %s on %s failed (try %d of %d): %w", t.endpoint, r.cfg.URL, fails, r.cfg.Retry.Attempts, err)
		}
		if err := sleep(ctx, r.cfg.Retry.wait(fails)); err != nil {
			return nil, fmt.Errorf("align: %s on %s: %w", t.endpoint, r.cfg.URL, err)
		}
	}
}

// finalError is a failure that trying again would not mend.
type finalError struct{ err error }

func (e *finalError) Error() string { return e.err.Error() }
func (e *finalError) Unwrap() error { return e.err }

// status is the server's answer about a ticket.
type status struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Reason string `json:"reason"` // given with RATELIMIT
}

// try submits the ticket, polls it until complete and reads its archive.
func (r *Remote) try(ctx context.Context, t ticket, chains []string) ([]string, error) {
	form := url.Values{"q": {queryFASTA(chains)}, "mode": {t.mode}}
	st, err := r.status(ctx, http.MethodPost, t.endpoint, form)
	for err == nil && (st.Status == "PENDING" || st.Status == "RUNNING") {
		if err = sleep(ctx, r.cfg.Poll); err == nil {
			st, err = r.status(ctx, http.MethodGet, "/ticket/"+url.PathEscape(st.ID), nil)
		}
	}
	if err != nil {
		return nil, err
	}
	if st.Status != "COMPLETE" {
		msg := "the server answered " + st.Status
		if st.Reason != "" {
			msg += ": " + st.Reason
		}
		if st.ID != "" {
			msg = "ticket " + st.ID + ": " + msg
		}
		return nil, errors.New(msg)
	}
	archive, err := r.call(ctx, http.MethodGet, "/result/download/"+url.PathEscape(st.ID), nil)
	if err != nil {
		return nil, err
	}
	files, err := untar(archive, t.files)
	if err == nil {
		var found []string
		if found, err = assemble(chains, files, t.files); err == nil && t.endpoint == "/ticket/pair" {
			err = checkPaired(found)
		}
		if err == nil {
			return found, nil
		}
	}
	return nil, fmt.Errorf("the archive of ticket %s: %w", st.ID, err)
}

// status sends a request answered by a ticket's status. An answer without an id is a
// failure unless it says why (RATELIMIT, MAINTENANCE: the server's words).
func (r *Remote) status(ctx context.Context, method, endpoint string, form url.Values) (status, error) {
	body, err := r.call(ctx, method, endpoint, form)
	if err != nil {
		return status{}, err
	}
	var st status
	if err := json.Unmarshal(body, &st); err != nil || st.Status == "" {
		return st, fmt.Errorf("%s %s: the server's answer is not a ticket: %q", method, endpoint, clip(body))
	}
	if st.ID == "" && (st.Status == "PENDING" || st.Status == "RUNNING" || st.Status == "COMPLETE") {
		return st, fmt.Errorf("%s %s: a %s ticket without an id", method, endpoint, st.Status)
	}
	return st, nil
}

// archiveLimit bounds a result archive: a target's alignments take tens of megabytes.
const archiveLimit = 1 << 30

// call sends one request and returns the body of a 200 answer. A 4xx answer to a
// submission (but 429, too many requests) is final: the server refuses the query.
func (r *Remote) call(ctx context.Context, method, endpoint string, form url.Values) ([]byte, error) {
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, method, r.cfg.URL+endpoint, body)
	if err != nil {
		return nil, &finalError{err}
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.Header.Set("User-Agent", r.cfg.UserAgent)
	if r.cfg.Username != "" || r.cfg.Password != "" {
		req.SetBasicAuth(r.cfg.Username, r.cfg.Password)
	}
	if r.cfg.APIKey != "" {
		req.Header.Set(r.cfg.APIKeyHeader, r.cfg.APIKey)
	}
	resp, err := r.cfg.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("the server is unreachable: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, archiveLimit+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s %s: reading the answer: %w", method, endpoint, err)
	case len(data) > archiveLimit:
		return nil, fmt.Errorf("%s %s: an answer of more than %d bytes", method, endpoint, archiveLimit)
	case resp.StatusCode == http.StatusOK:
		return data, nil
	}
	err = fmt.Errorf("%s %s: %s: %q", method, endpoint, resp.Status, clip(data))
	if method == http.MethodPost && resp.StatusCode/100 == 4 && resp.StatusCode != http.StatusTooManyRequests {
		return nil, &finalError{err}
	}
	return nil, err
}

// untar reads the named files of a gzipped tar archive, which must hold each of them.
func untar(archive []byte, names []string) (map[string][]byte, error) {
	gz, err := gzip.NewReader(bytes.NewReader(archive))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errMalformed, err)
	}
	files := map[string][]byte{}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %w", errMalformed, err)
		}
		for _, name := range names {
			if path.Base(h.Name) == name {
				if files[name], err = io.ReadAll(tr); err != nil {
					return nil, fmt.Errorf("%w: %w", errMalformed, err)
				}
			}
		}
	}
	for _, name := range names {
		if _, ok := files[name]; !ok {
			return nil, fmt.Errorf("%w: no %s in the archive", errMalformed, name)
		}
	}
	return files, nil
}

// sleep waits d, or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}

// clip shortens a server's answer for an error message.
func clip(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
