// Package artifacttest is the conformance suite that every artifact.Store passes, and with
// it artifact.Shared (shared.go): the local folder store and the object store. A store's
// own test calls Run with a function that opens a fresh, empty store for one subtest.
//
// It imports only artifact and job of chaperone's packages, and is imported only by tests.
package artifacttest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	iofs "io/fs"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/chaperone-bio/chaperone/artifact"
	"github.com/chaperone-bio/chaperone/job"
)

// Run runs the whole suite. open must return a store, an artifact.Shared too, that no
// other subtest uses (or at least whose job ids cannot collide: the suite always uses
// fresh ids, and its shared files none) and arrange its clean-up with t.Cleanup.
// Subtests run in parallel.
func Run(t *testing.T, open func(t *testing.T) artifact.Store) {
	tests := []suiteTest{
		{"RoundTrip", testRoundTrip},
		{"Large", testLarge},
		{"Overwrite", testOverwrite},
		{"FailedPutLeavesNothing", testFailedPut},
		{"CanceledPut", testCanceledPut},
		{"ConcurrentPutAndOpen", testConcurrentPutOpen},
		{"AttemptIsolation", testAttemptIsolation},
		{"UnsafePaths", testUnsafePaths},
		{"InvalidJobIDs", testInvalidJobIDs},
		{"NotFound", testNotFound},
		{"LogMissingIsEmpty", testLogMissing},
		{"LogAppendOrder", testLogOrder},
		{"LogAppendsSentAgain", testLogSentAgain},
		{"LogAttemptsInOrder", testLogAttempts},
		{"LogConcurrentSends", testLogConcurrent},
		{"LogReadWhileAppending", testLogReadWhileAppending},
		{"SeekAndStat", testSeekAndStat},
		{"LogSnapshotSeekAndStat", testLogSnapshot},
		{"DeleteAttempt", testDeleteAttempt},
		{"DeleteJob", testDeleteJob},
		{"Jobs", testJobs},
	}
	tests = append(tests, sharedTests...)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.fn(t, open(t))
		})
	}
}

type suiteTest struct {
	name string
	fn   func(t *testing.T, s artifact.Store)
}

func testRoundTrip(t *testing.T, s artifact.Store) {
	ctx := t.Context()
	id := job.NewID()
	files := map[string]string{
		"t1.cif":                             "data_t1\n#\n",
		"t1/confidence_t1_model_0.json":      `{"confidence_score": 0.9}`,
		"t1/pae_t1_model_0.npz":              "\x00\x01binary\xff",
		"a/b/c/d.txt":                        "deep",
		"empty.txt":                          "",
		"name with spaces (1).pdb":           "ATOM",
		"résumé-ünïcode.json":                "{}",
		"t1_sample_1.cif":                    "sample",
		"design/design_0001/structure.cif":   "design",
		"embeddings.parquet":                 "PAR1",
		".hidden":                            "dot file",
		"t1/..x":                             "not a dot segment",
		"t1/x..":                             "nor this",
		"t1/confidence_t1_model_0.json.tmp1": "similar name",
	}
	for p, content := range files {
		MustPut(t, s, id, 1, p, content)
	}
	for p, content := range files {
		if got := MustRead(t, s, id, 1, p); got != content {
			t.Errorf("Open(%q) = %q, want %q", p, got, content)
		}
	}
	// A folder that exists only because nested files are in it is not a file.
	for _, p := range []string{"t1", "a/b", "design"} {
		if _, err := s.Open(ctx, id, 1, p); !errors.Is(err, artifact.ErrNotFound) {
			t.Errorf("Open(folder %q) err = %v, want ErrNotFound", p, err)
		}
	}
}

func testLarge(t *testing.T, s artifact.Store) {
	const size = 20 << 20
	id := job.NewID()
	want := sha256.New()
	if err := s.Put(t.Context(), id, 1, "big.npz", io.TeeReader(pattern(size), want)); err != nil {
		t.Fatalf("Put: %v", err)
	}
	rc, err := s.Open(t.Context(), id, 1, "big.npz")
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer rc.Close()
	got := sha256.New()
	n, err := io.Copy(got, rc)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if n != size || !bytes.Equal(got.Sum(nil), want.Sum(nil)) {
		t.Fatalf("read back %d bytes (sha256 match %v), want %d identical bytes",
			n, bytes.Equal(got.Sum(nil), want.Sum(nil)), size)
	}
}

func testOverwrite(t *testing.T, s artifact.Store) {
	id := job.NewID()
	MustPut(t, s, id, 1, "t1.cif", "a long first version")
	// A reader opened before the overwrite keeps the version it opened (or at least never
	// sees a mix): the shorter second version must not leave the first one's tail behind.
	old, err := s.Open(t.Context(), id, 1, "t1.cif")
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	MustPut(t, s, id, 1, "t1.cif", "short")
	if got := MustRead(t, s, id, 1, "t1.cif"); got != "short" {
		t.Errorf("after overwrite: %q, want %q", got, "short")
	}
	b, err := io.ReadAll(old)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(b); got != "a long first version" && got != "short" {
		t.Errorf("reader opened before overwrite read %q, want one whole version", got)
	}
}

func testFailedPut(t *testing.T, s artifact.Store) {
	id := job.NewID()
	boom := errors.New("reader broke")
	r := io.MultiReader(strings.NewReader(strings.Repeat("partial ", 1000)), errReader{boom})
	if err := s.Put(t.Context(), id, 1, "new.cif", r); err == nil {
		t.Fatal("Put with a failing reader succeeded")
	}
	if _, err := s.Open(t.Context(), id, 1, "new.cif"); !errors.Is(err, artifact.ErrNotFound) {
		t.Errorf("failed Put left a file behind: Open err = %v", err)
	}
	MustPut(t, s, id, 1, "old.cif", "good")
	r = io.MultiReader(strings.NewReader("bad"), errReader{boom})
	if err := s.Put(t.Context(), id, 1, "old.cif", r); err == nil {
		t.Fatal("Put with a failing reader succeeded")
	}
	if got := MustRead(t, s, id, 1, "old.cif"); got != "good" {
		t.Errorf("failed overwrite changed the file to %q", got)
	}
}

func testCanceledPut(t *testing.T, s artifact.Store) {
	id := job.NewID()
	ctx, cancel := context.WithCancel(t.Context())
	// The reader cancels part way, as a client hanging up mid-upload would.
	r := io.MultiReader(strings.NewReader("first part "), cancelReader{cancel}, pattern(1<<20))
	err := s.Put(ctx, id, 1, "t1.cif", r)
	if err == nil {
		t.Fatal("Put succeeded after its context was canceled")
	}
	if _, err := s.Open(t.Context(), id, 1, "t1.cif"); !errors.Is(err, artifact.ErrNotFound) {
		t.Errorf("canceled Put left a file behind: Open err = %v", err)
	}
}

// testConcurrentPutOpen overwrites one file from several goroutines while others read it:
// every read must be one whole version.
func testConcurrentPutOpen(t *testing.T, s artifact.Store) {
	id := job.NewID()
	version := func(i int) string { return strings.Repeat(string(rune('a'+i)), 50_000+i*10_000) }
	MustPut(t, s, id, 1, "t1.cif", version(0))
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for i := 1; i <= 4; i++ {
		wg.Go(func() {
			for range 5 {
				if err := s.Put(t.Context(), id, 1, "t1.cif", strings.NewReader(version(i))); err != nil {
					t.Errorf("Put: %v", err)
					return
				}
			}
		})
	}
	var readers sync.WaitGroup
	for range 4 {
		readers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				got := MustRead(t, s, id, 1, "t1.cif")
				if len(got) == 0 || got != version(int(got[0]-'a')) {
					t.Errorf("read a torn file: %d bytes starting %q", len(got), got[:min(len(got), 10)])
					return
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	readers.Wait()
}

func testAttemptIsolation(t *testing.T, s artifact.Store) {
	ctx := t.Context()
	id, other := job.NewID(), job.NewID()
	MustPut(t, s, id, 1, "t1.cif", "attempt 1")
	MustPut(t, s, id, 2, "t1.cif", "attempt 2")
	MustPut(t, s, other, 1, "t1.cif", "other job")
	if got := MustRead(t, s, id, 1, "t1.cif"); got != "attempt 1" {
		t.Errorf("attempt 1 reads %q", got)
	}
	if got := MustRead(t, s, id, 2, "t1.cif"); got != "attempt 2" {
		t.Errorf("attempt 2 reads %q", got)
	}
	if got := MustRead(t, s, other, 1, "t1.cif"); got != "other job" {
		t.Errorf("other job reads %q", got)
	}
	if _, err := s.Open(ctx, id, 3, "t1.cif"); !errors.Is(err, artifact.ErrNotFound) {
		t.Errorf("attempt 3 Open err = %v, want ErrNotFound", err)
	}
}

// UnsafePaths are paths every store must refuse: each would be ambiguous or could name
// something outside the attempt.
var UnsafePaths = []string{
	"",
	"/",
	"/etc/passwd",
	"..",
	"../t1.cif",
	"../../run.log",
	"t1/../../attempt-2/t1.cif",
	"t1/..",
	".",
	"./t1.cif",
	"t1/./x.json",
	"t1//x.json",
	"t1/",
	"t1\\x.json",
	"..\\..\\x",
	"t1\x00.cif",
	"t1\n.cif",
	strings.Repeat("a", artifact.MaxPathLen+1),
}

func testUnsafePaths(t *testing.T, s artifact.Store) {
	ctx := t.Context()
	id := job.NewID()
	// Files an escape would reach if a store resolved the names naively.
	MustPut(t, s, id, 2, "t1.cif", "attempt 2")
	MustPut(t, s, id, 1, "t1/x.json", "x")
	for _, p := range UnsafePaths {
		if err := s.Put(ctx, id, 1, p, strings.NewReader("evil")); err == nil {
			t.Errorf("Put(%q) succeeded", p)
		}
		if rc, err := s.Open(ctx, id, 1, p); !errors.Is(err, artifact.ErrNotFound) {
			t.Errorf("Open(%q) err = %v, want ErrNotFound", p, err)
			if rc != nil {
				rc.Close()
			}
		}
	}
	if got := MustRead(t, s, id, 2, "t1.cif"); got != "attempt 2" {
		t.Errorf("attempt 2 file changed to %q", got)
	}
	if got := MustRead(t, s, id, 1, "t1/x.json"); got != "x" {
		t.Errorf("t1/x.json changed to %q", got)
	}
	// The names an unsafe path would collapse to were not written either.
	for _, p := range []string{"etc/passwd", "passwd", "x.json", "t1.cif"} {
		if _, err := s.Open(ctx, id, 1, p); !errors.Is(err, artifact.ErrNotFound) {
			t.Errorf("Open(%q) after unsafe Puts: err = %v, want ErrNotFound", p, err)
		}
	}
}

// InvalidJobIDs are job ids every store must refuse, so an id can never name a folder or
// prefix other than one job's.
var InvalidJobIDs = []string{
	"",
	".",
	"..",
	"../x",
	"/",
	strings.Repeat("A", 32),
	strings.Repeat("a", 31),
	strings.Repeat("a", 33),
	strings.Repeat("a", 31) + "/",
	strings.Repeat("0", 30) + "..",
	strings.Repeat("a", 31) + "\x00",
}

func testInvalidJobIDs(t *testing.T, s artifact.Store) {
	ctx := t.Context()
	keep := job.NewID()
	MustPut(t, s, keep, 1, "t1.cif", "keep")
	MustAppendLog(t, s, keep, 1, "keep\n")
	for _, id := range InvalidJobIDs {
		if err := s.Put(ctx, id, 1, "t1.cif", strings.NewReader("evil")); err == nil {
			t.Errorf("Put(job %q) succeeded", id)
		}
		if _, err := s.Open(ctx, id, 1, "t1.cif"); !errors.Is(err, artifact.ErrNotFound) {
			t.Errorf("Open(job %q) err = %v, want ErrNotFound", id, err)
		}
		if _, err := s.AppendLog(ctx, id, 1, 0, []byte("evil")); err == nil {
			t.Errorf("AppendLog(job %q) succeeded", id)
		}
		if rc, err := s.OpenLog(ctx, id); err == nil {
			rc.Close()
			t.Errorf("OpenLog(job %q) succeeded", id)
		}
		if err := s.DeleteAttempt(ctx, id, 1); err == nil {
			t.Errorf("DeleteAttempt(job %q) succeeded", id)
		}
		if err := s.DeleteJob(ctx, id); err == nil {
			t.Errorf("DeleteJob(job %q) succeeded", id)
		}
	}
	for _, attempt := range []int{0, -1} {
		if err := s.Put(ctx, keep, attempt, "t1.cif", strings.NewReader("evil")); err == nil {
			t.Errorf("Put(attempt %d) succeeded", attempt)
		}
		if err := s.DeleteAttempt(ctx, keep, attempt); err == nil {
			t.Errorf("DeleteAttempt(attempt %d) succeeded", attempt)
		}
		if _, err := s.AppendLog(ctx, keep, attempt, 0, []byte("evil")); err == nil {
			t.Errorf("AppendLog(attempt %d) succeeded", attempt)
		}
	}
	if _, err := s.AppendLog(ctx, keep, 1, -1, []byte("evil")); err == nil {
		t.Error("AppendLog at offset -1 succeeded")
	}
	if got := MustRead(t, s, keep, 1, "t1.cif"); got != "keep" {
		t.Errorf("other job's file changed to %q", got)
	}
	if got := MustReadLog(t, s, keep); got != "keep\n" {
		t.Errorf("other job's log changed to %q", got)
	}
}

func testNotFound(t *testing.T, s artifact.Store) {
	ctx := t.Context()
	id := job.NewID()
	if _, err := s.Open(ctx, id, 1, "t1.cif"); !errors.Is(err, artifact.ErrNotFound) {
		t.Errorf("Open on an unknown job: err = %v, want ErrNotFound", err)
	}
	MustPut(t, s, id, 1, "t1.cif", "x")
	for _, p := range []string{"t2.cif", "T1.cif", "t1.cif/x", "t1", "run.log"} {
		if _, err := s.Open(ctx, id, 1, p); !errors.Is(err, artifact.ErrNotFound) {
			t.Errorf("Open(%q) err = %v, want ErrNotFound", p, err)
		}
	}
	// Deleting what is not there is not an error: deletes are retried and swept.
	if err := s.DeleteAttempt(ctx, job.NewID(), 1); err != nil {
		t.Errorf("DeleteAttempt of an unknown job: %v", err)
	}
	if err := s.DeleteJob(ctx, job.NewID()); err != nil {
		t.Errorf("DeleteJob of an unknown job: %v", err)
	}
}

// testSeekAndStat covers what range requests need of a File: a size, a seek to any
// offset, and a size and modification time that stay the same from one Open to the next,
// since the HTTP layer builds its ETag from them.
func testSeekAndStat(t *testing.T, s artifact.Store) {
	id := job.NewID()
	const content = "0123456789abcdef"
	MustPut(t, s, id, 1, "t1.cif", content)
	stat := func() iofs.FileInfo {
		t.Helper()
		f, err := s.Open(t.Context(), id, 1, "t1.cif")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			t.Fatalf("Stat: %v", err)
		}
		return fi
	}
	first, second := stat(), stat()
	if first.Size() != int64(len(content)) {
		t.Errorf("Stat().Size() = %d, want %d", first.Size(), len(content))
	}
	if second.Size() != first.Size() || !second.ModTime().Equal(first.ModTime()) {
		t.Errorf("two Opens of an unchanged file stat differently: %d %v, then %d %v",
			first.Size(), first.ModTime(), second.Size(), second.ModTime())
	}

	f, err := s.Open(t.Context(), id, 1, "t1.cif")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, off := range []int64{10, 0, 16, 3} {
		if pos, err := f.Seek(off, io.SeekStart); err != nil || pos != off {
			t.Fatalf("Seek(%d) = %d, %v", off, pos, err)
		}
		if got := readAll(t, f); got != content[off:] {
			t.Errorf("read after Seek(%d) = %q, want %q", off, got, content[off:])
		}
	}
	if end, err := f.Seek(0, io.SeekEnd); err != nil || end != int64(len(content)) {
		t.Errorf("Seek(0, SeekEnd) = %d, %v; want %d", end, err, len(content))
	}
}

func readAll(t *testing.T, r io.Reader) string {
	t.Helper()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return string(b)
}

func testDeleteAttempt(t *testing.T, s artifact.Store) {
	ctx := t.Context()
	id := job.NewID()
	MustPut(t, s, id, 1, "t1.cif", "one")
	MustPut(t, s, id, 1, "t1/confidence.json", "one")
	MustPut(t, s, id, 2, "t1.cif", "two")
	MustAppendLog(t, s, id, 1, "log\n")
	if err := s.DeleteAttempt(ctx, id, 1); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"t1.cif", "t1/confidence.json"} {
		if _, err := s.Open(ctx, id, 1, p); !errors.Is(err, artifact.ErrNotFound) {
			t.Errorf("after DeleteAttempt, Open(%q) err = %v, want ErrNotFound", p, err)
		}
	}
	if got := MustRead(t, s, id, 2, "t1.cif"); got != "two" {
		t.Errorf("attempt 2 reads %q", got)
	}
	if got := MustReadLog(t, s, id); got != "log\n" {
		t.Errorf("log reads %q", got)
	}
	if err := s.DeleteAttempt(ctx, id, 1); err != nil {
		t.Errorf("second DeleteAttempt: %v", err)
	}
	// The attempt can be written again (a retry reusing the number after a sweep).
	MustPut(t, s, id, 1, "t1.cif", "again")
	if got := MustRead(t, s, id, 1, "t1.cif"); got != "again" {
		t.Errorf("rewritten attempt 1 reads %q", got)
	}
}

func testDeleteJob(t *testing.T, s artifact.Store) {
	ctx := t.Context()
	id, other := job.NewID(), job.NewID()
	for _, j := range []string{id, other} {
		MustPut(t, s, j, 1, "t1.cif", "x")
		MustPut(t, s, j, 2, "t1/pae.npz", "y")
		MustAppendLog(t, s, j, 2, "log\n")
	}
	if err := s.DeleteJob(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Open(ctx, id, 1, "t1.cif"); !errors.Is(err, artifact.ErrNotFound) {
		t.Errorf("after DeleteJob, Open err = %v, want ErrNotFound", err)
	}
	if _, err := s.Open(ctx, id, 2, "t1/pae.npz"); !errors.Is(err, artifact.ErrNotFound) {
		t.Errorf("after DeleteJob, Open err = %v, want ErrNotFound", err)
	}
	if got := MustReadLog(t, s, id); got != "" {
		t.Errorf("after DeleteJob, log reads %q", got)
	}
	if ids := MustJobs(t, s); slices.Contains(ids, id) {
		t.Errorf("after DeleteJob, Jobs still lists it")
	}
	if err := s.DeleteJob(ctx, id); err != nil {
		t.Errorf("second DeleteJob: %v", err)
	}
	if got := MustRead(t, s, other, 2, "t1/pae.npz"); got != "y" {
		t.Errorf("other job's file reads %q", got)
	}
	if got := MustReadLog(t, s, other); got != "log\n" {
		t.Errorf("other job's log reads %q", got)
	}
}

func testJobs(t *testing.T, s artifact.Store) {
	files, logOnly, both := job.NewID(), job.NewID(), job.NewID()
	MustPut(t, s, files, 1, "t1.cif", "x")
	MustPut(t, s, both, 3, "a/b.json", "x")
	for _, id := range []string{logOnly, both} {
		MustAppendLog(t, s, id, 1, "log\n")
	}
	ids := MustJobs(t, s)
	for _, id := range []string{files, logOnly, both} {
		if !slices.Contains(ids, id) {
			t.Errorf("Jobs = %v, missing %s", ids, id)
		}
	}
	// A store may be shared (a bucket prefix, a folder), so other ids may be listed; the
	// ones it lists must all be job ids, listed once.
	seen := map[string]bool{}
	for _, id := range ids {
		if !job.ValidID(id) || seen[id] {
			t.Errorf("Jobs lists %q (valid %v, repeated %v)", id, job.ValidID(id), seen[id])
		}
		seen[id] = true
	}
}

// MustPut stores content or fails the test.
func MustPut(t testing.TB, s artifact.Store, jobID string, attempt int, p, content string) {
	t.Helper()
	if err := s.Put(t.Context(), jobID, attempt, p, strings.NewReader(content)); err != nil {
		t.Fatalf("Put(%q): %v", p, err)
	}
}

// MustRead returns a stored file's content or fails the test.
func MustRead(t testing.TB, s artifact.Store, jobID string, attempt int, p string) string {
	t.Helper()
	rc, err := s.Open(t.Context(), jobID, attempt, p)
	if err != nil {
		t.Fatalf("Open(%q): %v", p, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read %q: %v", p, err)
	}
	return string(b)
}

// MustJobs lists the store's jobs or fails the test.
func MustJobs(t testing.TB, s artifact.Store) []string {
	t.Helper()
	ids, err := s.Jobs(t.Context())
	if err != nil {
		t.Fatalf("Jobs: %v", err)
	}
	return ids
}

// pattern returns n bytes of a non-repeating-looking sequence without holding them all.
func pattern(n int64) io.Reader {
	return io.LimitReader(&xorshift{state: 0x9E3779B97F4A7C15}, n)
}

type xorshift struct{ state uint64 }

func (x *xorshift) Read(p []byte) (int, error) {
	for i := range p {
		x.state ^= x.state << 13
		x.state ^= x.state >> 7
		x.state ^= x.state << 17
		p[i] = byte(x.state)
	}
	return len(p), nil
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// cancelReader cancels a context when read, then reads as empty.
type cancelReader struct{ cancel context.CancelFunc }

func (r cancelReader) Read([]byte) (int, error) {
	r.cancel()
	return 0, io.EOF
}
