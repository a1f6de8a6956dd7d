// Package aligner is chaperone's alignment stage: it searches the multiple sequence
// alignments a prediction needs (job.Search) ahead of the workers, so that no GPU slot
// waits on an alignment server and no tool calls one itself. A job created with searches
// is queued with job.Aligning set; a Stage on each serve replica claims it
// (store.Aligning), searches through package align, keeps the results in a Cache in the
// artifact store's shared files, and finishes the claim, after which a worker can lease
// the job and its lease carries the alignments, read from the Cache.
//
// A search happens once across the cluster: a Stage about to search claims the search's
// key in the store, and any other Stage that wants the same alignments meanwhile waits
// for them to appear in the Cache.
//
// It imports job, store's interfaces, artifact and align.
package aligner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/chaperone-bio/chaperone/align"
	"github.com/chaperone-bio/chaperone/job"
)

// Store is what the stage needs of the job store: the alignment claims and their
// notifications (store.Aligning and store.Store.Watch).
type Store interface {
	ClaimAlignment(ctx context.Context, holder string, now, until time.Time) (*job.Job, error)
	RenewAlignment(ctx context.Context, id, holder string, until time.Time) error
	FinishAlignment(ctx context.Context, id, holder string, now time.Time, failure string) error
	ClaimSearch(ctx context.Context, key, holder string, now, until time.Time) (bool, error)
	ReleaseSearch(ctx context.Context, key, holder string) error
	ReleaseAligner(ctx context.Context, holder string) ([]string, error)
	Watch(ctx context.Context, id string) <-chan struct{}
}

// Config is a Stage's setting. Store, Cache and Searcher are required.
type Config struct {
	Store    Store
	Cache    *Cache
	Searcher align.Searcher
	// Holder names this stage in its claims: a name it keeps when it starts again (a
	// replica's host and data folder), so that it frees at once the claims it held before
	// it died; a fresh random name when empty.
	Holder string
	// Slots is how many jobs it aligns at once; default 4.
	Slots int
	// ClaimTTL is how long a claim lasts unrenewed: a stage that died holds a job, or a
	// search, this long. Default 30 s.
	ClaimTTL time.Duration
	// Poll is how often a stage waiting on another's search looks for its result; default 1 s.
	Poll time.Duration
	// SweepEvery is how often the cache is swept (Cache.Sweep); default 10 min.
	SweepEvery time.Duration
	Now        func() time.Time
	Log        *slog.Logger
}

// Stage searches the alignments of queued jobs. Run it on every serve replica.
type Stage struct {
	cfg Config

	mu    sync.Mutex
	stats Stats
}

// Stats counts what a stage did since it started.
type Stats struct {
	Jobs     int // jobs whose searches it finished
	Failed   int // jobs it failed
	Searched int // searches it made
	Hits     int // searches it found in the cache
	Waited   int // searches it waited for while another stage made them
}

// New returns a stage.
func New(cfg Config) *Stage {
	if cfg.Holder == "" {
		cfg.Holder = "aligner-" + randomName()
	}
	if cfg.Slots <= 0 {
		cfg.Slots = 4
	}
	if cfg.ClaimTTL <= 0 {
		cfg.ClaimTTL = 30 * time.Second
	}
	if cfg.Poll <= 0 {
		cfg.Poll = time.Second
	}
	if cfg.SweepEvery <= 0 {
		cfg.SweepEvery = 10 * time.Minute
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Stage{cfg: cfg}
}

func randomName() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Stats returns the counts so far.
func (s *Stage) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

func (s *Stage) count(f func(*Stats)) {
	s.mu.Lock()
	f(&s.stats)
	s.mu.Unlock()
}

// Run aligns jobs until ctx ends. It first frees the claims an earlier run under its name
// left (they died with it). A job it holds when ctx ends stays claimed until its claim
// runs out, and then another stage takes it.
func (s *Stage) Run(ctx context.Context) {
	if freed, err := s.cfg.Store.ReleaseAligner(ctx, s.cfg.Holder); err != nil {
		s.cfg.Log.Error("freeing the claims of an earlier run", "error", err)
	} else if len(freed) > 0 {
		s.cfg.Log.Warn("freed the alignment claims an earlier run of this replica held", "jobs", len(freed))
	}
	var wg sync.WaitGroup
	for range s.cfg.Slots {
		wg.Go(func() { s.slot(ctx) })
	}
	wg.Go(func() { s.sweep(ctx) })
	wg.Wait()
}

// slot claims one job after another, waiting between them for a job to be queued or for
// another stage's claim to run out.
func (s *Stage) slot(ctx context.Context) {
	for ctx.Err() == nil {
		watchCtx, stopWatch := context.WithCancel(ctx)
		queued := s.cfg.Store.Watch(watchCtx, "")
		now := s.cfg.Now()
		j, err := s.cfg.Store.ClaimAlignment(ctx, s.cfg.Holder, now, now.Add(s.cfg.ClaimTTL))
		if err != nil && ctx.Err() == nil {
			s.cfg.Log.Error("claiming a job to align", "error", err)
		}
		if j != nil {
			stopWatch()
			s.align(ctx, j)
			continue
		}
		wait := time.NewTimer(s.cfg.ClaimTTL / 2)
		select {
		case _, live := <-queued:
			if !live { // notifications lost: look again after the wait
				select {
				case <-wait.C:
				case <-ctx.Done():
				}
			}
		case <-wait.C:
		case <-ctx.Done():
		}
		wait.Stop()
		stopWatch()
	}
}

// errClaimLost ends the work on a job whose claim is gone: canceled, deleted, or taken
// over after this stage failed to renew it in time.
var errClaimLost = errors.New("the job's alignment claim is gone")

// align searches every search of j and finishes its claim.
func (s *Stage) align(ctx context.Context, j *job.Job) {
	log := s.cfg.Log.With("job", j.ID)
	jobCtx, cancel := context.WithCancelCause(ctx)
	held := make(chan struct{})
	go func() {
		defer close(held)
		s.hold(jobCtx, cancel, j.ID)
	}()
	defer func() { cancel(nil); <-held }()
	started := s.cfg.Now()
	for _, search := range j.Searches {
		res, err := s.search(jobCtx, search.Chains)
		if err != nil {
			switch {
			case errors.Is(context.Cause(jobCtx), errClaimLost):
				log.Info("alignment search stopped: the job was canceled, deleted or taken over")
			case ctx.Err() != nil:
				log.Info("alignment search stopped: shutting down; another replica takes the job when its claim runs out")
			default:
				// A server's answer is the caller's to read (the server is public in
				// /v1/models); a local search's failure names this machine's folders and
				// commands, which stay in the log.
				why := err.Error()
				if s.cfg.Searcher.Source().Server == "" {
					why = "the local MMseqs2 search did not complete (the server's log says why)"
				}
				failure := "alignment search failed: " + why
				if j.Total > 1 {
					failure = fmt.Sprintf("alignment search of target %d failed: %s", search.Target, why)
				}
				s.finish(ctx, j.ID, failure)
				log.Warn("alignment search failed", "error", err)
			}
			return
		}
		log.Debug("alignments ready", "target", search.Target, "chains", len(res.Chains))
	}
	s.finish(ctx, j.ID, "")
	log.Info("alignments ready", "searches", len(j.Searches), "took", s.cfg.Now().Sub(started).Round(time.Millisecond))
}

func (s *Stage) finish(ctx context.Context, id, failure string) {
	err := s.cfg.Store.FinishAlignment(context.WithoutCancel(ctx), id, s.cfg.Holder, s.cfg.Now(), failure)
	switch {
	case errors.Is(err, job.ErrLeaseLost):
		s.cfg.Log.Info("alignment claim gone before it was finished", "job", id)
	case err != nil:
		s.cfg.Log.Error("finishing an alignment claim", "job", id, "error", err)
	case failure != "":
		s.count(func(st *Stats) { st.Failed++ })
	default:
		s.count(func(st *Stats) { st.Jobs++ })
	}
}

// hold renews the claim on a job while it is worked on, and ends the work (cancel with
// errClaimLost) at once when the job is canceled or deleted: its watch fires, and the
// renewal that follows is refused.
func (s *Stage) hold(ctx context.Context, cancel context.CancelCauseFunc, id string) {
	changed := s.cfg.Store.Watch(ctx, id)
	tick := time.NewTicker(s.cfg.ClaimTTL / 3)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case _, live := <-changed:
			if !live {
				changed = nil
			}
		case <-tick.C:
		}
		now := s.cfg.Now()
		err := s.cfg.Store.RenewAlignment(ctx, id, s.cfg.Holder, now.Add(s.cfg.ClaimTTL))
		if errors.Is(err, job.ErrLeaseLost) {
			cancel(errClaimLost)
			return
		}
		if err != nil && ctx.Err() == nil {
			s.cfg.Log.Warn("renewing an alignment claim", "job", id, "error", err)
		}
	}
}

// search returns the alignments of chains: from the cache, from the search another stage
// is making, or from a search of its own, which it makes while holding the search's claim
// and keeps in the cache.
func (s *Stage) search(ctx context.Context, chains []string) (align.Result, error) {
	key := s.cfg.Cache.SearchKey(chains)
	holder := s.cfg.Holder + "/" + randomName()
	waited := false
	for {
		res, ok, err := s.cfg.Cache.Get(ctx, chains)
		if err != nil {
			return align.Result{}, err
		}
		if ok {
			s.count(func(st *Stats) {
				if waited {
					st.Waited++
				} else {
					st.Hits++
				}
			})
			return res, nil
		}
		now := s.cfg.Now()
		mine, err := s.cfg.Store.ClaimSearch(ctx, key, holder, now, now.Add(s.cfg.ClaimTTL))
		if err != nil {
			return align.Result{}, err
		}
		if mine {
			return s.searchClaimed(ctx, key, holder, chains)
		}
		waited = true
		wait := time.NewTimer(s.cfg.Poll)
		select {
		case <-wait.C:
		case <-ctx.Done():
			wait.Stop()
			return align.Result{}, ctx.Err()
		}
	}
}

// searchClaimed makes a search whose claim holder holds, renewing the claim meanwhile,
// and keeps the result in the cache before it lets the claim go.
func (s *Stage) searchClaimed(ctx context.Context, key, holder string, chains []string) (align.Result, error) {
	defer func() {
		if err := s.cfg.Store.ReleaseSearch(context.WithoutCancel(ctx), key, holder); err != nil {
			s.cfg.Log.Warn("releasing a search claim", "error", err)
		}
	}()
	// Another stage may have finished the search between the look and the claim.
	if res, ok, err := s.cfg.Cache.Get(ctx, chains); err != nil || ok {
		if ok {
			s.count(func(st *Stats) { st.Waited++ })
		}
		return res, err
	}
	// The renewal ends before the claim is let go: one still under way would claim the
	// search anew, for no one, until the claim ran out.
	searchCtx, stop := context.WithCancel(ctx)
	renewing := make(chan struct{})
	defer func() { stop(); <-renewing }()
	go func() {
		defer close(renewing)
		tick := time.NewTicker(s.cfg.ClaimTTL / 3)
		defer tick.Stop()
		for {
			select {
			case <-searchCtx.Done():
				return
			case <-tick.C:
				now := s.cfg.Now()
				if _, err := s.cfg.Store.ClaimSearch(searchCtx, key, holder, now, now.Add(s.cfg.ClaimTTL)); err != nil && searchCtx.Err() == nil {
					s.cfg.Log.Warn("renewing a search claim", "error", err)
				}
			}
		}
	}()
	res, err := s.cfg.Searcher.Search(searchCtx, align.Query{Chains: chains})
	if err != nil {
		return align.Result{}, err
	}
	s.count(func(st *Stats) { st.Searched++ })
	if err := s.cfg.Cache.Put(ctx, res); err != nil {
		return align.Result{}, err
	}
	return res, nil
}

// sweep keeps the cache within its limits.
func (s *Stage) sweep(ctx context.Context) {
	tick := time.NewTicker(s.cfg.SweepEvery)
	defer tick.Stop()
	for {
		if swept, err := s.cfg.Cache.Sweep(ctx, s.cfg.Now()); err != nil && ctx.Err() == nil {
			s.cfg.Log.Warn("sweeping the alignment cache", "error", err)
		} else if swept.Files > 0 {
			s.cfg.Log.Info("alignment cache swept", "files", swept.Files, "bytes", swept.Bytes, "kept_bytes", swept.Kept)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
