package worker

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
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

// recordingLogQueue keeps what is appended.
type recordingLogQueue struct {
	Queue // only AppendLog is called
	got   bytes.Buffer
}

func (q *recordingLogQueue) AppendLog(_ context.Context, _ Fence, p []byte) error {
	q.got.Write(p)
	return nil
}

func TestTheRunLogNamesPathsRelativeToTheWorkFolder(t *testing.T) {
	t.Parallel()
	abs := filepath.Join(t.TempDir(), "data", "work", "J-1")
	hide := []string{abs + "/", "data/work/J-1/"}
	tests := []struct {
		name   string
		writes []string // each followed by a flush; the last flush is final
		want   string
	}{
		{"absolute", []string{"writing " + abs + "/out/a.cif\n"}, "writing ./out/a.cif\n"},
		{"relative", []string{"reading data/work/J-1/in.yaml\n"}, "reading ./in.yaml\n"},
		{"split across flushes", []string{"at " + abs[:7], abs[7:] + "/x\n"}, "at ./x\n"},
		{"split at the slash", []string{"at " + abs, "/x\n"}, "at ./x\n"},
		{"a near miss is kept", []string{"at " + abs[:len(abs)-1] + "2/x\n"}, "at " + abs[:len(abs)-1] + "2/x\n"},
		{"held back until the end", []string{"ends with " + abs[:5]}, "ends with " + abs[:5]},
		{"other paths untouched", []string{"/usr/lib/python3/site.py\n"}, "/usr/lib/python3/site.py\n"},
	}
	for _, tt := range tests {
		q := &recordingLogQueue{}
		l := &jobLog{q: q, fence: Fence{JobID: "J", Attempt: 1}, send: make(chan struct{}, 1), hide: hide}
		for i, w := range tt.writes {
			l.Write([]byte(w))
			l.flush(i == len(tt.writes)-1)
		}
		if got := q.got.String(); got != tt.want {
			t.Errorf("%s: the log reads %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestWorkFolderNames(t *testing.T) {
	t.Parallel()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if got := workFolderNames("/data/work/J-1"); !slices.Equal(got, []string{"/data/work/J-1/"}) {
		t.Errorf("absolute: %q", got)
	}
	if got := workFolderNames("data/work/J-1/"); !slices.Equal(got, []string{wd + "/data/work/J-1/", "data/work/J-1/"}) {
		t.Errorf("relative: %q", got)
	}
}
