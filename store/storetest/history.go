package storetest

import (
	"errors"
	"testing"

	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/store"
)

func testOwnersAhead(t *testing.T, open func(*testing.T) store.Store) {
	s := open(t)
	ahead := func(j *job.Job, want int) {
		t.Helper()
		if got, err := s.OwnersAhead(t.Context(), j.ID); err != nil || got != want {
			t.Errorf("OwnersAhead(%s of %s) = %d, %v; want %d", j.ID, j.Owner.ID, got, err, want)
		}
	}
	const model = "shared"
	a1 := create(t, s, newJobOf(alice, model))
	a2 := create(t, s, newJobOf(alice, model))
	b1 := create(t, s, newJobOf(bob, model))
	other := create(t, s, newJobOf(carol, "another-model"))
	// Nobody runs anything: the oldest job of each other owner goes first.
	ahead(a1, 0)
	ahead(a2, 0) // alice's own first job is ahead of it, but no other owner is
	ahead(b1, 1)
	ahead(other, 0) // a queue of another model is no competition
	// Alice now runs a job, so bob, who runs none, goes before her next one.
	lease(t, s, a1, "w", t0)
	ahead(a2, 1)
	ahead(b1, 0)
	ahead(a1, 0) // running: not waiting for anyone
	// A job still waiting for its alignments is passed over by the lease: no one is behind it.
	aligning := newAligningJob(carol)
	aligning.RunModel = model
	create(t, s, aligning)
	ahead(a2, 1)
	if _, err := s.OwnersAhead(t.Context(), job.NewID()); !errors.Is(err, job.ErrNotFound) {
		t.Errorf("OwnersAhead of an unknown id: %v, want ErrNotFound", err)
	}
}

func testMeasuredWalls(t *testing.T, open func(*testing.T) store.Store) {
	s := open(t)
	walls := func(want map[string]int) {
		t.Helper()
		got, err := s.MeasuredWalls(t.Context())
		if err != nil || len(got) != len(want) {
			t.Fatalf("MeasuredWalls = %v, %v; want %v", got, err, want)
		}
		for m, n := range want {
			if got[m] != n {
				t.Errorf("MeasuredWalls = %v; want %v", got, want)
			}
		}
	}
	walls(map[string]int{})
	// A failed job measures nothing; a succeeded one its largest successful input: 311
	// residues of its row that succeeded (sampleResults), beating its 22-residue embedding.
	failed := finish(t, s, create(t, s, newJobOf(alice, "m1")), job.Failed, t0)
	walls(map[string]int{})
	small := create(t, s, newJobOf(alice, "m1"))
	l := lease(t, s, small, "w", t0)
	res := &job.Results{Rows: []job.PredictionRow{{ID: "t", Status: job.RowOK, NResidues: 90}}}
	if err := s.CompleteJob(t.Context(), small.ID, l.Attempt, store.Outcome{Status: job.Succeeded, Results: res, Now: t0}); err != nil {
		t.Fatal(err)
	}
	walls(map[string]int{"m1": 90})
	big := finish(t, s, create(t, s, newJobOf(bob, "m1")), job.Succeeded, t0)
	finish(t, s, create(t, s, newJobOf(bob, "m2")), job.Succeeded, t0)
	walls(map[string]int{"m1": 311, "m2": 311})
	// A smaller success never lowers the wall, and the history outlives the jobs.
	again := create(t, s, newJobOf(alice, "m1"))
	l = lease(t, s, again, "w", t0)
	if err := s.CompleteJob(t.Context(), again.ID, l.Attempt, store.Outcome{Status: job.Succeeded, Results: res, Now: t0}); err != nil {
		t.Fatal(err)
	}
	for _, j := range []*job.Job{failed, small, big, again} {
		if _, err := s.DeleteJob(t.Context(), j.ID, j.Owner); err != nil {
			t.Fatal(err)
		}
	}
	walls(map[string]int{"m1": 311, "m2": 311})
}
