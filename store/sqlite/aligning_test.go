package sqlite

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/pressly/goose/v3"

	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/store"
	"github.com/chaperone-bio/chaperone/store/storetest"
)

// TestSearchClaimAcrossOpenings: two stores on one file (two processes), each with
// aligners claiming one search at once: exactly one holds it.
func TestSearchClaimAcrossOpenings(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "chaperone.db")
	stores := []*Store{openAt(t, path), openAt(t, path)}
	const perStore = 8
	now := time.Now()
	won := make([]bool, len(stores)*perStore)
	errs := make([]error, len(won))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for n, s := range stores {
		for k := range perStore {
			i := n*perStore + k
			wg.Go(func() {
				<-start
				won[i], errs[i] = s.ClaimSearch(t.Context(), "uniref/3f2a", fmt.Sprint("aligner-", i), now, now.Add(time.Minute))
			})
		}
	}
	close(start)
	wg.Wait()
	storetest.OneWinner(t, "aligners on two openings", won, errs)
}

// TestAligningMigrationDownAndUp: migration 00010 goes down with a claimed job in the table,
// which becomes a plain queued job, and up again.
func TestAligningMigrationDownAndUp(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	ctx := t.Context()
	now := time.Now()
	j := &job.Job{ID: job.NewID(), Owner: job.Owner{Kind: job.OwnerKey, ID: "erin"}, Kind: job.PredictKind,
		RunModel: "boltz2", Input: job.Input{Sequence: "MKV"}, Searches: []job.Search{{Chains: []string{"MKV"}}},
		CreatedAt: now}
	if _, err := s.CreateJob(ctx, j, store.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.ClaimAlignment(ctx, "aligner", now, now.Add(time.Minute)); err != nil || got == nil {
		t.Fatalf("ClaimAlignment = %v, %v", got, err)
	}
	sub, _ := fs.Sub(migrations, "migrations")
	p, err := goose.NewProvider(goose.DialectSQLite3, s.w, sub)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Down(ctx); err != nil {
		t.Fatalf("migrating down: %v", err)
	}
	var stage string
	if err := s.w.QueryRowContext(ctx, `SELECT stage FROM jobs WHERE id = ?`, j.ID).Scan(&stage); err != nil || stage != "" {
		t.Errorf("after migrating down the claimed job has stage %q (%v), want none: it is a plain queued job", stage, err)
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatalf("migrating up again: %v", err)
	}
	// Its searches were forgotten on the way down: it is a job for a worker now, leased
	// through the rebuilt queue index.
	l, err := s.LeaseJob(ctx, store.LeaseRequest{WorkerID: "w", Models: []string{"boltz2"}, Now: now, LeaseUntil: now.Add(time.Hour)})
	if err != nil || l == nil || l.ID != j.ID {
		t.Errorf("after migrating down and up LeaseJob = %v, %v; want the job", l, err)
	}
}

// BenchmarkClaimAlignment measures a claim and the end of its searches with 2000 jobs
// queued for workers and 1000 waiting for their searches; each op queues a new one, so the
// queue stays as long. "without the index" drops jobs_aligning, for comparison.
func BenchmarkClaimAlignment(b *testing.B) {
	for _, indexed := range []bool{true, false} {
		name := "with the index"
		if !indexed {
			name = "without the index"
		}
		b.Run(name, func(b *testing.B) {
			s := openTest(b)
			ctx := context.Background()
			at := time.Unix(1_800_000_000, 0)
			aligning := func(i int) *job.Job {
				j := benchJob(i, at)
				j.Searches = []job.Search{{Chains: []string{"MKTAYIAKQRQISFVKSHFSRQ"}}}
				return j
			}
			for i := range 3000 {
				j := benchJob(i, at)
				if i%3 == 0 {
					j = aligning(i)
				}
				if _, err := s.CreateJob(ctx, j, store.CreateOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			if !indexed {
				if _, err := s.w.ExecContext(ctx, `DROP INDEX jobs_aligning`); err != nil {
					b.Fatal(err)
				}
			}
			for i := 0; b.Loop(); i++ {
				j, err := s.ClaimAlignment(ctx, "aligner", at, at.Add(time.Hour))
				if err != nil || j == nil {
					b.Fatalf("ClaimAlignment = %v, %v", j, err)
				}
				if err := s.FinishAlignment(ctx, j.ID, "aligner", at, ""); err != nil {
					b.Fatal(err)
				}
				if _, err := s.CreateJob(ctx, aligning(3000+i), store.CreateOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "claims/s")
		})
	}
}
