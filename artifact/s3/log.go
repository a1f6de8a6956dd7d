package s3

import (
	"bytes"
	"context"
	"fmt"
	"io"
	iofs "io/fs"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/chaperone-bio/chaperone/artifact"
	"github.com/chaperone-bio/chaperone/job"
)

// A job's run log is an object per attempt, run-<n>.log, read as one: the legacy run.log,
// if any, then the attempts' objects in attempt order. An append's offset is checked
// against the size of its attempt's object, so that an append sent again is not written
// twice.

const (
	// logName is the name the log is read under, and that of the legacy object.
	logName   = "run.log"
	logPrefix = "run-"
	logSuffix = ".log"
)

func (s *Store) attemptLogKey(jobID string, attempt int) (string, error) {
	if !job.ValidID(jobID) {
		return "", fmt.Errorf("%w: job id %q", artifact.ErrInvalidPath, jobID)
	}
	if attempt < 1 {
		return "", fmt.Errorf("%w: attempt %d: attempts count from 1", artifact.ErrInvalidPath, attempt)
	}
	return s.jobKey(jobID) + logPrefix + strconv.Itoa(attempt) + logSuffix, nil
}

// logKeys lists the keys of the job's log objects in reading order: the legacy log, then
// the attempts' logs by attempt, and the attempts they are of (0 for the legacy log).
func (s *Store) logKeys(ctx context.Context, jobID string) ([]string, []int, error) {
	type entry struct {
		key     string
		attempt int
	}
	var found []entry
	for o := range s.c.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: s.jobKey(jobID) + "run"}) {
		if o.Err != nil {
			return nil, nil, o.Err
		}
		name := strings.TrimPrefix(o.Key, s.jobKey(jobID))
		if name == logName {
			found = append(found, entry{o.Key, 0})
			continue
		}
		n, ok := strings.CutPrefix(name, logPrefix)
		if n, ok2 := strings.CutSuffix(n, logSuffix); ok && ok2 {
			if a, err := strconv.Atoi(n); err == nil && a > 0 {
				found = append(found, entry{o.Key, a})
			}
		}
	}
	slices.SortFunc(found, func(a, b entry) int { return a.attempt - b.attempt })
	keys, attempts := make([]string, len(found)), make([]int, len(found))
	for i, e := range found {
		keys[i], attempts[i] = e.key, e.attempt
	}
	return keys, attempts, nil
}

// logLock is the lock of one job's appends in this process.
func (s *Store) logLock(jobID string) *sync.Mutex {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.logs[jobID]
	if !ok {
		l = new(sync.Mutex)
		s.logs[jobID] = l
	}
	return l
}

// AppendLog implements artifact.Store: it rewrites the attempt's log object with what p
// adds, under the job's lock, so that a reader sees whole appends only.
func (s *Store) AppendLog(ctx context.Context, jobID string, attempt int, offset int64, p []byte) (int64, error) {
	key, err := s.attemptLogKey(jobID, attempt)
	if err != nil {
		return 0, err
	}
	l := s.logLock(jobID)
	l.Lock()
	defer l.Unlock()
	_, attempts, err := s.logKeys(ctx, jobID)
	if err != nil {
		return 0, fmt.Errorf("appending to the log of %s: %w", jobID, err)
	}
	if len(attempts) > 0 && attempts[len(attempts)-1] > attempt {
		return 0, artifact.ErrLogClosed
	}
	old, _, err := s.readLog(ctx, key)
	if err != nil {
		return 0, err
	}
	add, err := artifact.NewLogBytes(int64(len(old)), offset, p)
	if err != nil || len(add) == 0 {
		return int64(len(old)), err
	}
	b := append(old, add...)
	_, err = s.c.PutObject(ctx, s.bucket, key, bytes.NewReader(b), int64(len(b)),
		minio.PutObjectOptions{ContentType: "text/plain; charset=utf-8"})
	if err != nil {
		return int64(len(old)), fmt.Errorf("appending to the log of %s: %w", jobID, err)
	}
	return int64(len(b)), nil
}

// readLog reads a whole log object and when it was last written; a missing one is empty.
func (s *Store) readLog(ctx context.Context, key string) ([]byte, time.Time, error) {
	obj, err := s.c.GetObject(ctx, s.bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, time.Time{}, err
	}
	defer obj.Close()
	// One GET: reading first makes the request that Stat then answers from, so that a
	// concurrent append cannot come between them.
	b, err := io.ReadAll(obj)
	if isNotFound(err) {
		return nil, time.Time{}, nil
	}
	if err != nil {
		return nil, time.Time{}, err
	}
	info, err := obj.Stat()
	return b, info.LastModified, err
}

// OpenLog reads the log as it stands: a copy in memory, so that later appends, which
// replace objects, do not disturb a reader in the middle of it.
func (s *Store) OpenLog(ctx context.Context, jobID string) (artifact.File, error) {
	if !job.ValidID(jobID) {
		return nil, fmt.Errorf("%w: %w: job id %q", artifact.ErrNotFound, artifact.ErrInvalidPath, jobID)
	}
	keys, _, err := s.logKeys(ctx, jobID)
	if err != nil {
		return nil, fmt.Errorf("opening the log of %s: %w", jobID, err)
	}
	var (
		all    []byte
		latest time.Time
	)
	for _, key := range keys {
		b, mod, err := s.readLog(ctx, key)
		if err != nil {
			return nil, fmt.Errorf("opening the log of %s: %w", jobID, err)
		}
		all = append(all, b...)
		if mod.After(latest) {
			latest = mod
		}
	}
	return &logCopy{Reader: bytes.NewReader(all), info: fileInfo{name: logName, size: int64(len(all)), mod: latest}}, nil
}

type logCopy struct {
	*bytes.Reader
	info fileInfo
}

func (l *logCopy) Close() error                 { return nil }
func (l *logCopy) Stat() (iofs.FileInfo, error) { return l.info, nil }
