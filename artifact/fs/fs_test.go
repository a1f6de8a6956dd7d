package fs_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/artifact"
	"github.com/chaperone-bio/chaperone/artifact/artifacttest"
	"github.com/chaperone-bio/chaperone/artifact/fs"
	"github.com/chaperone-bio/chaperone/job"
)

// MustOpen opens a store in a fresh temp folder, closed when the test ends.
func MustOpen(t *testing.T) *fs.Store {
	t.Helper()
	return mustOpenAt(t, t.TempDir())
}

func mustOpenAt(t *testing.T, root string) *fs.Store {
	t.Helper()
	s, err := fs.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	artifacttest.Run(t, func(t *testing.T) artifact.Store { return MustOpen(t) })
}

func TestLayout(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	s := mustOpenAt(t, root)
	id := job.NewID()
	artifacttest.MustPut(t, s, id, 2, "t1/confidence_t1_model_0.json", "{}")
	if _, err := s.AppendLog(t.Context(), id, 2, 0, []byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		filepath.Join(id, "attempt-2", "t1", "confidence_t1_model_0.json"): "{}",
		filepath.Join(id, "run-2.log"):                                     "hello\n",
	} {
		got, err := os.ReadFile(filepath.Join(root, name))
		if err != nil || string(got) != want {
			t.Errorf("%s = %q, %v; want %q", name, got, err, want)
		}
	}
	// Nothing is left in the temp folder after a successful Put.
	if left, _ := os.ReadDir(filepath.Join(root, ".tmp")); len(left) != 0 {
		t.Errorf("temp files left behind: %v", left)
	}
}

// TestSymlinkEscape plants symlinks under the root, as a compromised tool or a careless
// operator might, and checks that nothing is read or deleted through them.
func TestSymlinkEscape(t *testing.T) {
	t.Parallel()
	root, outside := t.TempDir(), t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := mustOpenAt(t, root)
	id := job.NewID()
	artifacttest.MustPut(t, s, id, 1, "t1.cif", "x")
	attempt := filepath.Join(root, id, "attempt-1")
	if err := os.Symlink(secret, filepath.Join(attempt, "link.cif")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(attempt, "dir")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"link.cif", "dir/secret.txt"} {
		if rc, err := s.Open(t.Context(), id, 1, p); err == nil {
			rc.Close()
			t.Errorf("Open(%q) followed a symlink out of the root", p)
		}
	}
	if err := s.Put(t.Context(), id, 1, "dir/new.txt", strings.NewReader("x")); err == nil {
		t.Errorf("Put through a symlink out of the root succeeded")
	}
	if err := s.DeleteJob(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(secret); err != nil {
		t.Errorf("DeleteJob removed a file outside the root: %v", err)
	}
}

func TestJobsIgnoresOtherFolders(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for _, name := range []string{"lost+found", "not-a-job", ".tmp"} {
		if err := os.MkdirAll(filepath.Join(root, name), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	stray := job.NewID()
	if err := os.WriteFile(filepath.Join(root, stray), nil, 0o644); err != nil { // a file, not a folder
		t.Fatal(err)
	}
	s := mustOpenAt(t, root)
	id := job.NewID()
	artifacttest.MustPut(t, s, id, 1, "t1.cif", "x")
	if ids := artifacttest.MustJobs(t, s); !slices.Equal(ids, []string{id}) {
		t.Errorf("Jobs = %v, want [%s]", ids, id)
	}
}

func TestOpenRejectsFileAsRoot(t *testing.T) {
	t.Parallel()
	f := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if s, err := fs.Open(f); err == nil {
		s.Close()
		t.Fatal("Open on a file succeeded")
	}
}

func TestInvalidPathError(t *testing.T) {
	t.Parallel()
	s := MustOpen(t)
	err := s.Put(t.Context(), job.NewID(), 1, "../x", strings.NewReader("x"))
	if !errors.Is(err, artifact.ErrInvalidPath) {
		t.Errorf("Put(../x) err = %v, want ErrInvalidPath", err)
	}
}

// TestALogOfEarlierServersIsReadFirst: the one run.log that servers before per-attempt
// logs wrote is read before the attempts' logs, and never written to.
func TestALogOfEarlierServersIsReadFirst(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	s := mustOpenAt(t, root)
	id := job.NewID()
	if err := os.MkdirAll(filepath.Join(root, id), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, id, "run.log"), []byte("attempt 1, before\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	artifacttest.MustAppendLog(t, s, id, 2, "attempt 2\n")
	if got, want := artifacttest.MustReadLog(t, s, id), "attempt 1, before\nattempt 2\n"; got != want {
		t.Errorf("log = %q, want %q", got, want)
	}
	if b, _ := os.ReadFile(filepath.Join(root, id, "run.log")); string(b) != "attempt 1, before\n" {
		t.Errorf("the old log was written to: %q", b)
	}
}

// TestSharedLayout: a shared file is <root>/shared/<name>, its temp files are written beside
// it and never listed, and ListShared removes those a crash left a day ago.
func TestSharedLayout(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	s := mustOpenAt(t, root)
	artifacttest.MustPutShared(t, s, "msa/v1/ab/abc.a3m", "a3m")
	folder := filepath.Join(root, "shared", "msa", "v1", "ab")
	if got, err := os.ReadFile(filepath.Join(folder, "abc.a3m")); err != nil || string(got) != "a3m" {
		t.Errorf("shared/msa/v1/ab/abc.a3m = %q, %v", got, err)
	}
	stale, fresh := filepath.Join(folder, "~put-crashed"), filepath.Join(folder, "~put-writing")
	for _, tmp := range []string{stale, fresh} {
		if err := os.WriteFile(tmp, []byte("part"), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	dayAgo := time.Now().Add(-25 * time.Hour)
	if err := os.Chtimes(stale, dayAgo, dayAgo); err != nil {
		t.Fatal(err)
	}
	files, err := s.ListShared(t.Context(), "msa/")
	if err != nil || len(files) != 1 || files[0].Name != "msa/v1/ab/abc.a3m" {
		t.Errorf("ListShared = %+v, %v; want only msa/v1/ab/abc.a3m", files, err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a temp file a day old is still there: %v", err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("a temp file being written was removed: %v", err)
	}
}

// TestSharedSymlinkEscape: a symlink planted among the shared files leads no read, list,
// write or delete outside the root.
func TestSharedSymlinkEscape(t *testing.T) {
	t.Parallel()
	root, outside := t.TempDir(), t.TempDir()
	secret := filepath.Join(outside, "secret")
	if err := os.WriteFile(secret, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := mustOpenAt(t, root)
	artifacttest.MustPutShared(t, s, "msa/x", "x")
	for link, target := range map[string]string{"msa/file": secret, "msa/dir": outside} {
		if err := os.Symlink(target, filepath.Join(root, "shared", link)); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"msa/file", "msa/dir/secret"} {
		if f, err := s.OpenShared(t.Context(), name); err == nil {
			f.Close()
			t.Errorf("OpenShared(%q) followed a symlink out of the root", name)
		}
	}
	if files, err := s.ListShared(t.Context(), ""); err != nil || len(files) != 1 || files[0].Name != "msa/x" {
		t.Errorf("ListShared = %+v, %v; want only msa/x", files, err)
	}
	if err := s.PutShared(t.Context(), "msa/dir/new", strings.NewReader("x")); err == nil {
		t.Errorf("PutShared through a symlink out of the root succeeded")
	}
	if err := s.DeleteShared(t.Context(), "msa/dir/secret"); err != nil {
		t.Logf("DeleteShared through a symlink: %v", err)
	}
	if _, err := os.Stat(secret); err != nil {
		t.Errorf("DeleteShared removed a file outside the root: %v", err)
	}
}
