package api

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/store"
)

// holdAnswer writes the response of request r once its hold is over, with the job as it
// stands then (err when it could not be read) and whether the hold was applied. It is to
// use the r it is given, not the handler's: after a detached hold that is a copy holding
// only what a response needs (see detach).
type holdAnswer func(w http.ResponseWriter, r *http.Request, final *store.JobSummary, held bool, err error)

// hold honours Prefer: wait: answer is called as soon as the job is terminal, or when the
// hold ends, with the job as it stands then. It is woken by store notifications, never by
// polling. Where it can, the hold is detached from its handler (see detach), so that a held
// request costs no goroutine and none of net/http's buffers; answer is then called later, on
// another goroutine, with a ResponseWriter of its own.
func (s *Server) hold(w http.ResponseWriter, r *http.Request, j *store.JobSummary, answer holdAnswer) {
	d, ok := preferWait(r.Header.Values("Prefer"), s.cat.Limits.WaitDefaultSeconds, s.cat.Limits.WaitMaxSeconds)
	if !ok {
		answer(w, r, j, false, nil)
		return
	}
	if j.Status.Terminal() {
		answer(w, r, j, true, nil)
		return
	}
	// A client at its bound of held waits is answered at once, without Preference-Applied:
	// it polls instead of holding a connection each.
	release, ok := s.held.take(clientGroup(s.clientIP(r)))
	if !ok {
		answer(w, r, j, false, nil)
		return
	}
	inner := answer
	answer = func(w http.ResponseWriter, r *http.Request, final *store.JobSummary, held bool, err error) {
		defer release()
		inner(w, r, final, held, err)
	}
	if s.detach(w, r, j.ID, d, answer) {
		return
	}
	s.holding.Add(1)
	s.finishes.wait(r.Context(), j.ID, d)
	s.holding.Add(-1)
	cur, err := s.reread(r, j.ID)
	answer(w, r, cur, true, err)
}

// reread reads the job a hold was on once the hold is over, even if the caller has gone.
func (s *Server) reread(r *http.Request, id string) (*store.JobSummary, error) {
	return s.store.GetJobSummary(context.WithoutCancel(r.Context()), id)
}

// finishWatch tells every request holding on one job (Prefer: wait) when the job ends.
// However many requests wait on a job, one goroutine subscribes to its changes and re-reads
// it per change (status and progress changes; a heartbeat that changes neither does not
// fire the store's watch); the waiters themselves only wait for a context that ends when
// the job is terminal or gone. The cost of a change is then one read per job, not one per
// waiter.
type finishWatch struct {
	store store.Store

	mu    sync.Mutex
	byJob map[string]*jobFinish
}

// jobFinish is the shared watch of one job.
type jobFinish struct {
	ended   context.Context // done once the job is terminal or gone
	end     context.CancelFunc
	holders int
	stop    context.CancelFunc
}

func newFinishWatch(st store.Store) *finishWatch {
	return &finishWatch{store: st, byJob: map[string]*jobFinish{}}
}

// wait blocks until the job with the given id is terminal or gone, the hold d is over, or
// ctx ends.
func (fw *finishWatch) wait(ctx context.Context, id string, d time.Duration) {
	f := fw.acquire(id)
	defer fw.release(id, f)
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-f.ended.Done():
	case <-timer.C:
	case <-ctx.Done():
	}
}

func (fw *finishWatch) acquire(id string) *jobFinish {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	f, ok := fw.byJob[id]
	if !ok {
		ctx, stop := context.WithCancel(context.Background())
		f = &jobFinish{stop: stop}
		f.ended, f.end = context.WithCancel(context.Background())
		fw.byJob[id] = f
		go fw.follow(ctx, id, f)
	}
	f.holders++
	return f
}

func (fw *finishWatch) release(id string, f *jobFinish) {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	if f.holders--; f.holders == 0 {
		f.stop()
		if fw.byJob[id] == f {
			delete(fw.byJob, id)
		}
	}
}

// follow closes done when the job ends. It subscribes before each read, so a change
// between the read and the subscription cannot be missed. A watch the store lost is
// renewed after lostWatchRetry, which bounds how often a store without notifications is
// read.
func (fw *finishWatch) follow(ctx context.Context, id string, f *jobFinish) {
	for {
		changed := fw.store.Watch(ctx, id)
		for live := true; live; {
			j, err := fw.store.GetJobSummary(ctx, id)
			if errors.Is(err, job.ErrNotFound) || err == nil && j.Status.Terminal() {
				fw.finish(id, f)
				return
			}
			// A failing read is retried at the next change; the holders' timers bound the wait.
			_, live = <-changed
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(lostWatchRetry):
		}
	}
}

// lostWatchRetry is how long a holder's watch waits before it watches anew after the store
// lost its notifications.
const lostWatchRetry = time.Second

// finish wakes the holders and retires this watch, so that a later hold on the same job
// starts a fresh one.
func (fw *finishWatch) finish(id string, f *jobFinish) {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	if fw.byJob[id] == f {
		delete(fw.byJob, id)
	}
	f.end()
}
