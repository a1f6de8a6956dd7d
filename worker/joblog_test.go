package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// testJobLog is the log of attempt 1 of job J through q, whose lease lasts lease more.
func testJobLog(q Queue, hide []string, log *slog.Logger, lease time.Duration) *jobLog {
	l := &jobLog{q: q, fence: Fence{JobID: "J", Attempt: 1}, log: log, send: make(chan struct{}, 1), hide: hide}
	l.renewed(time.Now().Add(lease))
	return l
}

// slowLogQueue holds every AppendLog until released, as a slow network would.
type slowLogQueue struct {
	Queue                 // only AppendLog is called
	entered chan struct{} // receives when an append begins
	release chan struct{} // closed to let appends finish
	mu      sync.Mutex
	got     bytes.Buffer
}

func (q *slowLogQueue) AppendLog(_ context.Context, _ Fence, _ int64, p []byte) error {
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
	l := testJobLog(q, nil, slog.New(slog.DiscardHandler), time.Minute)
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

func (q *recordingLogQueue) AppendLog(_ context.Context, _ Fence, _ int64, p []byte) error {
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
		l := testJobLog(q, hide, slog.New(slog.DiscardHandler), time.Minute)
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

// flakyServer keeps an attempt's output as the server does, each byte once by its offset,
// and fails the appends that fail says to: before they land, or after, as a server that
// dies before it answers.
type flakyServer struct {
	Queue // only AppendLog is called
	fail  func(call int) (land bool, err error)
	mu    sync.Mutex
	calls int
	got   []byte
}

func (s *flakyServer) AppendLog(_ context.Context, _ Fence, offset int64, p []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	land, err := s.fail(s.calls)
	if !land {
		return err
	}
	held := int64(len(s.got))
	if offset > held {
		return fmt.Errorf("output at %d, past the %d bytes held", offset, held)
	}
	if held-offset < int64(len(p)) {
		s.got = append(s.got, p[held-offset:]...)
	}
	return err
}

var errGone = errors.New("the server went away")

// TestFailedAppendsAreSentAgainInOrder: output whose append failed is sent again by the
// next flush, before what came after it, and lands once, whether the failed append never
// reached the server or reached it and lost its answer.
func TestFailedAppendsAreSentAgainInOrder(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		fail func(call int) (land bool, err error)
	}{
		{"refused", func(call int) (bool, error) {
			if call <= 12 && call%3 != 0 {
				return false, errGone
			}
			return true, nil
		}},
		{"answer lost", func(call int) (bool, error) {
			if call <= 12 && call%2 == 1 {
				return true, errGone
			}
			return true, nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := &flakyServer{fail: tc.fail}
			l := testJobLog(q, nil, slog.New(slog.DiscardHandler), time.Minute)
			var want bytes.Buffer
			for i := range 20 {
				line := fmt.Sprintf("line %d\n", i)
				want.WriteString(line)
				l.Write([]byte(line))
				l.flush(false)
			}
			for range 3 { // whatever the last flushes of the job left
				l.flush(false)
			}
			l.flush(true)
			if got := string(q.got); got != want.String() {
				t.Errorf("the server holds %q, want %q", got, want.String())
			}
		})
	}
}

// TestTheWorkersOwnLogStaysJSON: a failing log append is said once per run of failures, in
// the worker's own (JSON) log, never through the default logger's plain text; and a last
// flush that cannot land within the lease says so there and gives up.
func TestTheWorkersOwnLogStaysJSON(t *testing.T) {
	var plain bytes.Buffer
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.NewTextHandler(&plain, nil)))
	var out bytes.Buffer
	q := &flakyServer{fail: func(int) (bool, error) { return false, errGone }}
	l := testJobLog(q, nil, slog.New(slog.NewJSONHandler(&out, nil)), 200*time.Millisecond)
	for i := range 5 {
		fmt.Fprintf(l, "line %d\n", i)
		l.flush(false)
	}
	l.flush(true)
	if plain.Len() != 0 {
		t.Errorf("the default logger wrote: %s", plain.String())
	}
	var lines []map[string]any
	for line := range strings.Lines(out.String()) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("a line of the worker's log is not JSON: %q", line)
		}
		lines = append(lines, m)
	}
	if len(lines) != 2 || lines[0]["level"] != "WARN" || lines[1]["level"] != "ERROR" {
		t.Errorf("the worker's log says %v; want one warning for the failing appends and one error for the last", lines)
	}
}
