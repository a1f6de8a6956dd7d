// Package notify is an in-process change hub: a store publishes the id of each job it
// changed, after the change committed, and waiters (Prefer: wait, the web app, idle
// workers) subscribe instead of polling the database. It backs Store.Watch for stores that
// live in one process, such as SQLite. It imports nothing of chaperone's.
package notify

import (
	"context"
	"sync"
)

// Hub fans change notifications out to subscribers. The zero value is ready to use.
type Hub struct {
	mu   sync.Mutex
	subs map[string]map[chan struct{}]struct{}
}

// Watch returns a channel that receives a value after each Publish(id) until ctx ends,
// when the channel is closed. The channel holds one pending value: a subscriber that is
// slow to read sees that something changed, not how often, and Publish never blocks on it.
// A watch costs no goroutine while it waits, so many thousands of them are cheap.
func (h *Hub) Watch(ctx context.Context, id string) <-chan struct{} {
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	if h.subs == nil {
		h.subs = make(map[string]map[chan struct{}]struct{})
	}
	set := h.subs[id]
	if set == nil {
		set = make(map[chan struct{}]struct{})
		h.subs[id] = set
	}
	set[ch] = struct{}{}
	h.mu.Unlock()

	context.AfterFunc(ctx, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(h.subs[id], ch)
		if len(h.subs[id]) == 0 {
			delete(h.subs, id)
		}
		// Under the lock, so no Publish can send on the closed channel.
		close(ch)
	})
	return ch
}

// Publish wakes every subscriber of id without blocking.
func (h *Hub) Publish(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.subs[id] {
		select {
		case ch <- struct{}{}:
		default: // a value is already pending; the subscriber will look anyway
		}
	}
}
