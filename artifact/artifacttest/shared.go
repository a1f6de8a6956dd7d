package artifacttest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/artifact"
	"github.com/chaperone-bio/chaperone/job"
)

// The suite's tests of artifact.Shared, which every store of the suite implements too:
// round trips, atomic replacement, listing by prefix, deletes, names refused, and shared
// files kept apart from jobs.

var sharedTests = []suiteTest{
	{"SharedRoundTrip", shared(testSharedRoundTrip)},
	{"SharedReplaceIsAtomic", shared(testSharedReplaceIsAtomic)},
	{"SharedNotFound", shared(testSharedNotFound)},
	{"SharedList", shared(testSharedList)},
	{"SharedDelete", shared(testSharedDelete)},
	{"SharedBadNames", shared(testSharedBadNames)},
	{"SharedApartFromJobs", testSharedApartFromJobs},
}

func shared(fn func(t *testing.T, sh artifact.Shared)) func(t *testing.T, s artifact.Store) {
	return func(t *testing.T, s artifact.Store) { fn(t, mustShared(t, s)) }
}

func mustShared(t *testing.T, s artifact.Store) artifact.Shared {
	t.Helper()
	sh, ok := s.(artifact.Shared)
	if !ok {
		t.Fatalf("%T does not implement artifact.Shared", s)
	}
	return sh
}

// longSharedName is as long as a shared name may be, 512 bytes, in parts no filesystem
// finds too long.
var longSharedName = strings.Repeat(strings.Repeat("a", 63)+"/", 7) + strings.Repeat("b", 64)

func testSharedRoundTrip(t *testing.T, sh artifact.Shared) {
	files := map[string]string{
		"msa/v1/unpaired/ab/abcdef0123.a3m.gz": "\x1f\x8b\x08\x00binary\xff",
		"msa/v1/paired/ab/abcdef0123.a3m.gz":   "paired",
		"empty":                                "",
		"top.json":                             "{}",
		"a/..b/c.":                             "dots, but no dot parts",
		"x_y-z/0.9":                            "the rest of the alphabet",
		longSharedName:                         "the longest name",
	}
	for name, content := range files {
		MustPutShared(t, sh, name, content)
	}
	for name, content := range files {
		if got := MustReadShared(t, sh, name); got != content {
			t.Errorf("OpenShared(%q) reads %q, want %q", name, got, content)
		}
	}

	// A replacement, shorter than what it replaces, leaves nothing of it behind.
	const name = "msa/v1/paired/ab/abcdef0123.a3m.gz"
	MustPutShared(t, sh, name, "0123456789")
	if got := MustReadShared(t, sh, name); got != "0123456789" {
		t.Errorf("after replacing, OpenShared(%q) reads %q", name, got)
	}
	// The File seeks and states its size, as a job's file does.
	f, err := sh.OpenShared(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || fi.Size() != 10 {
		t.Errorf("Stat() = %v, %v; want size 10", fi, err)
	}
	for _, off := range []int64{7, 2, 10, 0} {
		if pos, err := f.Seek(off, io.SeekStart); err != nil || pos != off {
			t.Fatalf("Seek(%d) = %d, %v", off, pos, err)
		}
		if got := readAll(t, f); got != "0123456789"[off:] {
			t.Errorf("read after Seek(%d) = %q", off, got)
		}
	}
}

// testSharedReplaceIsAtomic replaces a file over and over with one of two large contents
// while readers open, read and list it: each read is one content whole, and the listing
// shows the one file at the size of one of them (no temp file, no half-written file).
func testSharedReplaceIsAtomic(t *testing.T, sh artifact.Shared) {
	const name = "msa/v1/unpaired/ab/abcdef.a3m.gz"
	ctx := t.Context()
	contents := [2][]byte{bytes.Repeat([]byte("a"), 1<<20), patternBytes(3 << 19)}
	MustPutShared(t, sh, name, string(contents[0]))

	var writers sync.WaitGroup
	for _, content := range contents {
		writers.Go(func() {
			for range 8 {
				if err := sh.PutShared(ctx, name, bytes.NewReader(content)); err != nil {
					t.Errorf("PutShared: %v", err)
					return
				}
			}
		})
	}
	written := make(chan struct{})
	go func() { writers.Wait(); close(written) }()

	var readers sync.WaitGroup
	for range 3 {
		readers.Go(func() {
			for {
				got, err := readShared(ctx, sh, name)
				if err != nil {
					t.Errorf("reading while replaced: %v", err)
					return
				}
				if !bytes.Equal(got, contents[0]) && !bytes.Equal(got, contents[1]) {
					t.Errorf("read %d bytes, neither content whole (%d or %d bytes)", len(got), len(contents[0]), len(contents[1]))
					return
				}
				files, err := sh.ListShared(ctx, "msa/")
				if err != nil || len(files) != 1 || files[0].Name != name ||
					(files[0].Size != int64(len(contents[0])) && files[0].Size != int64(len(contents[1]))) {
					t.Errorf("listing while replaced: %+v, %v; want %s at the size of one content", files, err, name)
					return
				}
				select {
				case <-written:
					return
				default:
				}
			}
		})
	}
	readers.Wait()
	<-written // readers that failed return early; the store must outlive the writers
}

func testSharedNotFound(t *testing.T, sh artifact.Shared) {
	ctx := t.Context()
	if _, err := sh.OpenShared(ctx, "msa/v1/none"); !errors.Is(err, artifact.ErrNotFound) {
		t.Errorf("OpenShared in an empty store: err = %v, want ErrNotFound", err)
	}
	MustPutShared(t, sh, "msa/v1/unpaired/ab/abc.a3m", "x")
	for _, name := range []string{
		"msa",                               // folders of other names are no files
		"msa/v1/unpaired/ab",                //
		"msa/v1/unpaired/ab/abc",            // the start of a name
		"msa/v1/unpaired/ab/abc.a3m.gz",     // more than a name
		"msa/v1/unpaired/ab/abc.a3m/x",      // a name taken for a folder
		"msa/v2/unpaired/ab/abc.a3m",        // another version
		"shared/msa/v1/unpaired/ab/abc.a3m", // the name as a store may lay it out
	} {
		if f, err := sh.OpenShared(ctx, name); !errors.Is(err, artifact.ErrNotFound) {
			t.Errorf("OpenShared(%q) err = %v, want ErrNotFound", name, err)
			if f != nil {
				f.Close()
			}
		}
	}
}

// modTimeSlack is how far a listed modification time may lie outside the time of its put:
// S3 keeps whole seconds, and a filesystem's clock ticks more coarsely than time.Now.
const modTimeSlack = time.Second

func testSharedList(t *testing.T, sh artifact.Shared) {
	files := map[string]string{
		"msa/v1/unpaired/ab/abc.a3m.gz": "1",
		"msa/v1/unpaired/cd/cde.a3m.gz": "22",
		"msa/v1/paired/ab/abc.a3m.gz":   "333",
		"msa/v10/x":                     "4444",
		"msb/y":                         "55555",
		"other":                         "666666",
	}
	start := time.Now()
	for name, content := range files {
		MustPutShared(t, sh, name, content)
	}
	end := time.Now()
	unpaired := []string{"msa/v1/unpaired/ab/abc.a3m.gz", "msa/v1/unpaired/cd/cde.a3m.gz"}
	v1 := append([]string{"msa/v1/paired/ab/abc.a3m.gz"}, unpaired...)
	for _, tt := range []struct {
		prefix string
		want   []string
	}{
		{"", []string{"msa/v10/x", "msb/y", "other", v1[0], v1[1], v1[2]}},
		{"msa/v1/unp", unpaired}, // a prefix may end part way through a part
		{"msa/v1/unpaired/", unpaired},
		{"msa/v1/unpaired", unpaired},
		{"msa/v1/", v1},
		{"msa/v1", append([]string{"msa/v10/x"}, v1...)},
		{"ms", []string{"msa/v10/x", "msb/y", v1[0], v1[1], v1[2]}},
		{"msa/v1/unpaired/ab/abc.a3m.gz", unpaired[:1]},
		{"msa/v1/unpaired/ab/ab", unpaired[:1]},
		{"o", []string{"other"}},
		{"msa/v1/unpaired/ab/abc.a3m.gz/", nil},
		{"msa/v1/unpaired/ab/x", nil},
		{"msa/v3/", nil},
		{"nothing", nil},
	} {
		listed, err := sh.ListShared(t.Context(), tt.prefix)
		if err != nil {
			t.Errorf("ListShared(%q): %v", tt.prefix, err)
			continue
		}
		var names []string
		for _, f := range listed {
			names = append(names, f.Name)
			if f.Size != int64(len(files[f.Name])) {
				t.Errorf("ListShared(%q): %s has size %d, want %d", tt.prefix, f.Name, f.Size, len(files[f.Name]))
			}
			if f.ModTime.Before(start.Add(-modTimeSlack)) || f.ModTime.After(end.Add(modTimeSlack)) {
				t.Errorf("ListShared(%q): %s modified %v, not within %v of its put (%v to %v)",
					tt.prefix, f.Name, f.ModTime, modTimeSlack, start, end)
			}
		}
		slices.Sort(names)
		if want := slices.Sorted(slices.Values(tt.want)); !slices.Equal(names, want) {
			t.Errorf("ListShared(%q) = %q, want %q", tt.prefix, names, want)
		}
	}
}

func testSharedDelete(t *testing.T, sh artifact.Shared) {
	ctx := t.Context()
	MustPutShared(t, sh, "msa/v1/a", "a")
	MustPutShared(t, sh, "msa/v1/b", "b")
	if err := sh.DeleteShared(ctx, "msa/v1/a"); err != nil {
		t.Fatalf("DeleteShared: %v", err)
	}
	if _, err := sh.OpenShared(ctx, "msa/v1/a"); !errors.Is(err, artifact.ErrNotFound) {
		t.Errorf("after DeleteShared, OpenShared err = %v, want ErrNotFound", err)
	}
	if names := mustListShared(t, sh, ""); !slices.Equal(names, []string{"msa/v1/b"}) {
		t.Errorf("after DeleteShared, ListShared = %q", names)
	}
	// Deleting what is not there is no error: a deleted file, a name never written, and a
	// folder of other names, which is no file (and is left alone).
	for _, name := range []string{"msa/v1/a", "no/such/folder/file", "msa/v1", "msa"} {
		if err := sh.DeleteShared(ctx, name); err != nil {
			t.Errorf("DeleteShared(%q) of no file: %v", name, err)
		}
	}
	if got := MustReadShared(t, sh, "msa/v1/b"); got != "b" {
		t.Errorf("the file left reads %q", got)
	}
	// A store may remove a folder that its last delete empties; the name can be written again.
	if err := sh.DeleteShared(ctx, "msa/v1/b"); err != nil {
		t.Fatalf("DeleteShared: %v", err)
	}
	if names := mustListShared(t, sh, ""); len(names) != 0 {
		t.Errorf("after deleting all, ListShared = %q", names)
	}
	MustPutShared(t, sh, "msa/v1/a", "again")
	if got := MustReadShared(t, sh, "msa/v1/a"); got != "again" {
		t.Errorf("rewritten after its delete, the file reads %q", got)
	}
}

// BadSharedNames are names every store refuses for a shared file. Prefix says that
// ListShared lists by it all the same: some good names start with it.
var BadSharedNames = []struct {
	Name   string
	Prefix bool
}{
	{"", true},
	{"/x", false},
	{"x/", true},
	{"a//b", false},
	{"../x", false},
	{"..", true}, // "..x" is a good name
	{".", true},
	{"a/./b", false},
	{"x/../y", false},
	{"A", false},
	{"msa/v1/abc.A3M", false},
	{"a b", false},
	{"x\\y", false},
	{"x\x00", false},
	{"é", false},
	{longSharedName + "c", false}, // 513 bytes
}

func testSharedBadNames(t *testing.T, sh artifact.Shared) {
	ctx := t.Context()
	MustPutShared(t, sh, "keep/file", "keep")
	for _, bad := range BadSharedNames {
		if err := sh.PutShared(ctx, bad.Name, strings.NewReader("evil")); !errors.Is(err, artifact.ErrInvalidPath) {
			t.Errorf("PutShared(%q) err = %v, want ErrInvalidPath", bad.Name, err)
		}
		if f, err := sh.OpenShared(ctx, bad.Name); !errors.Is(err, artifact.ErrInvalidPath) {
			t.Errorf("OpenShared(%q) err = %v, want ErrInvalidPath", bad.Name, err)
			if f != nil {
				f.Close()
			}
		}
		if err := sh.DeleteShared(ctx, bad.Name); !errors.Is(err, artifact.ErrInvalidPath) {
			t.Errorf("DeleteShared(%q) err = %v, want ErrInvalidPath", bad.Name, err)
		}
		files, err := sh.ListShared(ctx, bad.Name)
		if bad.Prefix && err != nil || !bad.Prefix && !errors.Is(err, artifact.ErrInvalidPath) {
			t.Errorf("ListShared(%q) err = %v; a prefix of good names: %v", bad.Name, err, bad.Prefix)
		}
		for _, f := range files {
			if !strings.HasPrefix(f.Name, bad.Name) {
				t.Errorf("ListShared(%q) lists %q", bad.Name, f.Name)
			}
		}
	}
	if names := mustListShared(t, sh, ""); !slices.Equal(names, []string{"keep/file"}) {
		t.Errorf("after bad names, ListShared = %q, want only keep/file", names)
	}
	if got := MustReadShared(t, sh, "keep/file"); got != "keep" {
		t.Errorf("keep/file reads %q", got)
	}
}

// testSharedApartFromJobs: shared files are no job's, even when their names spell job ids
// or a job's layout. Jobs never lists them, and deleting a job leaves them alone.
func testSharedApartFromJobs(t *testing.T, s artifact.Store) {
	sh := mustShared(t, s)
	ctx := t.Context()
	// id has files; the others are ids only shared names spell, as a file and as a folder.
	id, asFile, asFolder := job.NewID(), job.NewID(), job.NewID()
	MustPut(t, s, id, 1, "t1.cif", "job file")
	MustAppendLog(t, s, id, 1, "log\n")
	before := slices.Sorted(slices.Values(MustJobs(t, s)))
	names := []string{
		asFile,
		asFolder + "/attempt-1/t1.cif",
		asFolder + "/run-1.log",
		"jobs/" + asFolder + "/run-1.log",
		id + "/attempt-1/t1.cif",
		"jobs/" + id + "/attempt-1/t1.cif",
		"msa/v1/x",
	}
	for _, name := range names {
		MustPutShared(t, sh, name, name)
	}
	if after := slices.Sorted(slices.Values(MustJobs(t, s))); !slices.Equal(after, before) {
		t.Errorf("after PutShared, Jobs = %v, want %v as before", after, before)
	}
	for _, j := range []string{asFile, asFolder, id} {
		if err := s.DeleteJob(ctx, j); err != nil {
			t.Fatalf("DeleteJob(%s): %v", j, err)
		}
	}
	if got := mustListShared(t, sh, ""); !slices.Equal(got, slices.Sorted(slices.Values(names))) {
		t.Errorf("after DeleteJob, ListShared = %q, want %q", got, names)
	}
	for _, name := range names {
		if got := MustReadShared(t, sh, name); got != name {
			t.Errorf("after DeleteJob, %s reads %q", name, got)
		}
	}
}

// MustPutShared stores content under name or fails the test.
func MustPutShared(t testing.TB, sh artifact.Shared, name, content string) {
	t.Helper()
	if err := sh.PutShared(t.Context(), name, strings.NewReader(content)); err != nil {
		t.Fatalf("PutShared(%q): %v", name, err)
	}
}

// MustReadShared returns a shared file's content or fails the test.
func MustReadShared(t testing.TB, sh artifact.Shared, name string) string {
	t.Helper()
	b, err := readShared(t.Context(), sh, name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// mustListShared returns the sorted names ListShared lists by prefix, or fails the test.
func mustListShared(t testing.TB, sh artifact.Shared, prefix string) []string {
	t.Helper()
	files, err := sh.ListShared(t.Context(), prefix)
	if err != nil {
		t.Fatalf("ListShared(%q): %v", prefix, err)
	}
	var names []string
	for _, f := range files {
		names = append(names, f.Name)
	}
	slices.Sort(names)
	return names
}

// readShared reads a shared file whole, for goroutines that must not fail the test
// themselves.
func readShared(ctx context.Context, sh artifact.Shared, name string) ([]byte, error) {
	f, err := sh.OpenShared(ctx, name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	return b, nil
}

func patternBytes(n int64) []byte {
	b, _ := io.ReadAll(pattern(n))
	return b
}
