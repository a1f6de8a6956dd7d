// Package notify is an in-process change hub: a store publishes the id of each job it
// changed, after the change committed, and waiters (Prefer: wait, the web app, idle
// workers) subscribe instead of polling the database. It backs Store.Watch for stores that
// live in one process, such as SQLite. It imports nothing of chaperone's.
package notify

import "sync"

// Hub fans change notifications out to subscribers. The zero value is ready to use.
type Hub struct {
	mu   sync.Mutex
	subs map[string]map[chan struct{}]struct{}
}

// Subscribe returns a channel that receives a value after each Publish(id), and a function
// that ends the subscription (safe to call more than once). The channel holds one pending
// value: a subscriber that is slow to read sees that something changed, not how often,
// and Publish never blocks on it.
func (h *Hub) Subscribe(id string) (<-chan struct{}, func()) {
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

	var once sync.Once
	return ch, func() {
		once.Do(func() {
			h.mu.Lock()
			defer h.mu.Unlock()
			delete(h.subs[id], ch)
			if len(h.subs[id]) == 0 {
				delete(h.subs, id)
			}
		})
	}
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
