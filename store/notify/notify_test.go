package notify

import (
	"context"
	"sync"
	"testing"
)

func pending(ch <-chan struct{}) bool {
	select {
	case _, ok := <-ch:
		return ok
	default:
		return false
	}
}

// watch subscribes until the test ends.
func watch(t *testing.T, h *Hub, id string) <-chan struct{} {
	return h.Watch(t.Context(), id)
}

// closed waits until ch is closed, discarding pending values.
func closed(ch <-chan struct{}) {
	for range ch {
	}
}

func TestPublishWakesOnlyThatID(t *testing.T) {
	t.Parallel()
	var h Hub
	a, b := watch(t, &h, "a"), watch(t, &h, "b")

	h.Publish("a")
	if !pending(a) {
		t.Error("subscriber of a was not woken")
	}
	if pending(b) {
		t.Error("subscriber of b was woken by a change of a")
	}
}

func TestPublishCoalesces(t *testing.T) {
	t.Parallel()
	var h Hub
	ch := watch(t, &h, "a")
	for range 3 {
		h.Publish("a") // must not block although nobody reads
	}
	if !pending(ch) {
		t.Fatal("no value pending after three publishes")
	}
	if pending(ch) {
		t.Error("a backlog built up; want one pending value")
	}
}

func TestEverySubscriberIsWoken(t *testing.T) {
	t.Parallel()
	var h Hub
	c1, c2 := watch(t, &h, "a"), watch(t, &h, "a")
	h.Publish("a")
	if !pending(c1) || !pending(c2) {
		t.Error("not every subscriber of a was woken")
	}
}

func TestAWatchEndsWithItsContext(t *testing.T) {
	t.Parallel()
	var h Hub
	ctx, cancel := context.WithCancel(t.Context())
	ch := h.Watch(ctx, "a")
	cancel()
	closed(ch)
	h.Publish("a") // must not send on the closed channel
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.subs) != 0 {
		t.Errorf("hub still holds %d ids after the last subscriber left", len(h.subs))
	}
}

func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	var h Hub
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				ctx, cancel := context.WithCancel(t.Context())
				ch := h.Watch(ctx, "a")
				h.Publish("a")
				<-ch // our own publish, or another goroutine's, is pending
				cancel()
				closed(ch)
			}
		})
	}
	wg.Wait()
}
