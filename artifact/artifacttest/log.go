package artifacttest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/chaperone-bio/chaperone/artifact"
	"github.com/chaperone-bio/chaperone/job"
)

// The suite's tests of run logs: order, appends sent again, attempts, concurrency, reads
// while appends go on, snapshots.

func testLogMissing(t *testing.T, s artifact.Store) {
	id := job.NewID()
	if got := MustReadLog(t, s, id); got != "" {
		t.Errorf("missing log reads %q, want empty", got)
	}
	// Result files do not make a log appear.
	MustPut(t, s, id, 1, "t1.cif", "x")
	if got := MustReadLog(t, s, id); got != "" {
		t.Errorf("log of a job with files only reads %q, want empty", got)
	}
}

func testLogOrder(t *testing.T, s artifact.Store) {
	ctx := t.Context()
	id := job.NewID()
	var want strings.Builder
	for i := range 100 {
		line := fmt.Sprintf("line %d\n", i)
		if i%10 == 0 {
			line = fmt.Sprintf("part %d, ", i) // appends need not be whole lines
		}
		held, err := s.AppendLog(ctx, id, 1, int64(want.Len()), []byte(line))
		want.WriteString(line)
		if err != nil || held != int64(want.Len()) {
			t.Fatalf("append %d: holds %d (%v), want %d", i, held, err, want.Len())
		}
	}
	if held, err := s.AppendLog(ctx, id, 1, 0, nil); err != nil || held != int64(want.Len()) {
		t.Errorf("an empty append: holds %d (%v), want %d", held, err, want.Len())
	}
	if got := MustReadLog(t, s, id); got != want.String() {
		t.Errorf("log = %q, want %q", got, want.String())
	}
	// The log outlives the attempts' result files.
	MustPut(t, s, id, 1, "t1.cif", "x")
	if err := s.DeleteAttempt(ctx, id, 1); err != nil {
		t.Fatal(err)
	}
	if got := MustReadLog(t, s, id); got != want.String() {
		t.Errorf("DeleteAttempt changed the log")
	}
}

// testLogSentAgain: an append sent again, alone or with more after it, adds only what the
// store lacks; one that starts past what the store holds is refused, saying what it holds.
func testLogSentAgain(t *testing.T, s artifact.Store) {
	ctx := t.Context()
	id := job.NewID()
	for _, step := range []struct {
		offset int64
		p      string
		held   int64
		gap    bool
	}{
		{0, "a", 1, false},
		{0, "a", 1, false},   // sent again: the answer was lost
		{0, "ab", 2, false},  // sent again with more
		{1, "bcd", 4, false}, // part of it held
		{9, "x", 4, true},    // past the end
		{4, "", 4, false},    // asks what the store holds
		{2, "cd", 4, false},  // all of it held
		{4, "e\n", 6, false}, // goes on
	} {
		held, err := s.AppendLog(ctx, id, 1, step.offset, []byte(step.p))
		var gap *artifact.LogOffsetError
		if held != step.held || errors.As(err, &gap) != step.gap || (err != nil && !step.gap) || (step.gap && gap.Held != step.held) {
			t.Fatalf("AppendLog(%q at %d) = %d, %v; want %d, a gap: %v", step.p, step.offset, held, err, step.held, step.gap)
		}
	}
	if got := MustReadLog(t, s, id); got != "abcde\n" {
		t.Errorf("log = %q, want each byte once: %q", got, "abcde\n")
	}
}

// testLogAttempts: the log shows each attempt's output in attempt order, and once a later
// attempt's output has begun an earlier attempt's is closed, so that the log only grows
// at its end.
func testLogAttempts(t *testing.T, s artifact.Store) {
	ctx := t.Context()
	id := job.NewID()
	MustAppendLog(t, s, id, 1, "one\n")
	MustAppendLog(t, s, id, 1, "one more\n")
	MustAppendLog(t, s, id, 3, "three\n")
	if _, err := s.AppendLog(ctx, id, 1, 13, []byte("late\n")); !errors.Is(err, artifact.ErrLogClosed) {
		t.Errorf("attempt 1 after attempt 3 began: %v, want ErrLogClosed", err)
	}
	if _, err := s.AppendLog(ctx, id, 2, 0, []byte("two\n")); !errors.Is(err, artifact.ErrLogClosed) {
		t.Errorf("attempt 2 after attempt 3 began: %v, want ErrLogClosed", err)
	}
	MustAppendLog(t, s, id, 3, "three again\n")
	MustAppendLog(t, s, id, 4, "four\n")
	if got, want := MustReadLog(t, s, id), "one\none more\nthree\nthree again\nfour\n"; got != want {
		t.Errorf("log = %q, want %q", got, want)
	}
}

// sendRecords appends the records of one writer to attempt 1 of a job, each at its offset,
// as a worker does whose appends go through several servers: called from several
// goroutines at once, it is the same appends sent again, overlapping.
func sendRecords(t *testing.T, s artifact.Store, id string, records int) {
	var offset int64
	for i := range records {
		rec := logRecord(0, i)
		if _, err := s.AppendLog(t.Context(), id, 1, offset, rec); err != nil {
			t.Errorf("AppendLog: %v", err)
			return
		}
		offset += int64(len(rec))
	}
}

// testLogConcurrent: the same appends sent at once by several senders land once each, in
// order, whole.
func testLogConcurrent(t *testing.T, s artifact.Store) {
	const senders, records = 8, 100
	id := job.NewID()
	var wg sync.WaitGroup
	for range senders {
		wg.Go(func() { sendRecords(t, s, id, records) })
	}
	wg.Wait()
	if n := checkLog(t, MustReadLog(t, s, id), 1); n != records {
		t.Errorf("log holds %d records, want %d", n, records)
	}
}

// testLogReadWhileAppending reads the log over and over while appends go on. Each read
// must be a run of whole appends, in order: a prefix of the finished log.
func testLogReadWhileAppending(t *testing.T, s artifact.Store) {
	const senders, records = 2, 200
	id := job.NewID()
	var wg sync.WaitGroup
	for range senders {
		wg.Go(func() { sendRecords(t, s, id, records) })
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	var reads []string
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		reads = append(reads, MustReadLog(t, s, id))
	}
	final := MustReadLog(t, s, id)
	if n := checkLog(t, final, 1); n != records {
		t.Errorf("log holds %d records, want %d", n, records)
	}
	for _, r := range reads {
		if !strings.HasPrefix(final, r) {
			t.Fatalf("a read during appends (%d bytes) is not a prefix of the final log", len(r))
		}
		checkLog(t, r, 1)
	}
}

// testLogSnapshot: an opened log keeps the size it had when opened, seeks within it, and
// a missing log is an empty File.
func testLogSnapshot(t *testing.T, s artifact.Store) {
	ctx := t.Context()
	id := job.NewID()
	empty, err := s.OpenLog(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := empty.Stat(); err != nil || fi.Size() != 0 {
		t.Errorf("missing log: Stat() = %v, %v; want size 0", fi, err)
	}
	if got := readAll(t, empty); got != "" {
		t.Errorf("missing log reads %q", got)
	}
	empty.Close()

	MustAppendLog(t, s, id, 1, "first line\n")
	f, err := s.OpenLog(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	MustAppendLog(t, s, id, 1, "second line\n")
	fi, err := f.Stat()
	if err != nil || fi.Size() != int64(len("first line\n")) {
		t.Fatalf("Stat() of a log opened before an append = %v, %v; want the size when opened", fi, err)
	}
	if _, err := f.Seek(6, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, f); got != "line\n" {
		t.Errorf("read after Seek(6) = %q, want %q", got, "line\n")
	}
}

// MustAppendLog appends text to the output of one attempt of a job, after what the store
// holds of it, or fails the test.
func MustAppendLog(t testing.TB, s artifact.Store, jobID string, attempt int, text string) {
	t.Helper()
	held, err := s.AppendLog(t.Context(), jobID, attempt, 0, nil)
	if err == nil {
		_, err = s.AppendLog(t.Context(), jobID, attempt, held, []byte(text))
	}
	if err != nil {
		t.Fatalf("AppendLog: %v", err)
	}
}

// MustReadLog returns a job's log as it stands or fails the test.
func MustReadLog(t testing.TB, s artifact.Store, jobID string) string {
	t.Helper()
	rc, err := s.OpenLog(t.Context(), jobID)
	if err != nil {
		t.Fatalf("OpenLog: %v", err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read log: %v", err)
	}
	return string(b)
}

// logRecord is one append of writer w: several lines, each carrying the writer, the record
// number and a line number, padded to lengths that vary with i, so that an append that was
// split or interleaved with another shows up as a malformed or misordered line.
func logRecord(w, i int) []byte {
	var b bytes.Buffer
	lines := 1 + i%4
	for l := range lines {
		fmt.Fprintf(&b, "w%d r%04d l%d/%d %s\n", w, i, l, lines, strings.Repeat(string(rune('a'+w)), 10+(i*37)%500))
	}
	return b.Bytes()
}

// checkLog parses a log of logRecords and reports how many whole records it holds. It fails
// the test on a torn or out-of-order record.
func checkLog(t *testing.T, log string, writers int) int {
	t.Helper()
	next := make([]int, writers) // next record expected of each writer
	records := 0
	sc := bufio.NewScanner(strings.NewReader(log))
	sc.Buffer(nil, 1<<20)
	var cur []string // lines of the record being read
	for sc.Scan() {
		var w, i, l, lines int
		var pad string
		if _, err := fmt.Sscanf(sc.Text(), "w%d r%d l%d/%d %s", &w, &i, &l, &lines, &pad); err != nil || w < 0 || w >= writers {
			t.Fatalf("malformed log line %q", sc.Text())
		}
		if len(cur) != l {
			t.Fatalf("line %q: record interleaved with another", sc.Text())
		}
		cur = append(cur, sc.Text()+"\n")
		if l == lines-1 {
			if got, want := strings.Join(cur, ""), string(logRecord(w, i)); got != want {
				t.Fatalf("torn record: %q, want %q", got, want)
			}
			if i != next[w] {
				t.Fatalf("writer %d: record %d after %d: out of order", w, i, next[w]-1)
			}
			next[w]++
			records++
			cur = cur[:0]
		}
	}
	if len(cur) != 0 || (log != "" && !strings.HasSuffix(log, "\n")) {
		t.Fatalf("log ends inside a record: %q", log[max(0, len(log)-200):])
	}
	return records
}
