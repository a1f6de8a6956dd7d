package s3

import (
	"context"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/minio/minio-go/v7"

	"github.com/chaperone-bio/chaperone/artifact"
)

// Shared files are the objects <prefix>shared/<name>, beside <prefix>jobs/, which is all
// that Jobs lists and DeleteJob removes. An object is written whole or not at all, so
// PutShared needs no temp object.

var _ artifact.Shared = (*Store)(nil)

func (s *Store) sharedRoot() string { return s.prefix + "shared/" }

func (s *Store) sharedKey(name string) (string, error) {
	if err := artifact.CheckSharedName(name); err != nil {
		return "", err
	}
	return s.sharedRoot() + name, nil
}

// PutShared writes r to the object, as Put does a job's file.
func (s *Store) PutShared(ctx context.Context, name string, r io.Reader) error {
	key, err := s.sharedKey(name)
	if err != nil {
		return err
	}
	return s.put(ctx, key, "shared "+name, r)
}

// OpenShared opens the object, pinned to the version it found, as Open does a job's file.
func (s *Store) OpenShared(ctx context.Context, name string) (artifact.File, error) {
	key, err := s.sharedKey(name)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return s.open(ctx, key, name)
}

// ListShared lists the objects whose keys start with the prefix, page by page.
func (s *Store) ListShared(ctx context.Context, prefix string) ([]artifact.SharedFile, error) {
	if err := artifact.CheckSharedPrefix(prefix); err != nil {
		return nil, err
	}
	var files []artifact.SharedFile
	root := s.sharedRoot()
	for o := range s.c.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: root + prefix, Recursive: true}) {
		if o.Err != nil {
			return nil, fmt.Errorf("list shared %q: %w", prefix, o.Err)
		}
		// Only names PutShared could have written: not a folder marker ("msa/") that
		// another tool left in the bucket, nor a server's temp name.
		name := strings.TrimPrefix(o.Key, root)
		if artifact.CheckSharedName(name) == nil && !versityTemp(name) {
			files = append(files, artifact.SharedFile{Name: name, Size: o.Size, ModTime: o.LastModified})
		}
	}
	return files, nil
}

// DeleteShared removes the object; S3 answers a delete of a missing key as done.
func (s *Store) DeleteShared(ctx context.Context, name string) error {
	key, err := s.sharedKey(name)
	if err != nil {
		return err
	}
	if err := s.c.RemoveObject(ctx, s.bucket, key, minio.RemoveObjectOptions{}); err != nil && !isNotFound(err) {
		return fmt.Errorf("delete shared %s: %w", name, err)
	}
	return nil
}

// versityTemp reports whether name is one that VersityGW's POSIX backend gives an object
// for a moment while replacing it: it links the upload beside the object as
// ".<base>.sgwtmp.<nanoseconds>" and renames that over it (backend/posix/with_otmpfile.go,
// linkatOTmpfile, v1.8.0), and its listings show the link meanwhile. No PutShared wrote
// it, and a sweep that deleted it would fail the replacement.
func versityTemp(name string) bool {
	base, ok := strings.CutPrefix(path.Base(name), ".")
	i := strings.LastIndex(base, ".sgwtmp.")
	if !ok || i < 1 {
		return false
	}
	stamp := base[i+len(".sgwtmp."):]
	return stamp != "" && strings.Trim(stamp, "0123456789") == ""
}
