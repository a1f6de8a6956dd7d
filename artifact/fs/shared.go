package fs

import (
	"context"
	"fmt"
	"io"
	iofs "io/fs"
	"path"
	"strings"
	"time"

	"github.com/chaperone-bio/chaperone/artifact"
)

// Shared files live under <root>/shared, each at its name. A file is written to a temp
// file beside it and renamed into place, so that a reader opens the old file or the new
// one; the temp file stays in the file's own folder so that the rename never crosses a
// filesystem, even with the shared folder mounted apart from the jobs.
//
// Folders are never removed, even when a delete empties them: a PutShared makes the folder
// and then renames into it, and a delete in between that took the folder away would fail
// it. The names are few folders deep (the alignment cache fans out over 256 at most per
// kind), so the folders left are few.

const (
	sharedDir = "shared"
	// sharedTempPrefix starts the name of a file that PutShared is writing. '~' is in no
	// shared name (artifact.CheckSharedName), so a temp file is never taken for one.
	sharedTempPrefix = "~put-"
)

var _ artifact.Shared = (*Store)(nil)

func sharedPath(name string) (string, error) {
	if err := artifact.CheckSharedName(name); err != nil {
		return "", err
	}
	return path.Join(sharedDir, name), nil
}

// PutShared writes the file whole, synced before it returns, replacing any before it.
func (s *Store) PutShared(ctx context.Context, name string, r io.Reader) error {
	p, err := sharedPath(name)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	dir := path.Dir(p)
	if err := s.root.MkdirAll(dir, dirPerm); err != nil {
		return fmt.Errorf("put shared %s: %w", name, err)
	}
	tmp := path.Join(dir, sharedTempPrefix+randomHex())
	if err := s.writeTemp(ctx, tmp, r); err != nil {
		return fmt.Errorf("put shared %s: %w", name, err)
	}
	if err := s.replace(tmp, p); err != nil {
		return fmt.Errorf("put shared %s: %w", name, err)
	}
	return nil
}

// OpenShared opens the file; an error wrapping artifact.ErrNotFound when there is none,
// including when the name is a folder of other names.
func (s *Store) OpenShared(ctx context.Context, name string) (artifact.File, error) {
	p, err := sharedPath(name)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return s.openRegular(p, name)
}

// ListShared walks the folder that the prefix names up to its last '/', and below it only
// the folders that can hold a name with the prefix. Temp files of PutShared are not
// listed; those a crash left behind (older than staleTemp) are removed on the way.
func (s *Store) ListShared(ctx context.Context, prefix string) ([]artifact.SharedFile, error) {
	if err := artifact.CheckSharedPrefix(prefix); err != nil {
		return nil, err
	}
	dir, _ := path.Split(prefix)
	start := path.Join(sharedDir, dir)
	var files []artifact.SharedFile
	err := iofs.WalkDir(s.root.FS(), start, func(p string, d iofs.DirEntry, err error) error {
		if err != nil {
			if notExist(err) { // never made, or a file where the prefix wants a folder
				return nil
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		name := strings.TrimPrefix(p, sharedDir+"/")
		switch {
		case d.IsDir():
			if p != start && !strings.HasPrefix(name+"/", prefix) && !strings.HasPrefix(prefix, name+"/") {
				return iofs.SkipDir
			}
			return nil
		case strings.HasPrefix(d.Name(), sharedTempPrefix):
			s.removeStaleTemp(p, d)
			return nil
		case !d.Type().IsRegular() || !strings.HasPrefix(name, prefix) || artifact.CheckSharedName(name) != nil:
			return nil
		}
		info, err := d.Info()
		if notExist(err) { // deleted since its folder was read
			return nil
		}
		if err != nil {
			return err
		}
		files = append(files, artifact.SharedFile{Name: name, Size: info.Size(), ModTime: info.ModTime()})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list shared %q: %w", prefix, err)
	}
	return files, nil
}

// removeStaleTemp removes a temp file that a crash left behind. Best effort, as sweepTemp:
// the age keeps it from a file that a PutShared, here or on another server, is writing.
func (s *Store) removeStaleTemp(p string, d iofs.DirEntry) {
	if info, err := d.Info(); err == nil && time.Since(info.ModTime()) > staleTemp {
		s.root.Remove(p)
	}
}

// DeleteShared removes the file. A missing file is no error, nor is a name that is a
// folder of other names, which is left alone.
func (s *Store) DeleteShared(ctx context.Context, name string) error {
	p, err := sharedPath(name)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	st, err := s.root.Lstat(p)
	if err == nil && !st.IsDir() {
		err = s.root.Remove(p)
	}
	if err != nil && !notExist(err) {
		return fmt.Errorf("delete shared %s: %w", name, err)
	}
	return nil
}
