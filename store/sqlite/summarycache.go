package sqlite

import (
	"context"
	"sync"

	"github.com/chaperone-bio/chaperone/store"
)

// summaryCache keeps job summaries read from the database, so that a job polled again and
// again (GET /v1/jobs/{id}, waiters, ownership checks) costs a map lookup rather than a
// query, until it changes.
//
// It is exact because every write of a job that a summary shows (status, stage, progress,
// attempt, results) goes through this store's writer, which reports the job as changed: the
// writer forgets the job after its commit, before it answers the write and wakes watchers.
// The same report drives Watch, whose conformance tests pin which writes report a change.
// Jobs are written by the serving process alone (chaperone keys, the other process that
// opens the file, writes keys only), which is what Watch assumes too.
//
// A read that raced a commit could otherwise put back what was true before it: every
// forget bumps an epoch, and a read stores its result only if no forget happened since it
// began.
type summaryCache struct {
	mu      sync.Mutex
	epoch   uint64
	entries map[string]*store.JobSummary
}

// summaryCacheSize bounds the cache; a job view is a few hundred bytes.
const summaryCacheSize = 16384

// begin returns the epoch a read starts in, for put.
func (c *summaryCache) begin() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.epoch
}

// get returns a copy of the cached summary of id. Its Params map is shared and read-only.
func (c *summaryCache) get(id string) (*store.JobSummary, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.entries[id]
	if !ok {
		return nil, false
	}
	cp := *s
	return &cp, true
}

// put keeps s, read in epoch, unless a job changed since.
func (c *summaryCache) put(s *store.JobSummary, epoch uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if epoch != c.epoch {
		return
	}
	if c.entries == nil {
		c.entries = make(map[string]*store.JobSummary)
	}
	if len(c.entries) >= summaryCacheSize {
		for id := range c.entries { // any one: map order is random
			delete(c.entries, id)
			break
		}
	}
	cp := *s
	c.entries[s.ID] = &cp
}

// forget drops the summaries of jobs a commit changed.
func (c *summaryCache) forget(ids []string) {
	if len(ids) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch++
	for _, id := range ids {
		delete(c.entries, id)
	}
}

// GetJobSummary implements store.Jobs, through the cache.
func (s *Store) GetJobSummary(ctx context.Context, id string) (*store.JobSummary, error) {
	if j, ok := s.summaries.get(id); ok {
		return j, nil
	}
	epoch := s.summaries.begin()
	j, err := s.Core.GetJobSummary(ctx, id)
	if err != nil {
		return nil, err
	}
	s.summaries.put(j, epoch)
	return j, nil
}
