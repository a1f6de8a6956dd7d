package worker

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"
)

// slowLogQueue holds every AppendLog until released, as a slow network would.
type slowLogQueue struct {
	Queue                 // only AppendLog is called
	entered chan struct{} // receives when an append begins
	release chan struct{} // closed to let appends finish
	mu      sync.Mutex
	got     bytes.Buffer
}

func (q *slowLogQueue) AppendLog(_ context.Context, _ Fence, p []byte) error {
	select {
	case q.entered <- struct{}{}:
	default:
	}
	<-q.release
	q.mu.Lock()
	defer q.mu.Unlock()
	q.got.Write(p)
	return nil
}

func TestTheToolsOutputDoesNotWaitForASlowLogAppend(t *testing.T) {
	t.Parallel()
	q := &slowLogQueue{entered: make(chan struct{}, 1), release: make(chan struct{})}
	l := &jobLog{q: q, fence: Fence{JobID: "j", Attempt: 1}, send: make(chan struct{}, 1)}
	var want bytes.Buffer
	write := func(b byte, n int) {
		p := bytes.Repeat([]byte{b}, n)
		want.Write(p)
		l.Write(p)
	}

	go write('a', logChunk) // a full chunk: its append starts and hangs
	select {
	case <-q.entered:
	case <-time.After(20 * time.Second):
		t.Fatal("a full chunk was not appended")
	}
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		for _, b := range []byte("bcd") {
			write(b, logChunk)
		}
	}()
	select {
	case <-wrote:
	case <-time.After(20 * time.Second):
		t.Fatal("writing output waited for a log append under way")
	}

	close(q.release)
	l.flush(true)
	if !bytes.Equal(q.got.Bytes(), want.Bytes()) {
		t.Fatalf("the log got %d bytes, not the %d written in their order", q.got.Len(), want.Len())
	}
}
