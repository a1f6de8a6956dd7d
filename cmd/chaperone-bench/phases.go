package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"time"

	"github.com/chaperone-bio/chaperone/apikey"
	"github.com/chaperone-bio/chaperone/catalog"
	"github.com/chaperone-bio/chaperone/store/sqlite"
)

// results is everything run measured.
type results struct {
	creates, gets throughput
	jobsHeld      int // jobs in the store while the gets ran
	pickup        pickup
	waiters       waiters
	fdLimit       uint64

	bare        throughput // the anchor of the gets
	commits     throughput // the anchor of the creates
	synchronous string     // the commit loop's
	rowBytes    int        // the commit loop's
}

// busyServerPhases runs the phases of the server whose worker is busy, each throughput
// phase in rounds that alternate with its anchor's, so that both see the same machine
// (other work on it comes and goes).
func busyServerPhases(o options, r *results, root string, limits catalog.Limits) error {
	dir := filepath.Join(root, "busy")
	srv, keys, err := startKeyedServer(o, dir, o.owners, limits)
	if err != nil {
		return err
	}
	defer srv.Close()
	ctx := context.Background()
	c := newClient(srv.URL, o.clients)
	defer c.close()

	hang, err := c.create(ctx, keys[0], "hang")
	if err != nil {
		return err
	}
	if err := waitRunning(ctx, c, keys[0], hang.ID); err != nil {
		return err
	}

	// 4. Long-polls on the hanging job, first, while the server holds little else: the
	// SQLite page caches that the creates fill are memory outside Go's heap that could
	// move the RSS figure.
	r.waiters, err = holdWaiters(srv, keys[0], hang.ID, o.waiters, o.hold, o.profileDir)
	if err != nil {
		return err
	}
	// 1. Creates, each by a random owner, against the commit loop. The ids are kept by
	// owner for the gets. The creates' warm-up gives the loop the size of a job row.
	var mu sync.Mutex
	byOwner := make([][]string, o.owners)
	create := func(ctx context.Context, rng *rand.Rand) error {
		k := rng.IntN(o.owners)
		j, err := c.create(ctx, keys[k], "hang")
		if err == nil {
			mu.Lock()
			byOwner[k] = append(byOwner[k], j.ID)
			mu.Unlock()
		}
		return err
	}
	if _, err := closedLoop(srv, o.clients, 0, o.warmup, create); err != nil {
		return err
	}
	if r.rowBytes, err = jobRowBytes(ctx, filepath.Join(dir, "chaperone.db")); err != nil {
		return err
	}
	loop, err := openCommitLoop(ctx, filepath.Join(root, "anchor"), o.synchronous, r.rowBytes)
	if err != nil {
		return err
	}
	defer loop.Close()
	r.synchronous = loop.Synchronous
	r.creates, err = profiled(srv, o.profileDir, "creates", func() (throughput, error) {
		return alternate(o, &r.commits, func(warmup, window time.Duration) (throughput, error) {
			return closedLoop(srv, o.clients, warmup, window, create)
		}, func(warmup, window time.Duration) (throughput, error) {
			return loop.run(ctx, warmup, window)
		})
	})
	if err != nil {
		return err
	}

	// 2. Gets: a random job of a random owner, read with that owner's key, against the bare
	// handler answering the same requests with the view of one of those jobs.
	var ids, idKeys []string
	for k, l := range byOwner {
		for _, id := range l {
			ids = append(ids, id)
			idKeys = append(idKeys, keys[k])
		}
	}
	r.jobsHeld = len(ids) + 1 // and the hanging job
	if len(ids) == 0 {
		return errors.New("no job was created, so there is nothing to read")
	}
	code, view, err := c.do(ctx, "GET", "/v1/jobs/"+ids[0], nil, "Authorization", "Bearer "+idKeys[0])
	if err == nil && code != 200 {
		err = fmt.Errorf("get: status %d: %.300s", code, view)
	}
	if err != nil {
		return err
	}
	bare, err := startServer(childConfig{DataDir: filepath.Join(root, "bare"), Bare: view})
	if err != nil {
		return err
	}
	defer bare.Close()
	bc := newClient(bare.URL, o.clients)
	defer bc.close()
	get := func(c *client) func(ctx context.Context, rng *rand.Rand) error {
		return func(ctx context.Context, rng *rand.Rand) error {
			i := rng.IntN(len(ids))
			_, err := c.get(ctx, idKeys[i], ids[i])
			return err
		}
	}
	r.gets, err = profiled(srv, o.profileDir, "gets", func() (throughput, error) {
		return alternate(o, &r.bare, func(warmup, window time.Duration) (throughput, error) {
			return closedLoop(srv, o.clients, warmup, window, get(c))
		}, func(warmup, window time.Duration) (throughput, error) {
			return closedLoop(bare, o.clients, warmup, window, get(bc))
		})
	})
	return err
}

// alternate runs o.rounds rounds of a slice of measured, then a slice of its anchor, and
// returns the measured total, adding the anchor's into anchorTotal. The first slice of each
// has the full warm-up; later ones a short one, their connections and caches being warm.
func alternate(o options, anchorTotal *throughput, measured, anchor func(warmup, window time.Duration) (throughput, error)) (throughput, error) {
	var total throughput
	slice := o.duration / time.Duration(o.rounds)
	warmup := o.warmup
	for range o.rounds {
		m, err := measured(warmup, slice)
		if err != nil {
			return total, err
		}
		total.add(m)
		a, err := anchor(warmup, slice)
		if err != nil {
			return total, err
		}
		anchorTotal.add(a)
		warmup = min(o.warmup, roundWarmup)
	}
	return total, nil
}

// roundWarmup is the warm-up of every round of alternate after the first.
const roundWarmup = 200 * time.Millisecond

// idleServerPhase measures the pickup latency on a server whose one-slot worker is idle.
func idleServerPhase(o options, r *results, dir string, limits catalog.Limits) error {
	srv, keys, err := startKeyedServer(o, dir, 1, limits)
	if err != nil {
		return err
	}
	defer srv.Close()
	c := newClient(srv.URL, 1)
	defer c.close()
	// 3. One warm-up job, so the first sample does not pay for cold caches.
	if _, err := measurePickup(context.Background(), c, keys[0], 1, o.gap); err != nil {
		return err
	}
	r.pickup, err = measurePickup(context.Background(), c, keys[0], o.samples, o.gap)
	return err
}

// profiled runs phase, with the server's CPU profile recorded into dir/name.pprof when
// dir is set.
func profiled(srv *server, dir, name string, phase func() (throughput, error)) (throughput, error) {
	if dir == "" {
		return phase()
	}
	if err := srv.StartProfile(filepath.Join(dir, name+".pprof")); err != nil {
		return throughput{}, err
	}
	t, err := phase()
	if err2 := srv.StopProfile(); err == nil {
		err = err2
	}
	return t, err
}

// startKeyedServer starts a server on the store of dir with a worker of one slot, after
// issuing owners API keys in that store, and returns both.
func startKeyedServer(o options, dir string, owners int, limits catalog.Limits) (*server, []string, error) {
	keys, err := makeKeys(dir, owners)
	if err != nil {
		return nil, nil, err
	}
	srv, err := startServer(childConfig{DataDir: dir, Slots: 1, Limits: limits, LogLevel: o.logLevel})
	if err != nil {
		return nil, nil, err
	}
	return srv, keys, nil
}

// makeKeys issues n API keys in the store of dir before its server starts, as
// "chaperone keys create" would, and returns them.
func makeKeys(dir string, n int) ([]string, error) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "chaperone.db"))
	if err != nil {
		return nil, err
	}
	defer st.Close()
	keys := make([]string, n)
	for i := range keys {
		key, rec := apikey.New(fmt.Sprintf("bench-%d", i), time.Now())
		if err := st.CreateKey(ctx, rec); err != nil {
			return nil, err
		}
		keys[i] = key
	}
	return keys, nil
}
