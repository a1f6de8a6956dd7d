package api

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/store"
)

// finishWatch tells every request holding on one job (Prefer: wait) when the job ends.
// However many requests wait on a job, one goroutine subscribes to its changes and re-reads
// its summary per change (a running job changes with its progress); the waiters themselves only
// block on a channel that closes when the job is terminal or gone. The cost of a heartbeat
// is then one read per job, not one per waiter.
type finishWatch struct {
	store store.Store

	mu    sync.Mutex
	byJob map[string]*jobFinish
}

// jobFinish is the shared watch of one job.
type jobFinish struct {
	done    chan struct{} // closed once the job is terminal or gone
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
	case <-f.done:
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
		f = &jobFinish{done: make(chan struct{}), stop: stop}
		fw.byJob[id] = f
		go fw.follow(ctx, id, f.done)
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
func (fw *finishWatch) follow(ctx context.Context, id string, done chan struct{}) {
	for {
		changed := fw.store.Watch(ctx, id)
		for live := true; live; {
			j, err := fw.store.GetJobSummary(ctx, id)
			if errors.Is(err, job.ErrNotFound) || err == nil && j.Status.Terminal() {
				fw.finish(id, done)
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
func (fw *finishWatch) finish(id string, done chan struct{}) {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	if f, ok := fw.byJob[id]; ok && f.done == done {
		delete(fw.byJob, id)
	}
	close(done)
}
