package postgres

import (
	"fmt"
	"io/fs"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/store"
	"github.com/chaperone-bio/chaperone/store/postgres/pgtest"
	"github.com/chaperone-bio/chaperone/store/storetest"
)

func newAligningJob(owner job.Owner) *job.Job {
	j := newJob(owner)
	j.Searches = []job.Search{{Chains: []string{"MKV", "MKV"}}}
	return j
}

// raceReplicas runs fn(replica, i) for perReplica goroutines on each replica, released
// together.
func raceReplicas(rs []*Store, perReplica int, fn func(r *Store, i int)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for n, r := range rs {
		for k := range perReplica {
			wg.Go(func() {
				<-start
				fn(r, n*perReplica+k)
			})
		}
	}
	close(start)
	wg.Wait()
}

// TestSearchClaimAcrossReplicas: aligners on several replicas claiming one search at once:
// exactly one holds it.
func TestSearchClaimAcrossReplicas(t *testing.T) {
	t.Parallel()
	rs := replicas(t, 4)
	const perReplica = 6
	now := time.Now()
	won := make([]bool, len(rs)*perReplica)
	errs := make([]error, len(won))
	raceReplicas(rs, perReplica, func(r *Store, i int) {
		won[i], errs[i] = r.ClaimSearch(t.Context(), "uniref/3f2a", fmt.Sprint("aligner-", i), now, now.Add(time.Minute))
	})
	storetest.OneWinner(t, fmt.Sprintf("aligners on %d replicas", len(rs)), won, errs)
}

// TestAlignmentClaimsAcrossReplicas: aligners on several replicas claim every job once.
func TestAlignmentClaimsAcrossReplicas(t *testing.T) {
	t.Parallel()
	rs := replicas(t, 3)
	const jobs, perReplica = 12, 4
	owner := job.Owner{Kind: job.OwnerKey, ID: "screen"}
	for range jobs {
		if _, err := rs[0].CreateJob(t.Context(), newAligningJob(owner), store.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	claimed := make([][]string, len(rs)*perReplica)
	errs := make([]error, len(claimed))
	raceReplicas(rs, perReplica, func(r *Store, i int) {
		for {
			j, err := r.ClaimAlignment(t.Context(), fmt.Sprint("aligner-", i), now, now.Add(time.Minute))
			if err != nil || j == nil {
				errs[i] = err
				return
			}
			claimed[i] = append(claimed[i], j.ID)
		}
	})
	times := map[string]int{}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("aligner %d: %v", i, err)
		}
		for _, id := range claimed[i] {
			times[id]++
		}
	}
	if len(times) != jobs {
		t.Errorf("%d jobs claimed, want %d", len(times), jobs)
	}
	for id, n := range times {
		if n != 1 {
			t.Errorf("job %s claimed %d times, want once", id, n)
		}
	}
}

// TestFinishedAlignmentWakesOtherReplicas: the searches done on one replica wake the queue
// watch of another (NOTIFY), whose next read sees the job leasable.
func TestFinishedAlignmentWakesOtherReplicas(t *testing.T) {
	t.Parallel()
	rs := replicas(t, 2)
	a, b := rs[0], rs[1]
	ctx := t.Context()
	queue := b.Watch(ctx, "")
	res, err := a.CreateJob(ctx, newAligningJob(job.Owner{Kind: job.OwnerKey, ID: "dave"}), store.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fires(t, queue, "a create on another replica, on the queue watch")
	now := time.Now()
	j, err := a.ClaimAlignment(ctx, "aligner", now, now.Add(time.Minute)) // wakes the job's watchers only
	if err != nil || j == nil || j.ID != res.Job.ID {
		t.Fatalf("ClaimAlignment = %v, %v; want job %s", j, err, res.Job.ID)
	}
	if err := a.FinishAlignment(ctx, j.ID, "aligner", now, ""); err != nil {
		t.Fatal(err)
	}
	fires(t, queue, "searches finished on another replica, on the queue watch")
	if sum, err := b.GetJobSummary(ctx, j.ID); err != nil || sum.Aligning || sum.Stage != "" {
		t.Errorf("the other replica reads %+v, %v after the notification; want the job leasable", sum, err)
	}
	l, err := b.LeaseJob(ctx, store.LeaseRequest{WorkerID: "w", Models: []string{j.RunModel}, Now: now, LeaseUntil: now.Add(time.Minute)})
	if err != nil || l == nil || l.ID != j.ID {
		t.Errorf("LeaseJob on the other replica = %v, %v; want job %s", l, err, j.ID)
	}
}

// TestAligningMigrationDownAndUp: the migration of the alignment stage goes down with a
// claimed job in the table, which becomes a plain queued job, and up again.
func TestAligningMigrationDownAndUp(t *testing.T) {
	t.Parallel()
	s := openURL(t, pgtest.Database(t))
	ctx := t.Context()
	res, err := s.CreateJob(ctx, newAligningJob(job.Owner{Kind: job.OwnerKey, ID: "erin"}), store.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if j, err := s.ClaimAlignment(ctx, "aligner", now, now.Add(time.Minute)); err != nil || j == nil {
		t.Fatalf("ClaimAlignment = %v, %v", j, err)
	}
	sub, _ := fs.Sub(migrations, "migrations")
	db := stdlib.OpenDBFromPool(s.pool)
	defer db.Close()
	p, err := goose.NewProvider(goose.DialectPostgres, db, sub, goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Down(ctx); err != nil {
		t.Fatalf("migrating down: %v", err)
	}
	var stage string
	if err := s.pool.QueryRow(ctx, `SELECT stage FROM jobs WHERE id = $1`, res.Job.ID).Scan(&stage); err != nil || stage != "" {
		t.Errorf("after migrating down the claimed job has stage %q (%v), want none: it is a plain queued job", stage, err)
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatalf("migrating up again: %v", err)
	}
	if j, err := s.GetJob(ctx, res.Job.ID); err != nil || j.Aligning || j.Status != job.Queued {
		t.Errorf("after migrating down and up the job reads %+v, %v; want it queued, leasable", j, err)
	}
}
