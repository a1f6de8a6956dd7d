package remote_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/apikey"
	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/store"
	"github.com/chaperone-bio/chaperone/worker"
	"github.com/chaperone-bio/chaperone/worker/backend"
	"github.com/chaperone-bio/chaperone/worker/queuetest"
	"github.com/chaperone-bio/chaperone/worker/remote"
)

// keys is a key table in memory: the handler only looks keys up.
type keys struct {
	mu sync.Mutex
	m  map[string]store.Key
}

func (k *keys) add(name string, isWorker bool) string {
	key, rec := apikey.New(name, time.Now())
	rec.Worker = isWorker
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil {
		k.m = map[string]store.Key{}
	}
	k.m[rec.Hash] = rec
	return key
}

func (k *keys) revoke(key string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	rec := k.m[apikey.Hash(key)]
	rec.RevokedAt = time.Now()
	k.m[rec.Hash] = rec
}

func (k *keys) KeyByHash(_ context.Context, hash string) (*store.Key, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	rec, ok := k.m[hash]
	if !ok || !rec.RevokedAt.IsZero() {
		return nil, job.ErrNotFound
	}
	return &rec, nil
}

// anyHolder says of every attempt that the worker gpu-node-1/w holds it.
type anyHolder struct{}

func (anyHolder) Holder(context.Context, worker.Fence) (string, error) { return "gpu-node-1/w", nil }

// leasesOf is q's own record of leases when it keeps one (a backend), else anyHolder.
func leasesOf(q worker.Queue) remote.Leases {
	if l, ok := q.(remote.Leases); ok {
		return l
	}
	return anyHolder{}
}

// newHandler makes a handler of q for the keys ks, closed when the test ends.
func newHandler(t *testing.T, q worker.Queue, ks *keys, staging string) *remote.Handler {
	t.Helper()
	h, err := remote.NewHandler(remote.HandlerConfig{Queue: q, Keys: ks, Leases: leasesOf(q), Staging: staging})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h
}

// serve serves q over HTTP through wrap (nil: as is) and returns the URL.
func serve(t *testing.T, q worker.Queue, ks *keys, wrap func(http.Handler) http.Handler) string {
	t.Helper()
	h := newHandler(t, q, ks, t.TempDir())
	var served http.Handler = h
	if wrap != nil {
		served = wrap(h)
	}
	srv := httptest.NewServer(served)
	t.Cleanup(srv.Close)
	return srv.URL
}

func client(t *testing.T, url, token string) *remote.Client {
	t.Helper()
	c, err := remote.NewClient(url, token)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The protocol suite, over HTTP.
func TestQueueOverHTTP(t *testing.T) {
	queuetest.Run(t, func(t *testing.T, q *backend.Queue) worker.Queue {
		ks := &keys{}
		token := ks.add("gpu-node-1", true)
		c := client(t, serve(t, q, ks, nil), token)
		c.ChunkSize = 7 // many chunks per artifact, so that offsets are exercised
		return c
	})
}

// recorder is a Queue that remembers the artifacts it was given; the rest it refuses.
type recorder struct {
	worker.Queue
	mu    sync.Mutex
	files map[string][]byte
}

func (r *recorder) PutArtifact(_ context.Context, f worker.Fence, path string, rd io.Reader) error {
	b, err := io.ReadAll(rd)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.files == nil {
		r.files = map[string][]byte{}
	}
	r.files[path] = b
	return nil
}

func (r *recorder) Announce(context.Context, worker.Announcement) (worker.Timing, error) {
	return worker.Timing{LeaseTTL: time.Minute, Heartbeat: time.Second}, nil
}

func TestTokens(t *testing.T) {
	ks := &keys{}
	workerToken := ks.add("gpu-node-1", true)
	userKey := ks.add("laptop", false)
	revoked := ks.add("gpu-node-2", true)
	ks.revoke(revoked)
	url := serve(t, &recorder{}, ks, nil)
	for _, tc := range []struct {
		name  string
		token string
		want  error
	}{
		{"a worker token", workerToken, nil},
		{"an API key", userKey, remote.ErrUnauthorized},
		{"a revoked worker token", revoked, remote.ErrUnauthorized},
		{"a malformed token", "let-me-in", remote.ErrUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := client(t, url, tc.token).Announce(t.Context(), worker.Announcement{WorkerID: "w"})
			if !errors.Is(err, tc.want) {
				t.Errorf("Announce with %s: error = %v, want %v", tc.name, err, tc.want)
			}
			info, err := client(t, url, tc.token).Token(t.Context())
			if !errors.Is(err, tc.want) || (err == nil && info.Name != "gpu-node-1") {
				t.Errorf("Token with %s: %+v, %v; want %v", tc.name, info, err, tc.want)
			}
		})
	}
}

// cutter drops the connection of the first artifact chunk after n bytes of its body, as
// a network failure does: the server sees the body break off, and the client no answer.
// It counts the artifact bytes the server received.
type cutter struct {
	next     http.Handler
	n        int64
	cut      atomic.Bool
	received atomic.Int64
}

func (c *cutter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPut {
		c.next.ServeHTTP(w, r)
		return
	}
	if !c.cut.CompareAndSwap(false, true) {
		r.Body = io.NopCloser(&countingReader{r: r.Body, n: &c.received})
		c.next.ServeHTTP(w, r)
		return
	}
	r.Body = io.NopCloser(&countingReader{r: io.MultiReader(io.LimitReader(r.Body, c.n), errReader{}), n: &c.received})
	c.next.ServeHTTP(httptest.NewRecorder(), r) // the answer is lost with the connection
	panic(http.ErrAbortHandler)
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, io.ErrUnexpectedEOF }

type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// TestUploadResumes: a chunk cut off midway is resumed from what the server holds, not
// sent again from the start, and the file arrives whole.
func TestUploadResumes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		reader func([]byte) io.Reader
	}{
		{"seekable", func(b []byte) io.Reader { return bytes.NewReader(b) }},
		{"stream", func(b []byte) io.Reader { return io.MultiReader(bytes.NewReader(b)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ks := &keys{}
			token := ks.add("gpu-node-1", true)
			rec := &recorder{}
			cut := &cutter{n: 1000}
			c := client(t, serve(t, rec, ks, func(h http.Handler) http.Handler { cut.next = h; return cut }), token)
			c.ChunkSize = 4096
			data := bytes.Repeat([]byte("ACGT-0123456789-"), 1024) // 16 KiB: four chunks
			if err := c.PutArtifact(t.Context(), worker.Fence{JobID: job.NewID(), Attempt: 1}, "t1/model.cif", tc.reader(data)); err != nil {
				t.Fatal(err)
			}
			if got := rec.files["t1/model.cif"]; !bytes.Equal(got, data) {
				t.Fatalf("the server stored %d bytes, want the %d sent", len(got), len(data))
			}
			if got := cut.received.Load(); got != int64(len(data)) {
				t.Errorf("the server received %d bytes for a %d-byte file; a resumed upload sends none twice", got, len(data))
			}
		})
	}
}

func TestLeaseLostCrossesTheWire(t *testing.T) {
	ks := &keys{}
	token := ks.add("gpu-node-1", true)
	c := client(t, serve(t, lostQueue{}, ks, nil), token)
	err := c.Heartbeat(t.Context(), worker.Heartbeat{Fence: worker.Fence{JobID: job.NewID(), Attempt: 1}})
	if !errors.Is(err, job.ErrLeaseLost) {
		t.Errorf("Heartbeat error = %v, want job.ErrLeaseLost", err)
	}
	if err := c.AppendLog(t.Context(), worker.Fence{JobID: job.NewID(), Attempt: 1}, 0, []byte("x")); !errors.Is(err, job.ErrLeaseLost) {
		t.Errorf("AppendLog error = %v, want job.ErrLeaseLost", err)
	}
}

// lostQueue answers every fenced write with a lost lease.
type lostQueue struct{ worker.Queue }

func (lostQueue) Heartbeat(context.Context, worker.Heartbeat) error { return job.ErrLeaseLost }
func (lostQueue) AppendLog(context.Context, worker.Fence, int64, []byte) error {
	return job.ErrLeaseLost
}

// workerIDs is a Queue that records the worker ids it is given.
type workerIDs struct {
	worker.Queue
	mu  sync.Mutex
	ids []string
}

func (q *workerIDs) record(id string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.ids = append(q.ids, id)
}

func (q *workerIDs) Announce(_ context.Context, a worker.Announcement) (worker.Timing, error) {
	q.record(a.WorkerID)
	return worker.Timing{LeaseTTL: time.Minute, Heartbeat: time.Second}, nil
}

func (q *workerIDs) Lease(_ context.Context, req worker.LeaseRequest) (*worker.Lease, error) {
	q.record(req.WorkerID)
	return nil, nil
}

func (q *workerIDs) ReleaseWorker(_ context.Context, id string) error { q.record(id); return nil }
func (q *workerIDs) HandBack(_ context.Context, id string) error      { q.record(id); return nil }
func (q *workerIDs) RemoveWorker(_ context.Context, id string) error  { q.record(id); return nil }

// TestWorkerIDsAreScopedByToken: the server records a worker under its token's name, so a
// token reaches no other token's workers, whatever id its worker claims.
func TestWorkerIDsAreScopedByToken(t *testing.T) {
	ks := &keys{}
	q := &workerIDs{}
	url := serve(t, q, ks, nil)
	ctx := t.Context()
	for _, name := range []string{"gpu-node-1", "gpu-node-2"} {
		c := client(t, url, ks.add(name, true))
		if _, err := c.Announce(ctx, worker.Announcement{WorkerID: "w"}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Lease(ctx, worker.LeaseRequest{WorkerID: "w"}); err != nil {
			t.Fatal(err)
		}
		for _, call := range []func(context.Context, string) error{c.ReleaseWorker, c.HandBack, c.RemoveWorker} {
			if err := call(ctx, "w"); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := slices.Concat(slices.Repeat([]string{"gpu-node-1/w"}, 5), slices.Repeat([]string{"gpu-node-2/w"}, 5))
	if !slices.Equal(q.ids, want) {
		t.Errorf("the server saw worker ids %q, want %q", q.ids, want)
	}
}

// heldLease is a Queue whose leases wait for work that never comes; held says when one
// waits.
type heldLease struct {
	worker.Queue
	held chan struct{}
}

func (q *heldLease) Lease(ctx context.Context, _ worker.LeaseRequest) (*worker.Lease, error) {
	q.held <- struct{}{}
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestCloseAnswersHeldLeases: a server that stops answers its held leases with "no job" at
// once, so that its workers ask again elsewhere instead of waiting out the long-poll.
func TestCloseAnswersHeldLeases(t *testing.T) {
	ks := &keys{}
	q := &heldLease{held: make(chan struct{}, 1)}
	h := newHandler(t, q, ks, t.TempDir())
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c := client(t, srv.URL, ks.add("gpu-node-1", true))
	type answer struct {
		l   *worker.Lease
		err error
	}
	answers := make(chan answer, 1)
	go func() {
		l, err := c.Lease(t.Context(), worker.LeaseRequest{WorkerID: "w", Wait: time.Minute})
		answers <- answer{l, err}
	}()
	<-q.held
	h.Close()
	select {
	case a := <-answers:
		if a.l != nil || a.err != nil {
			t.Errorf("a lease held while the server stopped = %+v, %v; want no job and no error", a.l, a.err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a held lease was not answered within 5 s of Close")
	}
}

// TestWorkAfterTheBodyOutlastsTheBodyDeadline: the read deadline on a request's body goes
// once the body is read, so that what the server does with it afterwards (storing a
// large artifact) may take longer than the deadline.
func TestWorkAfterTheBodyOutlastsTheBodyDeadline(t *testing.T) {
	t.Parallel()
	ks := &keys{}
	q := &slowStore{took: 300 * time.Millisecond}
	h, err := remote.NewHandler(remote.HandlerConfig{Queue: q, Keys: ks, Leases: anyHolder{},
		Staging: t.TempDir(), BodyIdle: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c := client(t, srv.URL, ks.add("gpu-node-1", true))
	if err := c.PutArtifact(t.Context(), worker.Fence{JobID: job.NewID(), Attempt: 1}, "t1.cif", strings.NewReader("data")); err != nil {
		t.Fatalf("an artifact stored for longer than the body deadline: %v", err)
	}
}

// slowStore is a Queue that takes its time to store an artifact, as a large one does.
type slowStore struct {
	worker.Queue
	took time.Duration
}

func (q *slowStore) PutArtifact(ctx context.Context, _ worker.Fence, _ string, r io.Reader) error {
	select {
	case <-time.After(q.took):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
