package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/store"
)

// The alignment stage (store.Aligning): jobs created with searches wait for an aligner's
// claim instead of a worker's lease, and search claims make each search happen once.

const claimFor = time.Minute

// newAligningJob returns newJob with two searches to do: a homodimer and a monomer.
func newAligningJob(owner job.Owner) *job.Job {
	j := newJob(owner)
	j.Searches = []job.Search{
		{Chains: []string{"MKTAYIAKQRQISFVKSHFSRQ", "MKTAYIAKQRQISFVKSHFSRQ"}},
		{Chains: []string{"GSHMSLFDFFKNKGSA"}},
	}
	return j
}

// claim claims the next job for holder at now, until now+claimFor, and checks that it is
// want, held by holder: stage msa, its searches with it.
func claim(t *testing.T, s store.Store, holder string, now time.Time, want *job.Job) *job.Job {
	t.Helper()
	got, err := s.ClaimAlignment(t.Context(), holder, now, now.Add(claimFor))
	if err != nil {
		t.Fatalf("ClaimAlignment(%s): %v", holder, err)
	}
	if got == nil || got.ID != want.ID {
		t.Fatalf("ClaimAlignment(%s) = %v, want job %s", holder, got, want.ID)
	}
	w := *get(t, s, want.ID)
	if w.Stage != job.StageMSA || !w.Aligning || w.Status != job.Queued {
		t.Errorf("a claimed job is %s at stage %q, aligning %v; want queued at stage msa, aligning", w.Status, w.Stage, w.Aligning)
	}
	checkJob(t, "ClaimAlignment", got, &w)
	if jsonOf(got.Searches) != jsonOf(want.Searches) {
		t.Errorf("ClaimAlignment returned searches %s, want %s", jsonOf(got.Searches), jsonOf(want.Searches))
	}
	return got
}

// noClaim checks that holder finds nothing to claim at now.
func noClaim(t *testing.T, s store.Store, holder string, now time.Time, why string) {
	t.Helper()
	got, err := s.ClaimAlignment(t.Context(), holder, now, now.Add(claimFor))
	if err != nil || got != nil {
		t.Errorf("ClaimAlignment(%s) %s = %v, %v; want nothing", holder, why, got, err)
	}
}

// aligned claims j for a throwaway aligner at now and finishes its searches: j is
// leasable.
func aligned(t *testing.T, s store.Store, j *job.Job, now time.Time) {
	t.Helper()
	claim(t, s, "aligner-done", now, j)
	if err := s.FinishAlignment(t.Context(), j.ID, "aligner-done", now, ""); err != nil {
		t.Fatalf("FinishAlignment(%s): %v", j.ID, err)
	}
}

func testAligningCreate(t *testing.T, open func(*testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	j := newAligningJob(alice)
	want := *j
	want.Aligning = true
	res := createWith(t, s, j, store.CreateOptions{IdempotencyKey: "k", RequestHash: "h"})
	checkJob(t, "CreateJob with searches", res.Job, &want)
	checkJob(t, "GetJob of a job with searches", get(t, s, j.ID), &want)
	sum, err := s.GetJobSummary(ctx, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	checkSummary(t, "GetJobSummary of a job with searches", sum, &want)

	again, err := s.CreateJob(ctx, newJob(alice), store.CreateOptions{IdempotencyKey: "k", RequestHash: "h"})
	if err != nil || again.Created {
		t.Fatalf("replay = %+v, %v; want the original", again, err)
	}
	checkJob(t, "replay of a create with searches", again.Job, &want)
	found, _, err := s.FindIdempotent(ctx, alice, "k")
	if err != nil {
		t.Fatal(err)
	}
	checkJob(t, "FindIdempotent of a job with searches", found, &want)

	plain := create(t, s, newJob(alice))
	if plain.Aligning || plain.Searches != nil {
		t.Errorf("a job without searches: Aligning %v, Searches %v; want false, none", plain.Aligning, plain.Searches)
	}
	page, err := s.ListJobs(ctx, alice, "", 10)
	if err != nil || len(page.Jobs) != 2 {
		t.Fatalf("ListJobs = %+v, %v; want both jobs", page, err)
	}
	for _, sum := range page.Jobs {
		checkSummary(t, "listed job", sum, get(t, s, sum.ID))
	}
	if !page.Jobs[1].Aligning || page.Jobs[0].Aligning {
		t.Errorf("listed Aligning = %v (plain), %v (with searches); want false, true", page.Jobs[0].Aligning, page.Jobs[1].Aligning)
	}
}

// testAligningLease: a worker never leases a job whose searches are still to be done, older
// though it is; once they are done, it does.
func testAligningLease(t *testing.T, open func(*testing.T) store.Store) {
	s := open(t)
	waiting := create(t, s, newAligningJob(alice))
	ready := create(t, s, newJobOf(bob, waiting.RunModel))
	leaseNext := func() *job.Job {
		t.Helper()
		got, err := s.LeaseJob(t.Context(), store.LeaseRequest{WorkerID: "w", Models: []string{waiting.RunModel},
			Loaded: []string{waiting.RunModel}, Now: t0, LeaseUntil: t0.Add(leaseFor)})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := leaseNext(); got == nil || got.ID != ready.ID {
		t.Fatalf("LeaseJob = %v, want the younger job without searches %s", got, ready.ID)
	}
	if got := leaseNext(); got != nil {
		t.Fatalf("LeaseJob = job %s while the other job runs, want nothing: its searches are not done", got.ID)
	}
	claim(t, s, "aligner", t0, waiting)
	if got := leaseNext(); got != nil {
		t.Fatalf("LeaseJob = job %s while its searches are claimed, want nothing", got.ID)
	}
	if err := s.FinishAlignment(t.Context(), waiting.ID, "aligner", t0, ""); err != nil {
		t.Fatal(err)
	}
	l := lease(t, s, waiting, "w", t0.Add(time.Second))
	if l.Aligning || l.Stage != job.StageStarting || l.Attempt != 1 || jsonOf(l.Searches) != jsonOf(waiting.Searches) {
		t.Errorf("leased after its searches: aligning %v, stage %q, attempt %d, searches %s; want false, starting, 1, %s",
			l.Aligning, l.Stage, l.Attempt, jsonOf(l.Searches), jsonOf(waiting.Searches))
	}
}

func testClaimAlignment(t *testing.T, open func(*testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	noClaim(t, s, "a1", t0, "on an empty queue")
	create(t, s, newJob(alice)) // no searches: never claimed
	noClaim(t, s, "a1", t0, "with only a job without searches")
	first := create(t, s, newAligningJob(alice))
	second := create(t, s, newAligningJob(bob))

	ch := s.Watch(ctx, first.ID)
	claim(t, s, "a1", t0, first) // the oldest first, until t0+1m
	fired(t, ch, "claim: the stage changed")
	claim(t, s, "a2", t0, second)
	noClaim(t, s, "a3", t0.Add(claimFor), "when both claims run out at that very moment")

	// a1's claim runs out unrenewed; a2 renews.
	if err := s.RenewAlignment(ctx, second.ID, "a2", t0.Add(2*claimFor)); err != nil {
		t.Fatal(err)
	}
	later := t0.Add(claimFor + time.Second)
	taken := claim(t, s, "a3", later, first)
	if taken.Attempt != 0 {
		t.Errorf("a claim taken over counts attempt %d, want none", taken.Attempt)
	}
	noClaim(t, s, "a4", later, "while the one claim left is renewed")
	wantErr(t, "RenewAlignment by the holder whose claim was taken over",
		s.RenewAlignment(ctx, first.ID, "a1", later.Add(claimFor)), job.ErrLeaseLost)
	wantErr(t, "FinishAlignment by the holder whose claim was taken over",
		s.FinishAlignment(ctx, first.ID, "a1", later, ""), job.ErrLeaseLost)
	if err := s.RenewAlignment(ctx, first.ID, "a3", later.Add(claimFor)); err != nil {
		t.Errorf("RenewAlignment by the new holder: %v", err)
	}

	wantErr(t, "RenewAlignment by another holder",
		s.RenewAlignment(ctx, second.ID, "a3", later.Add(claimFor)), job.ErrLeaseLost)
	wantErr(t, "RenewAlignment of an unknown job",
		s.RenewAlignment(ctx, job.NewID(), "a2", later.Add(claimFor)), job.ErrLeaseLost)
	wantErr(t, "FinishAlignment of an unknown job",
		s.FinishAlignment(ctx, job.NewID(), "a2", later, ""), job.ErrLeaseLost)
	unclaimed := create(t, s, newAligningJob(carol))
	wantErr(t, "RenewAlignment of a job no one claimed",
		s.RenewAlignment(ctx, unclaimed.ID, "a2", later.Add(claimFor)), job.ErrLeaseLost)
	if _, err := s.ClaimAlignment(ctx, "", later, later.Add(claimFor)); err == nil {
		t.Error("ClaimAlignment without a holder succeeded: its claim would look free")
	}
}

// testFinishAlignment: each case has a store of its own, since claims take any job.
func testFinishAlignment(t *testing.T, open func(*testing.T) store.Store) {
	ctx := t.Context()
	end := t0.Add(20 * time.Second)

	t.Run("done: leasable", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		j := create(t, s, newAligningJob(alice))
		claimed := claim(t, s, "a", t0, j)
		queue, ch := s.Watch(ctx, ""), s.Watch(ctx, j.ID)
		if err := s.FinishAlignment(ctx, j.ID, "a", end, ""); err != nil {
			t.Fatal(err)
		}
		fired(t, queue, "finished searches, on the queue watch")
		fired(t, ch, "finished searches: the stage changed")
		want := *claimed
		want.Aligning, want.Stage = false, ""
		checkJob(t, "after its searches", get(t, s, j.ID), &want)
		wantErr(t, "FinishAlignment again", s.FinishAlignment(ctx, j.ID, "a", end, ""), job.ErrLeaseLost)
		wantErr(t, "RenewAlignment after the searches", s.RenewAlignment(ctx, j.ID, "a", end.Add(claimFor)), job.ErrLeaseLost)
		noClaim(t, s, "b", end.Add(time.Hour), "for a job whose searches are done")
		lease(t, s, j, "w", end)
	})
	t.Run("failed: shows where", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		j := create(t, s, newAligningJob(alice))
		create(t, s, newJob(bob))
		claimed := claim(t, s, "a", t0, j)
		ch := s.Watch(ctx, j.ID)
		const failure = "alignment server: RATELIMIT after 5 tries"
		wantErr(t, "FinishAlignment by another holder", s.FinishAlignment(ctx, j.ID, "b", end, failure), job.ErrLeaseLost)
		if err := s.FinishAlignment(ctx, j.ID, "a", end, failure); err != nil {
			t.Fatal(err)
		}
		fired(t, ch, "failed searches")
		got := get(t, s, j.ID)
		want := *claimed
		// Aligning stays, as on a job canceled while aligning: its searches were never done.
		want.Status, want.Error, want.FinishedAt = job.Failed, failure, end
		checkJob(t, "after failed searches", got, &want)
		if n, err := s.QueueDepth(ctx); err != nil || n != 1 {
			t.Errorf("QueueDepth = %d, %v; want 1, the job without searches", n, err)
		}
		wantErr(t, "FinishAlignment of a failed job", s.FinishAlignment(ctx, j.ID, "a", end, ""), job.ErrLeaseLost)
		noClaim(t, s, "b", end.Add(time.Hour), "for a failed job")
		sum, err := s.GetJobSummary(ctx, j.ID)
		if err != nil {
			t.Fatal(err)
		}
		checkSummary(t, "summary of failed searches", sum, got)
	})
	t.Run("canceled or deleted while claimed", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		canceled := create(t, s, newAligningJob(alice))
		deleted := create(t, s, newAligningJob(alice))
		claim(t, s, "a", t0, canceled)
		claim(t, s, "a", t0, deleted)
		if _, err := s.CancelJob(ctx, canceled.ID, alice, end); err != nil {
			t.Fatal(err)
		}
		if _, err := s.DeleteJob(ctx, deleted.ID, alice); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{canceled.ID, deleted.ID} {
			wantErr(t, "RenewAlignment", s.RenewAlignment(ctx, id, "a", end.Add(claimFor)), job.ErrLeaseLost)
			wantErr(t, "FinishAlignment", s.FinishAlignment(ctx, id, "a", end, ""), job.ErrLeaseLost)
			wantErr(t, "FinishAlignment with a failure", s.FinishAlignment(ctx, id, "a", end, "x"), job.ErrLeaseLost)
		}
		if got := get(t, s, canceled.ID); got.Status != job.Canceled || got.Error != "" {
			t.Errorf("canceled while claimed: %s (%q) after its aligner finished, want canceled", got.Status, got.Error)
		}
	})
}

// testReturnForAlignment: a worker that finds the alignments gone puts the job back to be
// searched again, as a hand-back: however often that happens, it costs no attempt.
func testReturnForAlignment(t *testing.T, open func(*testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	const maxAttempts, returns = 2, 3
	j := create(t, s, newAligningJob(alice))
	other := lease(t, s, create(t, s, newJob(bob)), "w", t0)

	wantErr(t, "ReturnForAlignment of a queued job", s.ReturnForAlignment(ctx, j.ID, 0), job.ErrLeaseLost)
	for i := 1; i <= returns; i++ {
		aligned(t, s, j, t0)
		l := lease(t, s, j, "w", t0)
		p := job.Progress{Stage: job.StageInference, Done: 1, Total: 2}
		if err := s.Heartbeat(ctx, store.Heartbeat{ID: j.ID, Attempt: i, Progress: &p, Activity: true,
			Now: t0, LeaseUntil: t0.Add(leaseFor)}); err != nil {
			t.Fatal(err)
		}
		wantErr(t, "ReturnForAlignment of another attempt", s.ReturnForAlignment(ctx, j.ID, i+1), job.ErrLeaseLost)
		queue, ch := s.Watch(ctx, ""), s.Watch(ctx, j.ID)
		if err := s.ReturnForAlignment(ctx, j.ID, i); err != nil {
			t.Fatalf("ReturnForAlignment %d: %v", i, err)
		}
		fired(t, queue, "returned for alignment, on the queue watch")
		fired(t, ch, "returned for alignment")
		want := requeued(l)
		want.Aligning = true
		checkJob(t, fmt.Sprintf("after return %d", i), get(t, s, j.ID), want)
		wantErr(t, "ReturnForAlignment again", s.ReturnForAlignment(ctx, j.ID, i), job.ErrLeaseLost)
		wantErr(t, "Heartbeat of the returned attempt", s.Heartbeat(ctx, store.Heartbeat{ID: j.ID, Attempt: i,
			Now: t0, LeaseUntil: t0.Add(leaseFor)}), job.ErrLeaseLost)
	}
	checkJob(t, "another worker's job", get(t, s, other.ID), other)

	// The returns used no attempt: two more are lost before the job fails, as after
	// hand-backs.
	aligned(t, s, j, t0)
	for _, step := range []struct {
		attempt int
		failed  bool
	}{{returns + 1, false}, {returns + 2, true}} {
		l := lease(t, s, j, "w-lost", t0)
		if l.Attempt != step.attempt {
			t.Fatalf("lease after %d returns: attempt %d, want %d", returns, l.Attempt, step.attempt)
		}
		got, err := s.RecoverExpired(ctx, t0.Add(2*leaseFor), maxAttempts)
		if err != nil {
			t.Fatal(err)
		}
		want := []store.Recovered{{ID: j.ID, Attempt: step.attempt, Failed: step.failed}}
		if i := slices.IndexFunc(got, func(r store.Recovered) bool { return r.ID == j.ID }); i < 0 || got[i] != want[0] {
			t.Fatalf("RecoverExpired after %d returns, attempt %d = %v, want %v among them", returns, step.attempt, got, want)
		}
	}
	if got := get(t, s, j.ID); got.Status != job.Failed || got.Error != store.WorkerLostError(returns+2) {
		t.Errorf("after %d returns and two lost attempts the job is %s (%q), want failed", returns, got.Status, got.Error)
	}
}

// testAligningSummariesFollow: a summary read before each step of the alignment stage shows
// the step after it, as testSummariesFollowChanges checks for the rest.
func testAligningSummariesFollow(t *testing.T, open func(*testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	j := newAligningJob(alice)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		name string
		do   func()
	}{
		{"create", func() { create(t, s, j) }},
		{"claim", func() { claim(t, s, "a", t0, j) }},
		{"renew", func() { must(s.RenewAlignment(ctx, j.ID, "a", t0.Add(2*claimFor))) }},
		{"finish", func() { must(s.FinishAlignment(ctx, j.ID, "a", t0, "")) }},
		{"lease", func() { lease(t, s, j, "w", t0) }},
		{"return", func() { must(s.ReturnForAlignment(ctx, j.ID, 1)) }},
		{"claim again", func() { claim(t, s, "b", t0, j) }},
		{"fail", func() { must(s.FinishAlignment(ctx, j.ID, "b", t0, "no alignment server")) }},
	}
	for _, st := range steps {
		if st.name != "create" {
			if _, err := s.GetJobSummary(ctx, j.ID); err != nil {
				t.Fatalf("before %s: %v", st.name, err)
			}
		}
		st.do()
		sum, err := s.GetJobSummary(ctx, j.ID)
		if err != nil {
			t.Fatalf("after %s: %v", st.name, err)
		}
		checkSummary(t, "summary after "+st.name, sum, get(t, s, j.ID))
	}
}

func testClaimSearch(t *testing.T, open func(*testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	claimAt := func(key, holder string, now time.Time, want bool) {
		t.Helper()
		got, err := s.ClaimSearch(ctx, key, holder, now, now.Add(claimFor))
		if err != nil || got != want {
			t.Errorf("ClaimSearch(%s, %s) at %v = %v, %v; want %v", key, holder, now.Sub(t0), got, err, want)
		}
	}
	release := func(key, holder string) {
		t.Helper()
		if err := s.ReleaseSearch(ctx, key, holder); err != nil {
			t.Errorf("ReleaseSearch(%s, %s): %v", key, holder, err)
		}
	}
	sec := time.Second
	claimAt("k1", "a", t0, true)                    // held until t0+60s
	claimAt("k1", "b", t0, false)                   // held by a
	claimAt("k2", "b", t0, true)                    // keys are apart
	claimAt("k1", "a", t0.Add(30*sec), true)        // renewed until t0+90s
	claimAt("k1", "b", t0.Add(claimFor+sec), false) // the renewal holds
	claimAt("k1", "b", t0.Add(90*sec), false)       // not run out at its very end
	claimAt("k1", "b", t0.Add(91*sec), true)        // run out: taken over
	claimAt("k1", "a", t0.Add(91*sec), false)       // a lost it
	release("k1", "a")                              // not a's: nothing happens
	claimAt("k1", "c", t0.Add(92*sec), false)
	release("k1", "b")
	claimAt("k1", "c", t0.Add(92*sec), true) // released: free at once
	release("never-claimed", "a")
	if _, err := s.ClaimSearch(ctx, "k3", "", t0, t0.Add(claimFor)); err == nil {
		t.Error("ClaimSearch without a holder succeeded")
	}
}

// testClaimSearchConcurrent: of aligners claiming one key at one moment, exactly one holds
// it, for each key.
func testClaimSearchConcurrent(t *testing.T, open func(*testing.T) store.Store) {
	s := open(t)
	const keys = 4
	won := make([]bool, writers)
	errs := make([]error, writers)
	race(writers, func(i int) {
		won[i], errs[i] = s.ClaimSearch(t.Context(), fmt.Sprint("search-", i%keys), fmt.Sprint("aligner-", i), t0, t0.Add(claimFor))
	})
	holders := make([]int, keys)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("ClaimSearch %d: %v", i, err)
		}
		if won[i] {
			holders[i%keys]++
		}
	}
	for k, n := range holders {
		if n != 1 {
			t.Errorf("search-%d claimed by %d of %d aligners at once, want exactly 1", k, n, writers/keys)
		}
	}
}

// testClaimAlignmentConcurrent: aligners claiming at once hold each job once, and all of
// them are claimed.
func testClaimAlignmentConcurrent(t *testing.T, open func(*testing.T) store.Store) {
	s := open(t)
	const jobs = 10
	want := map[string]bool{}
	for i := range jobs {
		want[create(t, s, newAligningJob([]job.Owner{alice, bob, carol}[i%3])).ID] = true
	}
	claimed := make([][]string, writers)
	errs := make([]error, writers)
	race(writers, func(i int) {
		for {
			j, err := s.ClaimAlignment(t.Context(), fmt.Sprint("aligner-", i), t0, t0.Add(claimFor))
			if err != nil || j == nil {
				errs[i] = err
				return
			}
			claimed[i] = append(claimed[i], j.ID)
		}
	})
	holders := map[string]int{}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("aligner %d: %v", i, err)
		}
		for _, id := range claimed[i] {
			holders[id]++
			if err := s.RenewAlignment(t.Context(), id, fmt.Sprint("aligner-", i), t0.Add(claimFor)); err != nil {
				t.Errorf("aligner %d cannot renew its claim on %s: %v", i, id, err)
			}
		}
	}
	for id := range want {
		if holders[id] != 1 {
			t.Errorf("job %s claimed %d times, want once", id, holders[id])
		}
	}
	if len(holders) != jobs {
		t.Errorf("%d jobs claimed, want %d", len(holders), jobs)
	}
}

// testReleaseAligner: an aligner that starts again under its name frees the jobs and the
// searches it held, at once, and touches no other aligner's, even one whose name its own
// name would match as a pattern.
func testReleaseAligner(t *testing.T, open func(*testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	mine, other := create(t, s, newAligningJob(alice)), create(t, s, newAligningJob(bob))
	claim(t, s, "replica_1", t0, mine)
	claim(t, s, "replicaX1", t0, other)
	for key, holder := range map[string]string{"k-mine": "replica_1/s1", "k-own-name": "replica_1", "k-other": "replicaX1/s2"} {
		if ok, err := s.ClaimSearch(ctx, key, holder, t0, t0.Add(claimFor)); err != nil || !ok {
			t.Fatalf("ClaimSearch(%s, %s) = %v, %v", key, holder, ok, err)
		}
	}
	queued := s.Watch(ctx, "")
	freed, err := s.ReleaseAligner(ctx, "replica_1")
	if err != nil || len(freed) != 1 || freed[0] != mine.ID {
		t.Fatalf("ReleaseAligner = %v, %v; want job %s", freed, err, mine.ID)
	}
	fired(t, queued, "ReleaseAligner: a job is free to claim")
	if j := get(t, s, mine.ID); j.Stage != "" || !j.Aligning || j.Status != job.Queued {
		t.Errorf("a released job is %s at stage %q, aligning %v; want queued, stage \"\", aligning", j.Status, j.Stage, j.Aligning)
	}
	claim(t, s, "replica_1", t0.Add(time.Second), mine) // before its old claim would have run out
	wantErr(t, "RenewAlignment of another aligner's job after a release",
		s.RenewAlignment(ctx, other.ID, "replicaX1", t0.Add(claimFor)), nil)
	for key, want := range map[string]bool{"k-mine": true, "k-own-name": true, "k-other": false} {
		ok, err := s.ClaimSearch(ctx, key, "newcomer", t0.Add(time.Second), t0.Add(claimFor))
		if err != nil || ok != want {
			t.Errorf("ClaimSearch(%s) after the release = %v, %v; want %v", key, ok, err, want)
		}
	}
	if freed, err := s.ReleaseAligner(ctx, "nobody"); err != nil || len(freed) != 0 {
		t.Errorf("ReleaseAligner of an aligner holding nothing = %v, %v", freed, err)
	}
}
