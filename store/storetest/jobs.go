package storetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
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

func testIdempotency(t *testing.T, open func(*testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	key := func(k, hash string) store.CreateOptions {
		return store.CreateOptions{IdempotencyKey: k, RequestHash: hash}
	}

	t.Run("same key and body return the original", func(t *testing.T) {
		t.Parallel()
		first := createWith(t, s, newJob(alice), key("k-same", "h1")).Job
		again, err := s.CreateJob(ctx, newJob(alice), key("k-same", "h1"))
		if err != nil {
			t.Fatal(err)
		}
		if again.Created {
			t.Error("Created = true on a replay")
		}
		checkJob(t, "replay", again.Job, first)
	})
	t.Run("same key, other body", func(t *testing.T) {
		t.Parallel()
		createWith(t, s, newJob(alice), key("k-reused", "h1"))
		_, err := s.CreateJob(ctx, newJob(alice), key("k-reused", "h2"))
		wantErr(t, "CreateJob", err, job.ErrIdempotencyReused)
	})
	t.Run("keys are scoped per owner", func(t *testing.T) {
		t.Parallel()
		a := createWith(t, s, newJob(alice), key("k-scoped", "h1")).Job
		b := createWith(t, s, newJob(bob), key("k-scoped", "h2")).Job
		if a.ID == b.ID {
			t.Error("two owners share an idempotency entry")
		}
	})
	t.Run("FindIdempotent sees what CreateJob stored", func(t *testing.T) {
		t.Parallel()
		first := createWith(t, s, newJob(alice), key("k-find", "h-find")).Job
		found, hash, err := s.FindIdempotent(ctx, alice, "k-find")
		if err != nil || hash != "h-find" {
			t.Fatalf("FindIdempotent = hash %q, %v; want h-find", hash, err)
		}
		checkJob(t, "FindIdempotent", found, first)
		_, _, err = s.FindIdempotent(ctx, bob, "k-find")
		wantErr(t, "FindIdempotent for another owner", err, job.ErrNotFound)
		_, _, err = s.FindIdempotent(ctx, alice, "k-never-used")
		wantErr(t, "FindIdempotent of an unused key", err, job.ErrNotFound)
	})
	t.Run("no key, no idempotency", func(t *testing.T) {
		t.Parallel()
		create(t, s, newJob(carol))
		create(t, s, newJob(carol))
	})
	t.Run("a replay is not held to quotas", func(t *testing.T) {
		t.Parallel()
		owner := job.Owner{Kind: job.OwnerKey, ID: "replayer"}
		opts := key("k-quota", "h1")
		opts.Limits = store.Limits{ActivePerOwner: 1, CreatesPerMinute: 1}
		first := createWith(t, s, newJob(owner), opts).Job
		again, err := s.CreateJob(ctx, newJob(owner), opts)
		if err != nil {
			t.Fatalf("replay at the quota: %v", err)
		}
		if again.Created || again.Job.ID != first.ID {
			t.Errorf("replay = %+v, want the original %s", again, first.ID)
		}
	})
	t.Run("the key outlives a terminal job", func(t *testing.T) {
		t.Parallel()
		first := createWith(t, s, newJob(alice), key("k-finished", "h1")).Job
		finish(t, s, first, job.Succeeded, t0.Add(time.Minute))
		again, err := s.CreateJob(ctx, newJob(alice), key("k-finished", "h1"))
		if err != nil || again.Created || again.Job.ID != first.ID || again.Job.Status != job.Succeeded {
			t.Errorf("replay after success = %+v, %v; want the succeeded original", again, err)
		}
	})
}

func testIdempotencyConcurrent(t *testing.T, open func(*testing.T) store.Store) {
	s := open(t)
	const n = 8
	opts := store.CreateOptions{IdempotencyKey: "race", RequestHash: "h"}
	results := make([]store.CreateResult, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { results[i], errs[i] = s.CreateJob(t.Context(), newJob(alice), opts) })
	}
	wg.Wait()

	created := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("CreateJob %d: %v", i, errs[i])
		}
		if results[i].Created {
			created++
		}
		if results[i].Job.ID != results[0].Job.ID {
			t.Errorf("CreateJob %d returned job %s, CreateJob 0 job %s", i, results[i].Job.ID, results[0].Job.ID)
		}
	}
	if created != 1 {
		t.Errorf("%d of %d concurrent creates with one key created a job, want 1", created, n)
	}
	page, err := s.ListJobs(t.Context(), alice, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Jobs) != 1 {
		t.Errorf("the owner has %d jobs, want 1", len(page.Jobs))
	}
}

func testActivePerOwner(t *testing.T, open func(*testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	lim := store.CreateOptions{Limits: store.Limits{ActivePerOwner: 2}}

	a1 := createWith(t, s, newJob(alice), lim).Job
	a2 := createWith(t, s, newJob(alice), lim).Job
	_, err := s.CreateJob(ctx, newJob(alice), lim)
	if le := limitErr(t, "third active job", err); le.Capacity {
		t.Error("a per-owner quota reported as Capacity")
	} else if le.RetryAfter > store.MaxRetryAfter {
		t.Errorf("RetryAfter = %v, want at most %v", le.RetryAfter, store.MaxRetryAfter)
	}
	createWith(t, s, newJob(bob), lim) // other owners are not affected

	// Running jobs still count; terminal ones do not.
	lease(t, s, a1, "w", t0)
	_, err = s.CreateJob(ctx, newJob(alice), lim)
	limitErr(t, "with one job running", err)

	finish(t, s, a2, job.Canceled, t0)
	createWith(t, s, newJob(alice), lim)
	_, err = s.CreateJob(ctx, newJob(alice), lim)
	limitErr(t, "at the quota again", err)

	if err := s.CompleteJob(ctx, a1.ID, 1, store.Outcome{Status: job.Failed, Error: "x", Now: t0}); err != nil {
		t.Fatal(err)
	}
	createWith(t, s, newJob(alice), lim)
}

// testActiveRetryAfter checks the estimate of store.EstimateRetryAfter end to end.
func testActiveRetryAfter(t *testing.T, open func(*testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	lim := store.CreateOptions{Limits: store.Limits{ActivePerOwner: 2}}
	sec := time.Second

	// History: one "slow" job that ran for 100 s, one that failed fast (not counted).
	h := newJobOf(carol, "slow")
	lease(t, s, create(t, s, h), "w", t0)
	if err := s.CompleteJob(ctx, h.ID, 1, store.Outcome{Status: job.Succeeded, Now: t0.Add(100 * sec)}); err != nil {
		t.Fatal(err)
	}
	f := newJobOf(carol, "slow")
	lease(t, s, create(t, s, f), "w", t0)
	if err := s.CompleteJob(ctx, f.ID, 1, store.Outcome{Status: job.Failed, Error: "bad input", Now: t0.Add(sec)}); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name  string
		setup func(owner job.Owner) time.Time // returns when the refused create happens
		want  time.Duration
	}{
		{"running jobs: median runtime less the time the longest has run", func(o job.Owner) time.Time {
			lease(t, s, createWith(t, s, newJobOf(o, "slow"), lim).Job, "w", t0.Add(200*sec))
			lease(t, s, createWith(t, s, newJobOf(o, "slow"), lim).Job, "w", t0.Add(220*sec))
			return t0.Add(240 * sec)
		}, 60 * sec},
		{"overrun: a tenth of the median runtime", func(o job.Owner) time.Time {
			lease(t, s, createWith(t, s, newJobOf(o, "slow"), lim).Job, "w", t0.Add(200*sec))
			lease(t, s, createWith(t, s, newJobOf(o, "slow"), lim).Job, "w", t0.Add(200*sec))
			return t0.Add(500 * sec)
		}, 10 * sec},
		{"queued jobs only: the median runtime", func(o job.Owner) time.Time {
			createWith(t, s, newJobOf(o, "slow"), lim)
			createWith(t, s, newJobOf(o, "slow"), lim)
			return t0.Add(240 * sec)
		}, 100 * sec},
		{"no history: the default", func(o job.Owner) time.Time {
			createWith(t, s, newJob(o), lim)
			createWith(t, s, newJob(o), lim)
			return t0.Add(240 * sec)
		}, store.DefaultRetryAfter},
	}
	for i, tt := range tests {
		// In order: leases pick by model, these share the "slow" model, and the
		// queued case leaves a slow job in the queue.
		owner := job.Owner{Kind: job.OwnerKey, ID: fmt.Sprint("retry-", i)}
		now := tt.setup(owner)
		_, err := s.CreateJob(ctx, newJobAt(owner, now), lim)
		if le := limitErr(t, tt.name, err); le.RetryAfter != tt.want {
			t.Errorf("%s: RetryAfter = %v, want %v", tt.name, le.RetryAfter, tt.want)
		}
	}
}

func testCreatesPerMinute(t *testing.T, open func(*testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	lim := store.CreateOptions{Limits: store.Limits{CreatesPerMinute: 3}}
	sec := time.Second
	var ids []string
	for _, at := range []time.Duration{0, 10 * sec, 20 * sec} {
		ids = append(ids, createWith(t, s, newJobAt(alice, t0.Add(at)), lim).Job.ID)
	}

	refused := func(at time.Duration, retry time.Duration) {
		t.Helper()
		_, err := s.CreateJob(ctx, newJobAt(alice, t0.Add(at)), lim)
		le := limitErr(t, fmt.Sprintf("create at +%v", at), err)
		if le.Capacity {
			t.Error("a per-owner quota reported as Capacity")
		}
		if le.RetryAfter != retry {
			t.Errorf("create at +%v: RetryAfter = %v, want %v", at, le.RetryAfter, retry)
		}
	}
	// The window is the 60 s before the create; the create at +0 leaves it at +60 s.
	refused(30*sec, 30*sec)
	createWith(t, s, newJobAt(bob, t0.Add(30*sec)), lim) // per owner
	createWith(t, s, newJobAt(alice, t0.Add(60*sec)), lim)
	refused(65*sec, 5*sec) // the create at +10 s frees a place at +70 s

	// Deleting jobs does not give creates back.
	for _, id := range ids {
		if _, err := s.DeleteJob(ctx, id, alice); err != nil {
			t.Fatal(err)
		}
	}
	refused(66*sec, 4*sec)
	// With the quota lowered below what the window holds, a place frees when enough
	// creates have left: here the second oldest, at +20 s.
	lim.Limits.CreatesPerMinute = 2
	refused(66*sec, 14*sec)
	lim.Limits.CreatesPerMinute = 3
	refused(70*sec-500*time.Microsecond, sec) // half a millisecond away still says 1 s
	createWith(t, s, newJobAt(alice, t0.Add(70*sec)), lim)
}

func testQueuedServiceWide(t *testing.T, open func(*testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	lim := store.CreateOptions{Limits: store.Limits{QueuedServiceWide: 2}}
	a := createWith(t, s, newJob(alice), lim).Job
	createWith(t, s, newJob(bob), lim)
	_, err := s.CreateJob(ctx, newJob(carol), lim)
	if le := limitErr(t, "third queued job", err); !le.Capacity {
		t.Error("a full queue not reported as Capacity")
	}
	lease(t, s, a, "w", t0) // running jobs are not queued
	createWith(t, s, newJob(carol), lim)
}

func testRetention(t *testing.T, open func(*testing.T) store.Store) {
	type world struct {
		s   store.Store
		ids map[string]string // name → job id
	}
	// add creates the named jobs of owner (finished when the name ends in "!"), under no
	// retention limit, oldest first.
	add := func(t *testing.T, w world, owner job.Owner, names ...string) {
		for _, n := range names {
			j := create(t, w.s, newJob(owner))
			if strings.HasSuffix(n, "!") {
				finish(t, w.s, j, job.Canceled, t0)
			}
			w.ids[n] = j.ID
		}
	}
	tests := []struct {
		name     string
		setup    func(t *testing.T, w world)
		creator  job.Owner
		retained int
		evicted  []string // names, in eviction order
	}{
		{"the oldest finished job of the owner holding the most", func(t *testing.T, w world) {
			add(t, w, bob, "b1!")
			add(t, w, alice, "a1!", "a2!", "a3")
		}, bob, 4, []string{"a1!"}},
		// Without the new job bob and alice would tie.
		{"counting the new job", func(t *testing.T, w world) {
			add(t, w, bob, "b1!", "b2")
			add(t, w, alice, "a1!", "a2!")
		}, bob, 4, []string{"b1!"}},
		{"never an active job", func(t *testing.T, w world) {
			add(t, w, alice, "a1", "a2")
		}, alice, 2, nil},
		{"past owners with nothing finished", func(t *testing.T, w world) {
			add(t, w, alice, "a1", "a2", "a3")
			add(t, w, bob, "b1!")
		}, alice, 4, []string{"b1!"}},
		{"one at a time until it fits", func(t *testing.T, w world) {
			add(t, w, alice, "a1!", "a2!", "a3", "a4", "a5")
			add(t, w, bob, "b1!", "b2!")
		}, carol, 4, []string{"a1!", "a2!", "b1!", "b2!"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := world{s: open(t), ids: map[string]string{}}
			tt.setup(t, w)
			res := createWith(t, w.s, newJob(tt.creator), store.CreateOptions{Limits: store.Limits{Retained: tt.retained}})
			var want []string
			for _, n := range tt.evicted {
				want = append(want, w.ids[n])
			}
			if !slices.Equal(res.Evicted, want) {
				t.Errorf("Evicted = %v, want %v (%v)", res.Evicted, want, tt.evicted)
			}
			for name, id := range w.ids {
				if slices.Contains(tt.evicted, name) {
					gone(t, w.s, id)
				} else {
					get(t, w.s, id)
				}
			}
		})
	}

	t.Run("an evicted job's idempotency key is free again", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		opts := store.CreateOptions{IdempotencyKey: "k", RequestHash: "h", Limits: store.Limits{Retained: 1}}
		first := createWith(t, s, newJob(alice), opts).Job
		finish(t, s, first, job.Succeeded, t0)
		second := createWith(t, s, newJob(alice), store.CreateOptions{Limits: store.Limits{Retained: 1}})
		if !slices.Equal(second.Evicted, []string{first.ID}) {
			t.Fatalf("Evicted = %v, want [%s]", second.Evicted, first.ID)
		}
		finish(t, s, second.Job, job.Succeeded, t0)
		createWith(t, s, newJob(alice), opts) // a new job, not a replay of the evicted one
	})
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
