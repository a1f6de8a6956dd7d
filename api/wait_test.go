package api

import (
	"context"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/store"
	"github.com/chaperone-bio/chaperone/store/sqlite"
)

// countingStore counts job reads.
type countingStore struct {
	store.Store
	reads atomic.Int64
}

func (c *countingStore) GetJob(ctx context.Context, id string) (*job.Job, error) {
	c.reads.Add(1)
	return c.Store.GetJob(ctx, id)
}

func (c *countingStore) GetJobSummary(ctx context.Context, id string) (*store.JobSummary, error) {
	c.reads.Add(1)
	return c.Store.GetJobSummary(ctx, id)
}

func TestHoldersOfOneJobShareOneWatch(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cs := &countingStore{Store: st}
	now := time.Now()
	j := &job.Job{ID: job.NewID(), Owner: job.Owner{Kind: job.OwnerIP, ID: "::1"}, Kind: job.PredictKind,
		Model: "boltz2", RunModel: "boltz2", Status: job.Queued, CreatedAt: now, Total: 1}
	if _, err := st.CreateJob(ctx, j, store.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	leased, err := st.LeaseJob(ctx, store.LeaseRequest{WorkerID: "w", Models: []string{"boltz2"}, Now: now, LeaseUntil: now.Add(time.Minute)})
	if err != nil || leased == nil {
		t.Fatalf("lease: %v %v", leased, err)
	}

	fw := newFinishWatch(cs)
	const holders = 200
	var ended sync.WaitGroup
	for range holders {
		ended.Go(func() { fw.wait(ctx, j.ID, time.Minute) })
	}
	// Every holder must be registered before the job changes, or a late one would start a
	// watch of its own and the count below would measure the scheduler, not the sharing.
	deadline := time.Now().Add(10 * time.Second)
	for fw.holders(j.ID) < holders {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d holders registered", fw.holders(j.ID), holders)
		}
		runtime.Gosched()
	}
	for i := range 20 { // twenty heartbeats while they hold
		if err := st.Heartbeat(ctx, store.Heartbeat{ID: j.ID, Attempt: 1, Activity: true, Now: now,
			LeaseUntil: now.Add(time.Minute), Progress: &job.Progress{Stage: job.StageInference, Done: i, Total: 20}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.CompleteJob(ctx, j.ID, 1, store.Outcome{Status: job.Succeeded, Results: &job.Results{}, Now: now}); err != nil {
		t.Fatal(err)
	}
	ended.Wait()
	// One read at the start, at most one per change, and the final one: never per holder.
	if n := cs.reads.Load(); n > 1+20+1 {
		t.Fatalf("%d holders and 21 changes cost %d job reads; want at most 22", holders, n)
	}
	fw.mu.Lock()
	defer fw.mu.Unlock()
	if len(fw.byJob) != 0 {
		t.Fatalf("%d watches left behind after the job ended", len(fw.byJob))
	}
}

// holders counts the requests holding on a job.
func (fw *finishWatch) holders(id string) int {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	if f, ok := fw.byJob[id]; ok {
		return f.holders
	}
	return 0
}
