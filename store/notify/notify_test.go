package notify

import (
	"sync"
	"testing"
)

func pending(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestPublishWakesOnlyThatID(t *testing.T) {
	t.Parallel()
	var h Hub
	a, stopA := h.Subscribe("a")
	defer stopA()
	b, stopB := h.Subscribe("b")
	defer stopB()

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
	ch, stop := h.Subscribe("a")
	defer stop()
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
	c1, stop1 := h.Subscribe("a")
	defer stop1()
	c2, stop2 := h.Subscribe("a")
	defer stop2()
	h.Publish("a")
	if !pending(c1) || !pending(c2) {
		t.Error("not every subscriber of a was woken")
	}
}

func TestStop(t *testing.T) {
	t.Parallel()
	var h Hub
	ch, stop := h.Subscribe("a")
	stop()
	stop() // idempotent
	h.Publish("a")
	if pending(ch) {
		t.Error("a stopped subscription was woken")
	}
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
				ch, stop := h.Subscribe("a")
				h.Publish("a")
				<-ch // our own publish, or another goroutine's, is pending
				stop()
			}
		})
	}
	wg.Wait()
}
