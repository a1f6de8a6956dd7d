package fs_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

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
