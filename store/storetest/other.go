package storetest

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/store"
)

func testWorkers(t *testing.T, open func(*testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	live := func(since time.Time, want ...store.Worker) {
		t.Helper()
		got, err := s.LiveWorkers(ctx, since)
		if err != nil {
			t.Fatal(err)
		}
		slices.SortFunc(got, func(a, b store.Worker) int { return strings.Compare(a.ID, b.ID) })
		if len(got) != len(want) {
			t.Fatalf("LiveWorkers(%v) = %d workers, want %d: %+v", since.Sub(t0), len(got), len(want), got)
		}
		for i, w := range want {
			g := got[i]
			// nil and empty lists say the same.
			if g.ID != w.ID || !slices.Equal(g.Models, w.Models) || !maps.Equal(g.Missing, w.Missing) ||
				!slices.Equal(g.Loaded, w.Loaded) || g.Slots != w.Slots || g.Busy != w.Busy {
				t.Errorf("LiveWorkers[%d] = %+v, want %+v", i, g, w)
			}
			checkTime(t, "SeenAt of "+w.ID, g.SeenAt, w.SeenAt)
		}
	}

	gpu := store.Worker{ID: "gpu-node-1", Models: []string{"boltz2", "esmfold2"},
		Missing: map[string]string{"openfold3": "command run_openfold not found on PATH"},
		Loaded:  []string{"esmfold2"}, Slots: 2, SeenAt: t0}
	cpu := store.Worker{ID: "cpu-node", Models: []string{"esmc-600m"}, Slots: 1, SeenAt: t0.Add(-5 * time.Minute)}
	for _, w := range []store.Worker{gpu, cpu} {
		if err := s.PutWorker(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	live(t0.Add(-time.Minute), gpu)
	live(t0.Add(-5*time.Minute), cpu, gpu) // seen at since counts as live

	// Busy counts the jobs a worker holds, from the moment it leases one to the moment the
	// job leaves it, whatever the worker last announced: a queued job can say at once that
	// every slot is taken.
	first := lease(t, s, create(t, s, newJobOf(alice, "boltz2")), gpu.ID, t0)
	lease(t, s, create(t, s, newJobOf(bob, "boltz2")), gpu.ID, t0)
	lease(t, s, create(t, s, newJobOf(alice, "esmc-600m")), "another-worker", t0)
	gpu.Busy = 2
	live(t0.Add(-time.Minute), gpu)
	if err := s.CompleteJob(ctx, first.ID, first.Attempt, store.Outcome{Status: job.Failed, Error: "out of memory", Now: t0}); err != nil {
		t.Fatal(err)
	}
	gpu.Busy = 1
	live(t0.Add(-time.Minute), gpu)

	gpu2 := store.Worker{ID: gpu.ID, Models: []string{"boltz2"}, Slots: 2, Busy: 1, SeenAt: t0.Add(30 * time.Second)}
	if err := s.PutWorker(ctx, gpu2); err != nil {
		t.Fatal(err)
	}
	live(t0.Add(time.Second), gpu2)

	if err := s.RemoveWorker(ctx, gpu.ID); err != nil {
		t.Fatal(err)
	}
	live(t0.Add(-time.Hour), cpu)
}

func testKeys(t *testing.T, open func(*testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	laptop := store.Key{ID: "key_1", Name: "laptop", Hash: strings.Repeat("a1", 32), Prefix: "chp_live_Ab3",
		CreatedAt: t0.Add(123 * time.Microsecond)}
	ci := store.Key{ID: "key_2", Name: "ci", Hash: strings.Repeat("b2", 32), Prefix: "chp_live_Zx9",
		CreatedAt: t0.Add(time.Minute), Worker: true}
	checkKey := func(what string, got, want store.Key) {
		t.Helper()
		checkTime(t, what+": CreatedAt", got.CreatedAt, want.CreatedAt)
		checkTime(t, what+": RevokedAt", got.RevokedAt, want.RevokedAt)
		got.CreatedAt, got.RevokedAt, want.CreatedAt, want.RevokedAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
		if got != want {
			t.Errorf("%s = %+v, want %+v", what, got, want)
		}
	}
	byHash := func(k store.Key) {
		t.Helper()
		got, err := s.KeyByHash(ctx, k.Hash)
		if err != nil {
			t.Fatalf("KeyByHash(%s): %v", k.Name, err)
		}
		checkKey("KeyByHash", *got, k)
	}
	revoked := func(k store.Key) {
		t.Helper()
		_, err := s.KeyByHash(ctx, k.Hash)
		wantErr(t, "KeyByHash of "+k.Name, err, job.ErrNotFound)
	}

	for _, k := range []store.Key{laptop, ci} {
		if err := s.CreateKey(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	byHash(laptop)
	byHash(ci)
	_, err := s.KeyByHash(ctx, strings.Repeat("00", 32))
	wantErr(t, "KeyByHash of an unknown hash", err, job.ErrNotFound)

	dup := store.Key{ID: "key_3", Name: "laptop", Hash: strings.Repeat("c3", 32), Prefix: "chp_live_Qq1", CreatedAt: t0}
	var ce *job.ConflictError
	if err := s.CreateKey(ctx, dup); !errors.As(err, &ce) {
		t.Errorf("CreateKey with the name of a live key: error = %v, want a ConflictError", err)
	}

	revokedAt := t0.Add(time.Hour)
	if err := s.RevokeKey(ctx, laptop.ID, revokedAt); err != nil {
		t.Fatalf("RevokeKey by id: %v", err)
	}
	revoked(laptop)
	byHash(ci)
	if err := s.RevokeKey(ctx, "ci", revokedAt); err != nil {
		t.Fatalf("RevokeKey by name: %v", err)
	}
	revoked(ci)
	wantErr(t, "RevokeKey of an unknown key", s.RevokeKey(ctx, "nope", revokedAt), job.ErrNotFound)
	if err := s.RevokeKey(ctx, laptop.ID, revokedAt.Add(time.Hour)); err != nil {
		t.Errorf("RevokeKey of a revoked key: %v", err)
	}

	keys, err := s.ListKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(keys, func(a, b store.Key) int { return strings.Compare(a.ID, b.ID) })
	if len(keys) != 2 {
		t.Fatalf("ListKeys = %+v, want both keys, revoked", keys)
	}
	laptop.RevokedAt, ci.RevokedAt = revokedAt, revokedAt // the first revocation stands
	checkKey("ListKeys[0]", keys[0], laptop)
	checkKey("ListKeys[1]", keys[1], ci)

	// A revoked key's name is free again.
	if err := s.CreateKey(ctx, dup); err != nil {
		t.Errorf("CreateKey with the name of a revoked key: %v", err)
	}
	byHash(dup)
}

// watchWait bounds how long a notification may take. Stores that notify asynchronously
// (PostgreSQL LISTEN/NOTIFY) need some time; in-process ones need none.
const watchWait = 5 * time.Second

func fired(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(watchWait):
		t.Fatalf("%s: no notification within %v", what, watchWait)
	}
}

// quiet checks that nothing is pending. It is only used for watches of jobs that have
// not changed, so a late notification of an earlier change cannot make it fail.
func quiet(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case _, ok := <-ch:
		if ok {
			t.Errorf("%s: unexpected notification", what)
		}
	default:
	}
}

func drain(ch <-chan struct{}) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

func testWatch(t *testing.T, open func(*testing.T) store.Store) {
	s := open(t)
	ctx := t.Context()
	queue := s.Watch(ctx, "")
	watch := func(j *job.Job) <-chan struct{} { return s.Watch(ctx, j.ID) }

	untouched := newJob(carol)
	untouchedCh := watch(untouched)
	stopped := newJob(carol)
	stopCtx, stop := context.WithCancel(ctx)
	stoppedCh := s.Watch(stopCtx, stopped.ID)
	stop()
	for range stoppedCh { // closed once the watch has ended
	}

	// One job through its life; each step fires after it committed.
	j := newJob(alice)
	ch := watch(j)
	steps := []struct {
		name  string
		do    func()
		after job.Status // what a reader sees once woken
	}{
		{"create", func() { create(t, s, j) }, job.Queued},
		{"lease", func() { lease(t, s, j, "w", t0) }, job.Running},
		{"heartbeat", func() {
			hb := store.Heartbeat{ID: j.ID, Attempt: 1, Progress: &job.Progress{Stage: job.StageMSA},
				Now: t0, LeaseUntil: t0.Add(leaseFor)}
			if err := s.Heartbeat(ctx, hb); err != nil {
				t.Fatal(err)
			}
		}, job.Running},
		{"complete", func() {
			if err := s.CompleteJob(ctx, j.ID, 1, store.Outcome{Status: job.Succeeded, Now: t0}); err != nil {
				t.Fatal(err)
			}
		}, job.Succeeded},
	}
	for _, st := range steps {
		drain(ch)
		st.do()
		fired(t, ch, st.name)
		if got := get(t, s, j.ID); got.Status != st.after {
			t.Errorf("after %s fired the job is %s, want %s", st.name, got.Status, st.after)
		}
	}

	drain(queue)
	create(t, s, newJob(bob))
	fired(t, queue, "create, on the queue watch")

	c := create(t, s, newJob(alice))
	cch := watch(c)
	if _, err := s.CancelJob(ctx, c.ID, alice, t0); err != nil {
		t.Fatal(err)
	}
	fired(t, cch, "cancel")
	if _, err := s.DeleteJob(ctx, c.ID, alice); err != nil {
		t.Fatal(err)
	}
	fired(t, cch, "delete")

	r := create(t, s, newJob(bob))
	rch := watch(r)
	lease(t, s, r, "w", t0)
	drain(rch)
	drain(queue)
	if _, err := s.RecoverExpired(ctx, t0.Add(2*leaseFor), 3); err != nil {
		t.Fatal(err)
	}
	fired(t, rch, "recovery")
	fired(t, queue, "recovery, on the queue watch")

	lease(t, s, r, "w-restarting", t0.Add(3*leaseFor))
	drain(queue)
	if _, err := s.ReleaseWorker(ctx, "w-restarting", t0.Add(3*leaseFor), 3); err != nil {
		t.Fatal(err)
	}
	fired(t, queue, "release, on the queue watch")

	// A slow reader: several changes, no backlog to block on.
	for range 3 {
		create(t, s, newJob(bob))
	}
	fired(t, queue, "after three creates")

	// Eviction is a deletion: j (succeeded) goes.
	drain(ch)
	res := createWith(t, s, newJob(alice), store.CreateOptions{Limits: store.Limits{Retained: 1}})
	if !slices.Contains(res.Evicted, j.ID) {
		t.Fatalf("Evicted = %v, want it to hold %s", res.Evicted, j.ID)
	}
	fired(t, ch, "eviction")

	create(t, s, stopped)
	quiet(t, stoppedCh, "a stopped watch")
	quiet(t, untouchedCh, "a job that never changed")
}
