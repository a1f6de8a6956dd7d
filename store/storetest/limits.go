package storetest

// The limits a create is held to: idempotency, the quotas, retention.

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/store"
)

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
