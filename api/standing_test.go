package api

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/catalog"
	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/store"
)

// wholeReadsStore counts reads of whole jobs, input and results included.
type wholeReadsStore struct{ countingStore }

func (c *wholeReadsStore) GetJobSummary(ctx context.Context, id string) (*store.JobSummary, error) {
	return c.Store.GetJobSummary(ctx, id)
}

// Polling a succeeded job reads its whole row once, to learn whether it is partial; later
// polls answer from what the first one worked out, since a succeeded job never changes.
func TestPollingASucceededJobReadsItsResultsOnce(t *testing.T) {
	t.Parallel()
	st, arts := testStores(t)
	id := succeededJob(t, st, arts, "ATOM\n")
	counted := &wholeReadsStore{countingStore{Store: st}}
	srv := New(Config{Catalog: catalog.New(catalog.DefaultLimits()), Store: counted, Artifacts: arts,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), WorkerTTL: time.Hour})
	for range 3 {
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/v1/jobs/"+id, nil))
		if w.Code != http.StatusOK {
			t.Fatalf("GET: %d %s", w.Code, w.Body)
		}
	}
	if n := counted.reads.Load(); n != 1 {
		t.Errorf("three polls read the whole job %d times, want 1", n)
	}
}

// A job that a Slurm executor leased and that waits in Slurm's queue for a node has not
// started, whatever its lease says: its owner sees it queued, with the scheduler as the
// reason. Once it runs on the node, it shows as running again.
func TestAJobWaitingInTheSchedulerShowsAsQueued(t *testing.T) {
	t.Parallel()
	st, arts := testStores(t)
	srv := New(Config{Catalog: catalog.New(catalog.DefaultLimits()), Store: st, Artifacts: arts,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), WorkerTTL: time.Hour})
	id := leasedJob(t, st)

	tests := []struct {
		stage                  string
		status                 job.Status
		wantStage, wantStarted bool
		wantQueue              string
	}{
		{job.StageScheduler, job.Queued, false, false, "scheduler"},
		{job.StageInference, job.Running, true, true, ""},
	}
	for _, tc := range tests {
		now := time.Now()
		if err := st.Heartbeat(context.Background(), store.Heartbeat{ID: id, Attempt: 1,
			Progress: &job.Progress{Stage: tc.stage, Total: 1}, Now: now, LeaseUntil: now.Add(time.Minute)}); err != nil {
			t.Fatal(err)
		}
		for _, path := range []string{"/v1/jobs/" + id, "/v1/jobs"} {
			w := httptest.NewRecorder()
			srv.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
			var v jobJSON
			if path == "/v1/jobs" {
				var l struct{ Data []jobJSON }
				if err := json.Unmarshal(w.Body.Bytes(), &l); err != nil || len(l.Data) != 1 {
					t.Fatalf("GET %s: %v %s", path, err, w.Body)
				}
				v = l.Data[0]
			} else if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil {
				t.Fatalf("GET %s: %v %s", path, err, w.Body)
			}
			var gotQueue string
			if v.Queue != nil {
				gotQueue = v.Queue.Reason
			}
			if v.Status != tc.status || (v.Stage != nil) != tc.wantStage || (v.StartedAt != nil) != tc.wantStarted ||
				gotQueue != tc.wantQueue || v.WaitingForDevice != (tc.wantQueue != "") {
				t.Errorf("stage %s, GET %s: status %s, stage %v, started_at %v, queue %q, waiting_for_device %v",
					tc.stage, path, v.Status, v.Stage, v.StartedAt, gotQueue, v.WaitingForDevice)
			}
		}
	}
}

// leasedJob stores a job of testOwner that worker "w" leased, and returns its id.
func leasedJob(t *testing.T, st store.Store) string {
	t.Helper()
	ctx := context.Background()
	now := time.Now()
	if err := st.PutWorker(ctx, store.Worker{ID: "w", Models: []string{"boltz2"}, Slots: 1, SeenAt: now}); err != nil {
		t.Fatal(err)
	}
	j := &job.Job{ID: job.NewID(), Owner: testOwner, Kind: job.PredictKind, Model: "boltz2", RunModel: "boltz2",
		Status: job.Queued, CreatedAt: now, Total: 1}
	if _, err := st.CreateJob(ctx, j, store.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	l, err := st.LeaseJob(ctx, store.LeaseRequest{WorkerID: "w", Models: []string{"boltz2"}, Now: now, LeaseUntil: now.Add(time.Minute)})
	if err != nil || l == nil || l.ID != j.ID {
		t.Fatalf("lease: %v, %v", l, err)
	}
	return j.ID
}
