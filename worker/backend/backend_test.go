package backend_test

import (
	"context"
	"encoding/json"
	"io"
	"testing"

	"github.com/chaperone-bio/chaperone/worker"
	"github.com/chaperone-bio/chaperone/worker/backend"
	"github.com/chaperone-bio/chaperone/worker/queuetest"
)

// The in-process worker calls the backend itself.
func TestInProcessQueue(t *testing.T) {
	queuetest.Run(t, func(t *testing.T, q *backend.Queue) worker.Queue { return q })
}

// The wire types cross a network as JSON: passed through it both ways, everything the
// protocol says still arrives.
func TestQueueOverJSON(t *testing.T) {
	queuetest.Run(t, func(t *testing.T, q *backend.Queue) worker.Queue { return &jsonQueue{t: t, q: q} })
}

// jsonQueue sends every value to the backend and back through JSON, as a transport would.
type jsonQueue struct {
	t *testing.T
	q *backend.Queue
}

func viaJSON[T any](t *testing.T, v T) T {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encoding %T: %v", v, err)
	}
	var out T
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("decoding %T: %v", v, err)
	}
	return out
}

func (j *jsonQueue) Announce(ctx context.Context, a worker.Announcement) (worker.Timing, error) {
	timing, err := j.q.Announce(ctx, viaJSON(j.t, a))
	return viaJSON(j.t, timing), err
}

func (j *jsonQueue) Lease(ctx context.Context, req worker.LeaseRequest) (*worker.Lease, error) {
	l, err := j.q.Lease(ctx, viaJSON(j.t, req))
	if l == nil {
		return nil, err
	}
	out := viaJSON(j.t, *l)
	return &out, err
}

func (j *jsonQueue) Heartbeat(ctx context.Context, hb worker.Heartbeat) error {
	return j.q.Heartbeat(ctx, viaJSON(j.t, hb))
}

func (j *jsonQueue) AppendLog(ctx context.Context, f worker.Fence, offset int64, p []byte) error {
	return j.q.AppendLog(ctx, viaJSON(j.t, f), offset, p)
}

func (j *jsonQueue) PutArtifact(ctx context.Context, f worker.Fence, path string, r io.Reader) error {
	return j.q.PutArtifact(ctx, viaJSON(j.t, f), path, r)
}

func (j *jsonQueue) Complete(ctx context.Context, c worker.Completion) error {
	return j.q.Complete(ctx, viaJSON(j.t, c))
}

func (j *jsonQueue) ReleaseWorker(ctx context.Context, workerID string) error {
	return j.q.ReleaseWorker(ctx, workerID)
}

func (j *jsonQueue) HandBack(ctx context.Context, workerID string) error {
	return j.q.HandBack(ctx, workerID)
}

func (j *jsonQueue) RemoveWorker(ctx context.Context, workerID string) error {
	return j.q.RemoveWorker(ctx, workerID)
}
