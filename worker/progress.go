package worker

import (
	"sync"
	"time"

	"github.com/chaperone-bio/chaperone/job"
)

// progressTracker holds the latest progress an engine reported and when the job last
// showed life.
type progressTracker struct {
	mu      sync.Mutex
	cur     job.Progress
	changed bool
	active  bool
	last    time.Time
}

func (t *progressTracker) report(p job.Progress) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p.Stage == "" {
		p.Stage = t.cur.Stage
	}
	t.cur, t.changed, t.active, t.last = p, true, true, time.Now()
}

func (t *progressTracker) touch() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.active, t.last = true, time.Now()
}

func (t *progressTracker) take() (p job.Progress, changed, active bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p, changed, active = t.cur, t.changed, t.active
	t.changed, t.active = false, false
	return p, changed, active
}

func (t *progressTracker) snapshot() job.Progress {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.cur
}

func (t *progressTracker) lastActivity() time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.last
}
