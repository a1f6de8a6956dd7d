package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/store"
)

// BenchmarkStanding is what a read of one queued job costs besides the job itself, when a
// busy slot makes it say why it waits (api's queue object): the live workers with their busy
// slots, and the owners ahead of it, in a queue of 6,000 jobs of 256 owners, as make bench's
// busy server holds.
func BenchmarkStanding(b *testing.B) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(b.TempDir(), "db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	now := time.Now()
	var ids []string
	for i := range 6000 {
		j := &job.Job{ID: job.NewID(), Owner: job.Owner{Kind: job.OwnerKey, ID: fmt.Sprint("owner", i%256)}, Kind: job.PredictKind,
			Model: "boltz2", RunModel: "boltz2", Params: map[string]any{}, Input: job.Input{Sequence: "MKT"}, Status: job.Queued, Total: 1, CreatedAt: now}
		if _, err := s.CreateJob(ctx, j, store.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		ids = append(ids, j.ID)
	}
	if _, err := s.LeaseJob(ctx, store.LeaseRequest{WorkerID: "w", Models: []string{"boltz2"}, Now: now, LeaseUntil: now.Add(time.Hour)}); err != nil {
		b.Fatal(err)
	}
	if err := s.PutWorker(ctx, store.Worker{ID: "w", Models: []string{"boltz2"}, Slots: 1, SeenAt: now}); err != nil {
		b.Fatal(err)
	}
	b.Run("LiveWorkers", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.LiveWorkers(ctx, now.Add(-time.Minute)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("OwnersAhead", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if _, err := s.OwnersAhead(ctx, ids[i%len(ids)]); err != nil {
				b.Fatal(err)
			}
		}
	})
}
