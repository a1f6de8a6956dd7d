package storetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/store"
)

func testCreateGet(t *testing.T, open func(*testing.T) store.Store) {
	s := open(t)
	tokyo := time.FixedZone("JST", 9*3600)
	tests := []struct {
		name string
		job  *job.Job
	}{
		{"prediction", &job.Job{
			Kind: job.PredictKind, Name: "kinase screen", Model: "boltz2", RunModel: "boltz2", Total: 2,
			Params: map[string]any{"recycling_steps": 3, "use_msa_server": true, "output_format": "cif",
				"seed": 2147483647, "ratio": 0.125, "nested": map[string]any{"list": []any{1.5, "x", nil}}},
			Input: job.Input{Targets: []job.Target{
				{Name: "t1", Content: ">A|protein\nMKTAYIAKQR\n"},
				{Content: "version: 1\nsequences:\n  - protein: {id: A, sequence: MKV}\n"},
			}},
		}},
		{"design", &job.Job{
			Kind: job.DesignKind, Protocol: "rfd3-binder", RunModel: "rfd3", Total: 4,
			Params: map[string]any{"num_designs": 4},
			Input: job.Input{Structure: "data_x\n_atom_site.id 1\n", Contig: "A1-80/0 60-80",
				Spec: "entities: []"},
		}},
		{"embedding", &job.Job{
			Kind: job.EmbedKind, Model: "esmc-600m", RunModel: "esmc-600m", Total: 2,
			Params: map[string]any{},
			Input: job.Input{Sequences: []job.NamedSequence{
				{ID: "s1", Sequence: "MKV"}, {ID: "ünïcødé", Sequence: "ACDEFGHIKLMNPQRSTVWY"},
			}},
		}},
		{"no params", &job.Job{Kind: job.PredictKind, Model: "esmfold2", RunModel: "esmfold2",
			Input: job.Input{Sequence: "MKV", Input: ">x\nMKV"}}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			j := tt.job
			j.ID, j.Owner, j.Status = job.NewID(), carol, job.Queued
			// Not in UTC and finer than a millisecond: the store keeps at least the
			// millisecond and answers in UTC.
			j.CreatedAt = time.Date(2026, 3, 4, 14, 6, 7, 123_456_789, tokyo).Add(time.Duration(i) * time.Second)
			want := *j

			res := createWith(t, s, j, store.CreateOptions{})
			if len(res.Evicted) != 0 {
				t.Errorf("Evicted = %v without a retention limit", res.Evicted)
			}
			checkJob(t, "CreateJob", res.Job, &want)
			checkJob(t, "GetJob", get(t, s, j.ID), &want)
		})
	}

	t.Run("unknown id", func(t *testing.T) {
		t.Parallel()
		gone(t, s, job.NewID())
	})
}

func testCreateNeedsIdentity(t *testing.T, open func(*testing.T) store.Store) {
	s := open(t)
	for _, tt := range []struct {
		name  string
		strip func(*job.Job)
	}{
		{"ID", func(j *job.Job) { j.ID = "" }},
		{"CreatedAt", func(j *job.Job) { j.CreatedAt = time.Time{} }},
		{"Owner", func(j *job.Job) { j.Owner = job.Owner{} }},
	} {
		j := newJob(alice)
		tt.strip(j)
		if _, err := s.CreateJob(t.Context(), j, store.CreateOptions{}); err == nil {
			t.Errorf("CreateJob without %s succeeded", tt.name)
		}
	}
}

// testLifecycleRoundTrip follows one job through lease, heartbeats and completion and
// checks every field the store keeps along the way, progress nil versus 0 included.
func testLifecycleRoundTrip(t *testing.T, open func(*testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	j := newJob(alice)
	want := *create(t, s, j)
	if want.Progress != nil || want.Stage != "" || want.Attempt != 0 || want.WorkerID != "" {
		t.Errorf("a new job = %s, want no progress, stage, attempt or worker", jsonOf(want))
	}

	leasedAt := t0.Add(90*time.Second + 456_789*time.Nanosecond)
	l, err := s.LeaseJob(ctx, store.LeaseRequest{WorkerID: "gpu-0", Models: []string{j.RunModel},
		Now: leasedAt, LeaseUntil: leasedAt.Add(leaseFor)})
	if err != nil {
		t.Fatal(err)
	}
	want.Status, want.Attempt, want.WorkerID, want.Stage = job.Running, 1, "gpu-0", job.StageStarting
	want.StartedAt, want.LastActivityAt, want.LeaseExpiresAt = leasedAt, leasedAt, leasedAt.Add(leaseFor)
	checkJob(t, "LeaseJob", l, &want)
	checkJob(t, "GetJob after lease", get(t, s, j.ID), &want)

	steps := []struct {
		name     string
		progress *job.Progress
		activity bool
		apply    func(w *job.Job, now time.Time)
	}{
		{"counted, nothing done yet: progress 0, not nil",
			&job.Progress{Stage: job.StageInference, Done: 0, Total: 4}, true,
			func(w *job.Job, now time.Time) {
				w.Stage, w.Done, w.Total, w.Progress, w.LastActivityAt = job.StageInference, 0, 4, ptr(0.0), now
			}},
		{"engine fraction wins over done/total",
			&job.Progress{Stage: job.StageInference, Done: 1, Total: 4, Fraction: ptr(0.3)}, true,
			func(w *job.Job, now time.Time) {
				w.Done, w.Progress, w.LastActivityAt = 1, ptr(0.3), now
			}},
		{"no progress report changes nothing but the lease", nil, false,
			func(w *job.Job, now time.Time) {}},
		{"indeterminate: progress nil", &job.Progress{Stage: job.StageWriting}, false,
			func(w *job.Job, now time.Time) {
				w.Stage, w.Done, w.Total, w.Progress = job.StageWriting, 0, 0, nil
			}},
	}
	now := leasedAt
	for _, st := range steps {
		now = now.Add(10 * time.Second)
		err := s.Heartbeat(ctx, store.Heartbeat{ID: j.ID, Attempt: 1, Progress: st.progress,
			Activity: st.activity, Now: now, LeaseUntil: now.Add(leaseFor)})
		if err != nil {
			t.Fatalf("Heartbeat (%s): %v", st.name, err)
		}
		st.apply(&want, now)
		want.LeaseExpiresAt = now.Add(leaseFor)
		checkJob(t, "after heartbeat: "+st.name, get(t, s, j.ID), &want)
	}

	done := now.Add(time.Minute + 999*time.Microsecond)
	err = s.CompleteJob(ctx, j.ID, 1, store.Outcome{Status: job.Succeeded, Now: done,
		Progress: job.Progress{Stage: job.StageWriting, Done: 2, Total: 2}, Results: sampleResults()})
	if err != nil {
		t.Fatal(err)
	}
	want.Status, want.FinishedAt, want.Results = job.Succeeded, done, sampleResults()
	want.Done, want.Total, want.Progress = 2, 2, ptr(1.0)
	checkJob(t, "after CompleteJob", get(t, s, j.ID), &want)
}

func testList(t *testing.T, open func(*testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	// 25 jobs of alice, all created in the same millisecond, between jobs of bob.
	var want []string
	for range 25 {
		want = append(want, create(t, s, newJob(alice)).ID)
		create(t, s, newJob(bob))
	}
	slices.Reverse(want) // newest first

	page := func(cursor string, limit int) store.JobPage {
		t.Helper()
		p, err := s.ListJobs(ctx, alice, cursor, limit)
		if err != nil {
			t.Fatalf("ListJobs(%q, %d): %v", cursor, limit, err)
		}
		for _, j := range p.Jobs {
			if j.Owner != alice {
				t.Errorf("ListJobs(alice) returned a job of %v", j.Owner)
			}
		}
		return p
	}
	ids := func(p store.JobPage) []string {
		var out []string
		for _, j := range p.Jobs {
			out = append(out, j.ID)
		}
		return out
	}

	p1 := page("", 10)
	if got := ids(p1); !slices.Equal(got, want[:10]) {
		t.Fatalf("page 1 = %v, want %v", got, want[:10])
	}
	if p1.NextCursor == "" {
		t.Fatal("page 1 has no next cursor")
	}
	checkSummary(t, "listed job", p1.Jobs[0], get(t, s, want[0]))

	// Jobs created after page 1, and the deletion of the job the cursor points at, change
	// nothing on the pages that follow.
	newer := create(t, s, newJob(alice))
	if _, err := s.DeleteJob(ctx, want[9], alice); err != nil {
		t.Fatal(err)
	}
	p2 := page(p1.NextCursor, 10)
	if got := ids(p2); !slices.Equal(got, want[10:20]) {
		t.Errorf("page 2 = %v, want %v", got, want[10:20])
	}
	p3 := page(p2.NextCursor, 10)
	if got := ids(p3); !slices.Equal(got, want[20:]) {
		t.Errorf("page 3 = %v, want %v", got, want[20:])
	}
	if p3.NextCursor != "" {
		t.Errorf("last page has next cursor %q", p3.NextCursor)
	}
	if got := ids(page("", 1)); !slices.Equal(got, []string{newer.ID}) {
		t.Errorf("first page after a create = %v, want the new job %s", got, newer.ID)
	}

	t.Run("a full last page has no next cursor", func(t *testing.T) {
		t.Parallel()
		for range 4 {
			create(t, s, newJob(carol))
		}
		p, err := s.ListJobs(ctx, carol, "", 2)
		if err != nil {
			t.Fatal(err)
		}
		p, err = s.ListJobs(ctx, carol, p.NextCursor, 2)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Jobs) != 2 || p.NextCursor != "" {
			t.Errorf("page 2 of 4 jobs by 2 = %d jobs, next %q; want 2 jobs and no cursor", len(p.Jobs), p.NextCursor)
		}
	})
	t.Run("an owner without jobs", func(t *testing.T) {
		t.Parallel()
		p, err := s.ListJobs(ctx, job.Owner{Kind: job.OwnerIP, ID: "192.0.2.1"}, "", 20)
		if err != nil || len(p.Jobs) != 0 || p.NextCursor != "" {
			t.Errorf("ListJobs = %+v, %v; want an empty page", p, err)
		}
	})
	for _, bad := range []string{"%%%", "not a cursor!", "bm90LWEtbnVtYmVy" /* base64("not-a-number") */} {
		t.Run("invalid cursor "+bad, func(t *testing.T) {
			t.Parallel()
			_, err := s.ListJobs(ctx, alice, bad, 10)
			var ie *job.InvalidError
			if !errors.As(err, &ie) || ie.Field != "cursor" {
				t.Errorf("ListJobs(cursor %q) error = %v, want an InvalidError on field cursor", bad, err)
			}
		})
	}
}

func testCancel(t *testing.T, open func(*testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	canceledAt := t0.Add(5 * time.Minute)
	tests := []struct {
		name      string
		setup     func(t *testing.T, j *job.Job) // from queued
		by        job.Owner
		wantErr   error  // sentinel
		conflict  string // a ConflictError naming this status
		unchanged bool
	}{
		{name: "queued", setup: func(*testing.T, *job.Job) {}, by: alice},
		{name: "running", setup: func(t *testing.T, j *job.Job) { lease(t, s, j, "w", t0) }, by: alice},
		{name: "canceled", setup: func(t *testing.T, j *job.Job) { finish(t, s, j, job.Canceled, t0) }, by: alice, unchanged: true},
		{name: "succeeded", setup: func(t *testing.T, j *job.Job) { finish(t, s, j, job.Succeeded, t0) }, by: alice, conflict: "succeeded"},
		{name: "failed", setup: func(t *testing.T, j *job.Job) { finish(t, s, j, job.Failed, t0) }, by: alice, conflict: "failed"},
		{name: "another owner's", setup: func(*testing.T, *job.Job) {}, by: bob, wantErr: job.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			j := create(t, s, newJob(alice))
			tt.setup(t, j)
			before := get(t, s, j.ID)
			got, err := s.CancelJob(ctx, j.ID, tt.by, canceledAt)
			switch {
			case tt.wantErr != nil:
				wantErr(t, "CancelJob", err, tt.wantErr)
				checkJob(t, "job after a refused cancel", get(t, s, j.ID), before)
			case tt.conflict != "":
				var ce *job.ConflictError
				if !errors.As(err, &ce) || !strings.Contains(ce.Reason, tt.conflict) {
					t.Errorf("CancelJob error = %v, want a ConflictError naming %q", err, tt.conflict)
				}
				checkJob(t, "job after a refused cancel", get(t, s, j.ID), before)
			case tt.unchanged:
				if err != nil {
					t.Fatal(err)
				}
				checkSummary(t, "CancelJob", got, before)
				checkJob(t, "GetJob", get(t, s, j.ID), before)
			default:
				if err != nil {
					t.Fatal(err)
				}
				want := *before
				want.Status, want.FinishedAt = job.Canceled, canceledAt
				checkSummary(t, "CancelJob", got, &want)
				checkJob(t, "GetJob", get(t, s, j.ID), &want)
				// A worker still holding it loses its lease.
				if before.Status == job.Running {
					hb := store.Heartbeat{ID: j.ID, Attempt: 1, Now: canceledAt, LeaseUntil: canceledAt.Add(leaseFor)}
					wantErr(t, "Heartbeat of a canceled job", s.Heartbeat(ctx, hb), job.ErrLeaseLost)
					out := store.Outcome{Status: job.Succeeded, Now: canceledAt}
					wantErr(t, "CompleteJob of a canceled job", s.CompleteJob(ctx, j.ID, 1, out), job.ErrLeaseLost)
					checkJob(t, "after a late completion", get(t, s, j.ID), &want)
				}
			}
		})
	}
	t.Run("unknown", func(t *testing.T) {
		_, err := s.CancelJob(ctx, job.NewID(), alice, canceledAt)
		wantErr(t, "CancelJob", err, job.ErrNotFound)
	})
}

func testDelete(t *testing.T, open func(*testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()

	t.Run("returns the job as it was", func(t *testing.T) {
		t.Parallel()
		j := finish(t, s, create(t, s, newJob(alice)), job.Succeeded, t0)
		got, err := s.DeleteJob(ctx, j.ID, alice)
		if err != nil {
			t.Fatal(err)
		}
		checkSummary(t, "DeleteJob", got, j)
		gone(t, s, j.ID)
		_, err = s.DeleteJob(ctx, j.ID, alice)
		wantErr(t, "second DeleteJob", err, job.ErrNotFound)
	})
	t.Run("another owner's", func(t *testing.T) {
		t.Parallel()
		j := create(t, s, newJob(alice))
		_, err := s.DeleteJob(ctx, j.ID, bob)
		wantErr(t, "DeleteJob", err, job.ErrNotFound)
		get(t, s, j.ID)
	})
	t.Run("unknown", func(t *testing.T) {
		t.Parallel()
		_, err := s.DeleteJob(ctx, job.NewID(), alice)
		wantErr(t, "DeleteJob", err, job.ErrNotFound)
	})
	t.Run("its idempotency key can be used again", func(t *testing.T) {
		t.Parallel()
		opts := store.CreateOptions{IdempotencyKey: "k-delete", RequestHash: "h1"}
		j := createWith(t, s, newJob(bob), opts).Job
		if _, err := s.DeleteJob(ctx, j.ID, bob); err != nil {
			t.Fatal(err)
		}
		opts.RequestHash = "h2" // even with another body: the old entry is gone
		createWith(t, s, newJob(bob), opts)
	})
	t.Run("a running job's worker loses its lease", func(t *testing.T) {
		t.Parallel()
		j := lease(t, s, create(t, s, newJob(carol)), "w", t0)
		if _, err := s.DeleteJob(ctx, j.ID, carol); err != nil {
			t.Fatal(err)
		}
		hb := store.Heartbeat{ID: j.ID, Attempt: 1, Now: t0, LeaseUntil: t0.Add(leaseFor)}
		wantErr(t, "Heartbeat", s.Heartbeat(ctx, hb), job.ErrLeaseLost)
		out := store.Outcome{Status: job.Succeeded, Now: t0}
		wantErr(t, "CompleteJob", s.CompleteJob(ctx, j.ID, 1, out), job.ErrLeaseLost)
		gone(t, s, j.ID)
	})
}

func testCountJobs(t *testing.T, open func(*testing.T) store.Store) {
	s := open(t)
	create(t, s, newJobOf(alice, "boltz2"))
	create(t, s, newJobOf(bob, "boltz2"))
	lease(t, s, create(t, s, newJobOf(alice, "esmfold2")), "w", t0)
	e := newJobOf(alice, "esmc-600m")
	e.Kind = job.EmbedKind
	finish(t, s, create(t, s, e), job.Succeeded, t0)

	got, err := s.CountJobs(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := []store.JobCount{
		{Kind: job.EmbedKind, RunModel: "esmc-600m", Status: job.Succeeded, N: 1},
		{Kind: job.PredictKind, RunModel: "boltz2", Status: job.Queued, N: 2},
		{Kind: job.PredictKind, RunModel: "esmfold2", Status: job.Running, N: 1},
	}
	key := func(c store.JobCount) string { return fmt.Sprint(c.Kind, c.RunModel, c.Status) }
	slices.SortFunc(got, func(a, b store.JobCount) int { return strings.Compare(key(a), key(b)) })
	slices.SortFunc(want, func(a, b store.JobCount) int { return strings.Compare(key(a), key(b)) })
	if !slices.Equal(got, want) {
		t.Errorf("CountJobs = %+v, want %+v", got, want)
	}
}
