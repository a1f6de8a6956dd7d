// Package fs is the local-folder artifact store, the default of a single-machine server.
// It also serves several servers that share one POSIX filesystem.
//
// Layout under the root folder:
//
//	<root>/<jobID>/attempt-<n>/<path>   result files of attempt n
//	<root>/<jobID>/run-<n>.log          the run log: the output of attempt n (log.go)
//	<root>/<jobID>/run.log              the run log of every attempt, as servers before
//	                                    per-attempt logs wrote it; read, never written
//	<root>/.tmp/                        files being written by Put
//	<root>/shared/<name>                Shared files (shared.go), no job's: "shared" is no
//	                                    job id, so Jobs and DeleteJob never reach them
//
// Every name is checked before it reaches the filesystem (job ids with job.ValidID, paths
// with artifact.CheckPath), and all access goes through an os.Root, so that even a symlink
// planted under the root cannot lead a read or a delete outside it.
//
// It imports only job and artifact of chaperone's packages.
package fs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	iofs "io/fs"
	"os"
	"path"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/chaperone-bio/chaperone/artifact"
	"github.com/chaperone-bio/chaperone/job"
)

const (
	tmpDir = ".tmp"
	// staleTemp is how old a leftover temp file must be before Open removes it. Put removes
	// its own temp file on every failure, so only a crash leaves one; the margin keeps Open
	// from touching a file that another server sharing the folder is still writing.
	staleTemp = 24 * time.Hour

	// Job output may hold unpublished sequences: no access for other users.
	dirPerm  = 0o750
	filePerm = 0o640
)

// Store is an artifact.Store over a local folder. It is safe for concurrent use.
type Store struct {
	root *os.Root
	// logLocks serialise appends to a log, and a log's opening against its appends, so a
	// reader always sees whole appends. Striped by job id: a fixed set of locks needs no
	// clean-up as jobs come and go.
	logLocks [64]sync.Mutex
	seed     maphash.Seed
}

var _ artifact.Store = (*Store)(nil)

// Open opens (creating it if needed) the artifact folder at root.
func Open(root string) (*Store, error) {
	if err := os.MkdirAll(root, dirPerm); err != nil {
		return nil, fmt.Errorf("artifact folder: %w", err)
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("artifact folder: %w", err)
	}
	if err := r.MkdirAll(tmpDir, dirPerm); err != nil {
		r.Close()
		return nil, fmt.Errorf("artifact folder: %w", err)
	}
	s := &Store{root: r, seed: maphash.MakeSeed()}
	s.sweepTemp()
	return s, nil
}

// Close releases the folder handle. The Store must not be used afterwards.
func (s *Store) Close() error { return s.root.Close() }

// Put writes the file to a temp file first and renames it into place, so a reader sees
// the old file or the new one, never a part; the file and its folder are synced before
// Put returns, so a result reported complete survives a crash.
func (s *Store) Put(ctx context.Context, jobID string, attempt int, p string, r io.Reader) error {
	name, err := filePath(jobID, attempt, p)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	tmp := path.Join(tmpDir, jobID+"-"+randomHex())
	if err := s.writeTemp(ctx, tmp, r); err != nil {
		return fmt.Errorf("put %s: %w", p, err)
	}
	if err := s.replace(tmp, name); err != nil {
		return fmt.Errorf("put %s: %w", p, err)
	}
	return nil
}

// writeTemp writes r to the new file tmp and syncs it; on failure it removes tmp.
func (s *Store) writeTemp(ctx context.Context, tmp string, r io.Reader) error {
	f, err := s.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, filePerm)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, artifact.ContextReader(ctx, r))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		s.root.Remove(tmp)
	}
	return err
}

// replace renames the written file tmp to name, making name's folder if need be, and
// syncs the folder, so the rename survives a crash; on failure it removes tmp.
func (s *Store) replace(tmp, name string) error {
	dir := path.Dir(name)
	err := s.root.MkdirAll(dir, dirPerm)
	if err == nil {
		err = s.root.Rename(tmp, name)
	}
	if err != nil {
		s.root.Remove(tmp)
		return err
	}
	return s.syncDir(dir)
}

// Open returns the file, or an error wrapping artifact.ErrNotFound when it does not exist
// or its name is not one that Put could have written.
func (s *Store) Open(ctx context.Context, jobID string, attempt int, p string) (artifact.File, error) {
	name, err := filePath(jobID, attempt, p)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", artifact.ErrNotFound, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return s.openRegular(name, p)
}

// openRegular opens a regular file. Anything else is not found: a folder of nested results
// ("t1") exists on disk but is not a file the job wrote.
func (s *Store) openRegular(name, shown string) (artifact.File, error) {
	f, err := s.root.Open(name)
	if err != nil {
		if notExist(err) {
			return nil, fmt.Errorf("%w: %s", artifact.ErrNotFound, shown)
		}
		return nil, fmt.Errorf("open %s: %w", shown, err)
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%w: %s", artifact.ErrNotFound, shown)
	}
	return f, nil
}

// DeleteAttempt removes one attempt's files; an attempt with no files is not an error.
func (s *Store) DeleteAttempt(ctx context.Context, jobID string, attempt int) error {
	dir, err := attemptDir(jobID, attempt)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.root.RemoveAll(dir)
}

// DeleteJob removes the job's folder; a job with no files is not an error.
func (s *Store) DeleteJob(ctx context.Context, jobID string) error {
	if !job.ValidID(jobID) {
		return badJob(jobID)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// Hold the log lock so a delete does not race an append half way; an append that comes
	// after the delete recreates the folder, and Jobs lists it for the orphan sweep.
	mu := s.logLock(jobID)
	mu.Lock()
	defer mu.Unlock()
	return s.root.RemoveAll(jobID)
}

// Jobs lists the job folders, sorted. Anything else under the root is ignored.
func (s *Store) Jobs(ctx context.Context) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	entries, err := iofs.ReadDir(s.root.FS(), ".")
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	var ids []string
	for _, e := range entries {
		if e.IsDir() && job.ValidID(e.Name()) {
			ids = append(ids, e.Name())
		}
	}
	slices.Sort(ids)
	return ids, nil
}

func (s *Store) logLock(jobID string) *sync.Mutex {
	return &s.logLocks[maphash.String(s.seed, jobID)%uint64(len(s.logLocks))]
}

// syncDir makes a rename into dir durable.
func (s *Store) syncDir(dir string) error {
	d, err := s.root.Open(dir)
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

// sweepTemp removes temp files that a crash left behind. Best effort: a failure here only
// leaves disk space used.
func (s *Store) sweepTemp() {
	entries, err := iofs.ReadDir(s.root.FS(), tmpDir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > staleTemp {
			s.root.RemoveAll(path.Join(tmpDir, e.Name()))
		}
	}
}

func attemptDir(jobID string, attempt int) (string, error) {
	if !job.ValidID(jobID) {
		return "", badJob(jobID)
	}
	if attempt < 1 {
		return "", fmt.Errorf("%w: attempt %d: attempts count from 1", artifact.ErrInvalidPath, attempt)
	}
	return path.Join(jobID, "attempt-"+strconv.Itoa(attempt)), nil
}

func filePath(jobID string, attempt int, p string) (string, error) {
	dir, err := attemptDir(jobID, attempt)
	if err != nil {
		return "", err
	}
	if err := artifact.CheckPath(p); err != nil {
		return "", err
	}
	return path.Join(dir, p), nil
}

func badJob(jobID string) error {
	return fmt.Errorf("%w: job id %q", artifact.ErrInvalidPath, jobID)
}

// notExist also covers a path that runs through a file ("t1.cif/x"), which is missing too.
func notExist(err error) bool {
	return errors.Is(err, iofs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

func randomHex() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (Go ≥1.24)
	return hex.EncodeToString(b[:])
}
