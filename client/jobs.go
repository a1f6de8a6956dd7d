package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Health reports that the server is up, and its API and build versions.
func (c *Client) Health(ctx context.Context) (*Health, error) {
	var h Health
	return &h, c.getJSON(ctx, "/v1/health", &h)
}

// Models returns the catalog: every model (and whether a worker can run it now), every
// design protocol, each with its params, and the service's limits.
func (c *Client) Models(ctx context.Context) (*Catalog, error) {
	var cat Catalog
	return &cat, c.getJSON(ctx, "/v1/models", &cat)
}

// OpenAPI returns the server's OpenAPI 3.1 document.
func (c *Client) OpenAPI(ctx context.Context) ([]byte, error) {
	var doc json.RawMessage
	return doc, c.getJSON(ctx, "/v1/openapi.json", &doc)
}

// CreateOptions are the optional headers of a create.
type CreateOptions struct {
	// IdempotencyKey names the request: a create repeated with the same key and body
	// returns the job the first one made. Empty means a fresh random key, which the
	// retries of this one call share; give your own to make a create safe to repeat
	// across calls or processes (a script that is run again).
	IdempotencyKey string
	// Wait asks the server to hold its answer until the job ends or this long has passed
	// (Prefer: wait, at most 60 s), for jobs that finish in seconds.
	Wait time.Duration
}

// CreatePrediction submits a structure prediction.
func (c *Client) CreatePrediction(ctx context.Context, req *PredictRequest, opts *CreateOptions) (*Job, error) {
	return c.create(ctx, "/v1/predictions", req, opts)
}

// CreateDesign submits a design job.
func (c *Client) CreateDesign(ctx context.Context, req *DesignRequest, opts *CreateOptions) (*Job, error) {
	return c.create(ctx, "/v1/designs", req, opts)
}

// CreateEmbedding submits an embedding job.
func (c *Client) CreateEmbedding(ctx context.Context, req *EmbedRequest, opts *CreateOptions) (*Job, error) {
	return c.create(ctx, "/v1/embeddings", req, opts)
}

func (c *Client) create(ctx context.Context, path string, req any, opts *CreateOptions) (*Job, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("chaperone: encoding the request: %w", err)
	}
	if opts == nil {
		opts = &CreateOptions{}
	}
	key := opts.IdempotencyKey
	if key == "" {
		key = newIdempotencyKey()
	}
	h := http.Header{"Idempotency-Key": {key}}
	if opts.Wait > 0 {
		h.Set("Prefer", preferWait(opts.Wait))
	}
	var j Job
	if _, err := c.do(ctx, call{method: http.MethodPost, path: path, body: body, header: h}, &j); err != nil {
		return nil, err
	}
	return &j, nil
}

// preferWait renders a hold in the whole seconds Prefer: wait takes, rounded up.
func preferWait(d time.Duration) string {
	return "wait=" + strconv.Itoa(max(1, int(math.Ceil(d.Seconds()))))
}

// GetJob returns the job as it stands.
func (c *Client) GetJob(ctx context.Context, id string) (*Job, error) {
	var j Job
	return &j, c.getJSON(ctx, jobPath(id), &j)
}

// PollJob is a long poll: the server answers as soon as the job is terminal, or when hold
// has passed (at most 60 s) with the job as it stands then.
func (c *Client) PollJob(ctx context.Context, id string, hold time.Duration) (*Job, error) {
	var j Job
	_, err := c.do(ctx, call{method: http.MethodGet, path: jobPath(id),
		header: http.Header{"Prefer": {preferWait(hold)}}}, &j)
	return &j, err
}

// ListOptions choose a page of ListJobs.
type ListOptions struct {
	Limit  int    // page size, 1..100; 0 means the server's default (20)
	Cursor string // NextCursor of the previous page; empty for the first
}

// ListJobs returns one page of the caller's jobs, newest first.
func (c *Client) ListJobs(ctx context.Context, opts *ListOptions) (*JobList, error) {
	q := url.Values{}
	if opts != nil && opts.Limit > 0 {
		q.Set("limit", strconv.Itoa(opts.Limit))
	}
	if opts != nil && opts.Cursor != "" {
		q.Set("cursor", opts.Cursor)
	}
	path := "/v1/jobs"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var l JobList
	return &l, c.getJSON(ctx, path, &l)
}

// Jobs iterates over all of the caller's jobs, newest first, fetching pages of pageSize
// (0: the server's default) as it goes. It stops at the first error, which it yields.
func (c *Client) Jobs(ctx context.Context, pageSize int) iter.Seq2[*Job, error] {
	return func(yield func(*Job, error) bool) {
		opts := &ListOptions{Limit: pageSize}
		for {
			page, err := c.ListJobs(ctx, opts)
			if err != nil {
				yield(nil, err)
				return
			}
			for _, j := range page.Data {
				if !yield(j, nil) {
					return
				}
			}
			if !page.HasMore || page.NextCursor == "" {
				return
			}
			opts.Cursor = page.NextCursor
		}
	}
}

// CancelJob stops a queued or running job and returns it, canceled. Canceling a canceled
// job is not an error; canceling a succeeded or failed one is a 409.
func (c *Client) CancelJob(ctx context.Context, id string) (*Job, error) {
	var j Job
	_, err := c.do(ctx, call{method: http.MethodPost, path: jobPath(id, "cancel")}, &j)
	return &j, err
}

// DeleteJob deletes a job and all its files, stopping it first if it runs.
func (c *Client) DeleteJob(ctx context.Context, id string) error {
	_, err := c.do(ctx, call{method: http.MethodDelete, path: jobPath(id)}, nil)
	return err
}

// Results returns the job's results manifest; Ready is false until it has succeeded.
func (c *Client) Results(ctx context.Context, id string) (*Results, error) {
	var r Results
	return &r, c.getJSON(ctx, jobPath(id, "results"), &r)
}

// Logs returns the job's run log as it stands.
func (c *Client) Logs(ctx context.Context, id string) ([]byte, error) {
	return c.LogsFrom(ctx, id, 0)
}

// LogsFrom returns the run log from byte offset on: what was appended since a reader
// that has offset bytes last looked, empty when nothing was.
func (c *Client) LogsFrom(ctx context.Context, id string, offset int64) ([]byte, error) {
	cl := call{method: http.MethodGet, path: jobPath(id, "logs")}
	if offset > 0 {
		cl.header = http.Header{"Range": {"bytes=" + strconv.FormatInt(offset, 10) + "-"}}
	}
	res, err := c.send(ctx, cl)
	if StatusCode(err) == http.StatusRequestedRangeNotSatisfiable {
		return nil, nil // nothing past offset yet
	}
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, &ConnectionError{Method: cl.method, URL: c.base + cl.path, Attempts: 1, Err: err}
	}
	if res.StatusCode == http.StatusOK && offset > 0 {
		// A server that ignores Range sends the whole log; keep what is new.
		b = b[min(int64(len(b)), offset):]
	}
	return b, nil
}

// OpenArtifact streams one artifact; path is exactly as the results manifest lists it.
// The caller closes the reader. DownloadArtifact saves one to disk and survives a broken
// connection.
func (c *Client) OpenArtifact(ctx context.Context, id, path string) (io.ReadCloser, error) {
	res, err := c.send(ctx, call{method: http.MethodGet, path: jobPath(id, "artifacts", path)})
	if err != nil {
		return nil, err
	}
	return res.Body, nil
}

// OpenArchive streams the zip of all the job's results: every artifact, results.json and
// run.log. The caller closes the reader. DownloadArchive saves it to disk and survives a
// broken connection.
func (c *Client) OpenArchive(ctx context.Context, id string) (io.ReadCloser, error) {
	res, err := c.send(ctx, call{method: http.MethodGet, path: jobPath(id, "archive")})
	if err != nil {
		return nil, err
	}
	return res.Body, nil
}
