// Package storetest is the conformance suite of store.Store: every implementation (SQLite,
// PostgreSQL) runs it from its own tests, so that the rest of chaperone can rely on one
// behaviour whatever database sits underneath.
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store { return openTestStore(t) })
//	}
//
// Tests pass explicit times (the store never reads the wall clock for anything it
// decides), wait on Watch channels with a timeout instead of sleeping, and run in
// parallel, each on a store of its own where it counts service-wide things.
package storetest

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/store"
)

// Run runs the whole suite. open must return a new, empty store and close it when t ends.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, open func(*testing.T) store.Store)
	}{
		{"CreateGet", testCreateGet},
		{"CreateNeedsIdentity", testCreateNeedsIdentity},
		{"Lifecycle", testLifecycleRoundTrip},
		{"Idempotency", testIdempotency},
		{"IdempotencyConcurrent", testIdempotencyConcurrent},
		{"IdempotencyRace", testIdempotencyRace},
		{"CreateQuotasConcurrent", testCreateQuotasConcurrent},
		{"RetentionConcurrent", testRetentionConcurrent},
		{"Summaries", testSummaries},
		{"SummariesFollowChanges", testSummariesFollowChanges},
		{"ActivePerOwner", testActivePerOwner},
		{"ActiveRetryAfter", testActiveRetryAfter},
		{"CreatesPerMinute", testCreatesPerMinute},
		{"QueuedServiceWide", testQueuedServiceWide},
		{"Retention", testRetention},
		{"List", testList},
		{"Cancel", testCancel},
		{"Delete", testDelete},
		{"CountJobs", testCountJobs},
		{"Lease", testLease},
		{"LeaseOrder", testLeaseOrder},
		{"LeaseConcurrent", testLeaseConcurrent},
		{"Heartbeat", testHeartbeat},
		{"Complete", testComplete},
		{"RecoverExpired", testRecoverExpired},
		{"ReleaseWorker", testReleaseWorker},
		{"HandBack", testHandBack},
		{"RecoverConcurrent", testRecoverConcurrent},
		{"QueueDepth", testQueueDepth},
		{"OwnersAhead", testOwnersAhead},
		{"MeasuredWalls", testMeasuredWalls},
		{"Workers", testWorkers},
		{"Keys", testKeys},
		{"Watch", testWatch},
		{"WatchIgnoresLeases", testWatchIgnoresLeases},
		{"AligningCreate", testAligningCreate},
		{"AligningLease", testAligningLease},
		{"ClaimAlignment", testClaimAlignment},
		{"ClaimAlignmentConcurrent", testClaimAlignmentConcurrent},
		{"FinishAlignment", testFinishAlignment},
		{"ReturnForAlignment", testReturnForAlignment},
		{"AligningSummariesFollow", testAligningSummariesFollow},
		{"ClaimSearch", testClaimSearch},
		{"ClaimSearchConcurrent", testClaimSearchConcurrent},
		{"ReleaseAligner", testReleaseAligner},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, open)
		})
	}
}

// t0 is the suite's "now"; tests move from it explicitly.
var t0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

var (
	alice = job.Owner{Kind: job.OwnerKey, ID: "alice"}
	bob   = job.Owner{Kind: job.OwnerSession, ID: "bob"}
	carol = job.Owner{Kind: job.OwnerIP, ID: "2001:db8::7"}
)

// newJob returns a queued prediction of owner created at t0, ready for CreateJob. Its run
// model is its own, so a lease for that model picks exactly this job.
func newJob(owner job.Owner) *job.Job {
	id := job.NewID()
	model := "model-" + id[:8]
	return &job.Job{
		ID:       id,
		Owner:    owner,
		Kind:     job.PredictKind,
		Model:    model,
		RunModel: model,
		Params:   map[string]any{"recycling_steps": 3},
		Input:    job.Input{Sequence: "MKTAYIAKQRQISFVKSHFSRQ"},
		Status:   job.Queued,
		// CreatedAt is the quotas' clock; t0 unless a test says otherwise.
		CreatedAt: t0,
	}
}

func newJobAt(owner job.Owner, at time.Time) *job.Job {
	j := newJob(owner)
	j.CreatedAt = at
	return j
}

func newJobOf(owner job.Owner, model string) *job.Job {
	j := newJob(owner)
	j.Model, j.RunModel = model, model
	return j
}

func create(t *testing.T, s store.Store, j *job.Job) *job.Job {
	t.Helper()
	return createWith(t, s, j, store.CreateOptions{}).Job
}

func createWith(t *testing.T, s store.Store, j *job.Job, opts store.CreateOptions) store.CreateResult {
	t.Helper()
	res, err := s.CreateJob(t.Context(), j, opts)
	if err != nil {
		t.Fatalf("CreateJob(%s): %v", j.ID, err)
	}
	if !res.Created || res.Job == nil || res.Job.ID != j.ID {
		t.Fatalf("CreateJob(%s) = %+v, want the new job created", j.ID, res)
	}
	return res
}

func get(t *testing.T, s store.Store, id string) *job.Job {
	t.Helper()
	j, err := s.GetJob(t.Context(), id)
	if err != nil {
		t.Fatalf("GetJob(%s): %v", id, err)
	}
	return j
}

func gone(t *testing.T, s store.Store, id string) {
	t.Helper()
	if _, err := s.GetJob(t.Context(), id); !errors.Is(err, job.ErrNotFound) {
		t.Errorf("GetJob(%s) error = %v, want ErrNotFound", id, err)
	}
}

const leaseFor = time.Minute

// lease leases j (by its run model) for worker at now and checks that j is what came back.
func lease(t *testing.T, s store.Store, j *job.Job, worker string, now time.Time) *job.Job {
	t.Helper()
	got, err := s.LeaseJob(t.Context(), store.LeaseRequest{
		WorkerID: worker, Models: []string{j.RunModel}, Now: now, LeaseUntil: now.Add(leaseFor),
	})
	if err != nil {
		t.Fatalf("LeaseJob(%s): %v", j.RunModel, err)
	}
	if got == nil || got.ID != j.ID {
		t.Fatalf("LeaseJob(%s) = %v, want job %s", j.RunModel, got, j.ID)
	}
	return got
}

// finish runs j to the terminal status st (succeeded, failed or canceled) at now.
func finish(t *testing.T, s store.Store, j *job.Job, st job.Status, now time.Time) *job.Job {
	t.Helper()
	if st == job.Canceled {
		if _, err := s.CancelJob(t.Context(), j.ID, j.Owner, now); err != nil {
			t.Fatalf("CancelJob(%s): %v", j.ID, err)
		}
		return get(t, s, j.ID)
	}
	l := lease(t, s, j, "w-finish", now)
	out := store.Outcome{Status: st, Now: now}
	if st == job.Succeeded {
		out.Results = sampleResults()
	} else {
		out.Error = "engine exploded"
	}
	if err := s.CompleteJob(t.Context(), j.ID, l.Attempt, out); err != nil {
		t.Fatalf("CompleteJob(%s): %v", j.ID, err)
	}
	return get(t, s, j.ID)
}

func sampleResults() *job.Results {
	rank := 1
	return &job.Results{
		Rows: []job.PredictionRow{
			{ID: "t1", Status: job.RowOK, NChains: 2, NResidues: 311, Samples: 1, MSA: true, RuntimeS: 41.5,
				Scores: &job.Scores{PLDDT: 0.8731, PTM: 0.81}},
			{ID: "t2", Status: job.RowFailed, Error: "out of memory"},
		},
		Designs: []job.Design{
			{ID: "d1", Rank: &rank, Sequence: "MKVLA", File: "designs/d1.cif",
				Metrics: map[string]any{"design_iptm": 0.71, "filters": []any{"rmsd", 1.2}}},
			{ID: "d2", Rank: nil, Sequence: "GSGSG", File: "designs/d2.cif", Metrics: map[string]any{}},
		},
		Embedding: &job.Embedding{Model: "esmc-600m", Pool: "mean", Format: "npz", DModel: 1152,
			Sequences: []job.EmbeddedSequence{{ID: "s1", Length: 22, File: "s1.npz"}}},
		Artifacts: []job.Artifact{
			{Path: "t1.cif", Target: "t1", Type: job.ArtifactStructure},
			{Path: "t1/pae.npz", Target: "t1", Type: job.ArtifactPAE},
		},
	}
}

// checkTime accepts any store precision of at least a millisecond, and wants UTC back.
func checkTime(t *testing.T, what string, got, want time.Time) {
	t.Helper()
	if want.IsZero() {
		if !got.IsZero() {
			t.Errorf("%s = %v, want the zero time", what, got)
		}
		return
	}
	if got.Location() != time.UTC {
		t.Errorf("%s = %v, want it in UTC", what, got)
	}
	if d := got.Sub(want); d <= -time.Millisecond || d >= time.Millisecond {
		t.Errorf("%s = %v, want %v to the millisecond", what, got, want.UTC())
	}
}

// timePair is a time field of a got and a want value.
type timePair struct {
	name string
	g, w *time.Time
}

// checkTimes compares the pairs with checkTime, then zeroes them, so that the rest of the
// values can be compared exactly.
func checkTimes(t *testing.T, what string, pairs []timePair) {
	t.Helper()
	for _, p := range pairs {
		checkTime(t, what+": "+p.name, *p.g, *p.w)
		*p.g, *p.w = time.Time{}, time.Time{}
	}
}

func jsonOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "!" + err.Error()
	}
	return string(b)
}

// checkJob compares every field of got with want: times to the millisecond, JSON
// documents (params, results) as JSON, since numbers come back as float64.
func checkJob(t *testing.T, what string, got, want *job.Job) {
	t.Helper()
	if got == nil {
		t.Fatalf("%s: no job", what)
	}
	g, w := *got, *want
	checkTimes(t, what, []timePair{
		{"CreatedAt", &g.CreatedAt, &w.CreatedAt},
		{"StartedAt", &g.StartedAt, &w.StartedAt},
		{"FinishedAt", &g.FinishedAt, &w.FinishedAt},
		{"LeaseExpiresAt", &g.LeaseExpiresAt, &w.LeaseExpiresAt},
		{"LastActivityAt", &g.LastActivityAt, &w.LastActivityAt},
	})
	if gp, wp := jsonOf(g.Params), jsonOf(w.Params); gp != wp {
		t.Errorf("%s: Params = %s, want %s", what, gp, wp)
	}
	if gr, wr := jsonOf(g.Results), jsonOf(w.Results); gr != wr {
		t.Errorf("%s: Results = %s, want %s", what, gr, wr)
	}
	g.Params, w.Params, g.Results, w.Results = nil, nil, nil, nil
	if gj, wj := jsonOf(g), jsonOf(w); gj != wj {
		t.Errorf("%s:\n got %s\nwant %s", what, gj, wj)
	}
}

// wantErr checks err against a sentinel or, for a typed error, that errors.As finds it.
func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s: error = %v, want %v", what, err, want)
	}
}

func limitErr(t *testing.T, what string, err error) *job.LimitError {
	t.Helper()
	var le *job.LimitError
	if !errors.As(err, &le) {
		t.Fatalf("%s: error = %v, want a *job.LimitError", what, err)
	}
	if le.RetryAfter < time.Second {
		t.Errorf("%s: RetryAfter = %v, want at least 1s", what, le.RetryAfter)
	}
	if le.Reason == "" {
		t.Errorf("%s: LimitError without a reason", what)
	}
	return le
}

func ptr[T any](v T) *T { return &v }

// checkSummary compares a summary with the summary of the whole job, as checkJob does.
func checkSummary(t *testing.T, what string, got *store.JobSummary, whole *job.Job) {
	t.Helper()
	if got == nil {
		t.Fatalf("%s: no summary", what)
	}
	g, w := *got, *store.SummaryOf(whole)
	checkTimes(t, what, []timePair{
		{"CreatedAt", &g.CreatedAt, &w.CreatedAt},
		{"StartedAt", &g.StartedAt, &w.StartedAt},
		{"FinishedAt", &g.FinishedAt, &w.FinishedAt},
	})
	if gj, wj := jsonOf(g), jsonOf(w); gj != wj {
		t.Errorf("%s:\n got %s\nwant %s", what, gj, wj)
	}
}

// CloseAtEnd closes a driver's store when tb ends, failing tb if it does not close.
func CloseAtEnd(tb testing.TB, s store.Store) {
	tb.Helper()
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Error(err)
		}
	})
}

// OneWinner checks the outcome of claims raced on one key: no error, exactly one claim
// won. who says who raced, for the message.
func OneWinner(t *testing.T, who string, won []bool, errs []error) {
	t.Helper()
	holders := 0
	for i, err := range errs {
		if err != nil {
			t.Fatalf("claim %d: %v", i, err)
		}
		if won[i] {
			holders++
		}
	}
	if holders != 1 {
		t.Errorf("%d of %d %s hold the claim, want exactly 1", holders, len(won), who)
	}
}
