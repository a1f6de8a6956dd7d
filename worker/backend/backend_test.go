package backend_test

import (
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/align"
	"github.com/chaperone-bio/chaperone/aligner"
	artifactfs "github.com/chaperone-bio/chaperone/artifact/fs"
	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/store"
	"github.com/chaperone-bio/chaperone/store/sqlite"

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

// alignedJob queues a job with one search and finishes its alignment claim, as the
// alignment stage does once its alignments are in the cache.
func alignedJob(t *testing.T, st store.Store, chains ...string) string {
	t.Helper()
	ctx := context.Background()
	j := &job.Job{ID: job.NewID(), Owner: job.Owner{Kind: job.OwnerKey, ID: "k"}, Kind: job.PredictKind, Model: "boltz2",
		RunModel: "boltz2", Input: job.Input{Sequence: chains[0]}, Status: job.Queued, CreatedAt: time.Now(),
		Searches: []job.Search{{Chains: chains}}}
	if _, err := st.CreateJob(ctx, j, store.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if c, err := st.ClaimAlignment(ctx, "aligner", now, now.Add(time.Minute)); err != nil || c == nil || c.ID != j.ID {
		t.Fatalf("claim: %v, %v", c, err)
	}
	if err := st.FinishAlignment(ctx, j.ID, "aligner", now, ""); err != nil {
		t.Fatal(err)
	}
	return j.ID
}

func TestALeaseCarriesItsJobsAlignmentsOrSendsItBackToBeSearched(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "chaperone.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	arts, err := artifactfs.Open(filepath.Join(dir, "artifacts"))
	if err != nil {
		t.Fatal(err)
	}
	cache := aligner.NewCache(arts, align.Source{Server: "https://msa.example.org", Mode: "env", Pairing: "pairgreedy"}, aligner.Limits{})
	q := backend.New(backend.Config{Store: st, Artifacts: arts, Alignments: cache})
	req := worker.LeaseRequest{WorkerID: "w", Models: []string{"boltz2"}}

	kept := align.Result{Chains: []string{"MKV", "GGW"}, Unpaired: []string{">101\nMKV\n", ">102\nGGW\n"},
		Paired: []string{">101\nMKV\n>x\nMKA\n", ">102\nGGW\n>x\nGGA\n"}, Source: cache.Source()}
	if err := cache.Put(ctx, kept); err != nil {
		t.Fatal(err)
	}
	id := alignedJob(t, st, "MKV", "GGW", "MKV")
	l, err := q.Lease(ctx, req)
	if err != nil || l == nil || l.JobID != id {
		t.Fatalf("lease: %+v, %v; want job %s", l, err, id)
	}
	if len(l.Alignments) != 1 || !slices.Equal(l.Alignments[0].Paired, kept.Paired) || !slices.Equal(l.Alignments[0].Unpaired, kept.Unpaired) {
		t.Fatalf("the lease carries %+v; want the kept alignments", l.Alignments)
	}

	// Alignments swept from the cache before a worker took the job: the job goes back to
	// be searched, and no worker gets it meanwhile.
	gone := alignedJob(t, st, "WWY")
	if l, err := q.Lease(ctx, req); err != nil || l != nil {
		t.Fatalf("lease of a job whose alignments are gone: %+v, %v; want none", l, err)
	}
	j, err := st.GetJobSummary(ctx, gone)
	if err != nil || j.Status != job.Queued || !j.Aligning {
		t.Fatalf("job whose alignments are gone: %+v, %v; want queued to be searched again", j, err)
	}
}
