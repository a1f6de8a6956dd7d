package fs

import (
	"cmp"
	"context"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/chaperone-bio/chaperone/artifact"
	"github.com/chaperone-bio/chaperone/job"
)

// A job's run log is a file per attempt, run-<n>.log, each only ever appended to, and read
// as one: the legacy run.log, if any, then the attempts' files in attempt order. An
// append's offset is checked against the size of its attempt's file, so that an append
// sent again is not written twice; the check and the write happen under the job's lock
// in this process and an flock(2) of the file across processes (servers that share the
// folder), so that an append and its retry through another server cannot both write.

const (
	// logName is the name the log is read under, and that of the legacy file.
	logName   = "run.log"
	logPrefix = "run-"
	logSuffix = ".log"
)

func attemptLog(jobID string, attempt int) string {
	return path.Join(jobID, logPrefix+strconv.Itoa(attempt)+logSuffix)
}

// logAttempts lists the attempts that have a log file, in order.
func (s *Store) logAttempts(jobID string) ([]int, error) {
	entries, err := iofs.ReadDir(s.root.FS(), jobID)
	if err != nil && !notExist(err) {
		return nil, err
	}
	var attempts []int
	for _, e := range entries {
		n, ok := strings.CutPrefix(e.Name(), logPrefix)
		if n, ok2 := strings.CutSuffix(n, logSuffix); ok && ok2 {
			if a, err := strconv.Atoi(n); err == nil && a > 0 && e.Type().IsRegular() {
				attempts = append(attempts, a)
			}
		}
	}
	slices.Sort(attempts)
	return attempts, nil
}

// AppendLog implements artifact.Store.
func (s *Store) AppendLog(ctx context.Context, jobID string, attempt int, offset int64, p []byte) (int64, error) {
	if !job.ValidID(jobID) {
		return 0, badJob(jobID)
	}
	if attempt < 1 {
		return 0, fmt.Errorf("%w: attempt %d: attempts count from 1", artifact.ErrInvalidPath, attempt)
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	mu := s.logLock(jobID)
	mu.Lock()
	defer mu.Unlock()
	attempts, err := s.logAttempts(jobID)
	if err != nil {
		return 0, fmt.Errorf("append log: %w", err)
	}
	if len(attempts) > 0 && attempts[len(attempts)-1] > attempt {
		return 0, artifact.ErrLogClosed
	}
	if err := s.root.MkdirAll(jobID, dirPerm); err != nil {
		return 0, fmt.Errorf("append log: %w", err)
	}
	f, err := s.root.OpenFile(attemptLog(jobID, attempt), os.O_WRONLY|os.O_APPEND|os.O_CREATE, filePerm)
	if err != nil {
		return 0, fmt.Errorf("append log: %w", err)
	}
	defer f.Close()
	unlock, err := lockFile(f)
	if err != nil {
		return 0, fmt.Errorf("append log: %w", err)
	}
	defer unlock()
	st, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("append log: %w", err)
	}
	held := st.Size()
	add, err := artifact.NewLogBytes(held, offset, p)
	if err != nil || len(add) == 0 {
		return held, err
	}
	n, err := f.Write(add)
	if err != nil {
		return held + int64(n), fmt.Errorf("append log: %w", err)
	}
	return held + int64(n), nil
}

// OpenLog returns the log as it stood when OpenLog was called: the sizes of its files are
// fixed then, so the reader ends at the boundary of a whole append even while appends
// continue.
func (s *Store) OpenLog(ctx context.Context, jobID string) (artifact.File, error) {
	if !job.ValidID(jobID) {
		return nil, fmt.Errorf("%w: %w", artifact.ErrNotFound, badJob(jobID))
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	mu := s.logLock(jobID)
	mu.Lock()
	defer mu.Unlock()
	attempts, err := s.logAttempts(jobID)
	if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	names := []string{path.Join(jobID, logName)}
	for _, a := range attempts {
		names = append(names, attemptLog(jobID, a))
	}
	log := &logFiles{}
	for _, name := range names {
		f, err := s.root.Open(name)
		if notExist(err) {
			continue
		}
		var st os.FileInfo
		if err == nil {
			st, err = f.Stat()
		}
		if err != nil {
			log.Close()
			return nil, fmt.Errorf("open log: %w", err)
		}
		log.parts = append(log.parts, logPart{f: f, start: log.size, size: st.Size()})
		log.size += st.Size()
		if st.ModTime().After(log.mod) {
			log.mod = st.ModTime()
		}
	}
	log.SectionReader = io.NewSectionReader(log, 0, log.size)
	return log, nil
}

// logFiles is the log as one file: its files, each up to the size it had when opened.
type logFiles struct {
	*io.SectionReader
	parts []logPart
	size  int64
	mod   time.Time
}

type logPart struct {
	f           *os.File
	start, size int64 // where it starts in the log, and how much of it the log holds
}

// ReadAt reads the log from off: the parts that cover it, each within its snapshot.
func (l *logFiles) ReadAt(p []byte, off int64) (int, error) {
	i, _ := slices.BinarySearchFunc(l.parts, off, func(part logPart, off int64) int {
		return cmp.Compare(part.start+part.size, off+1)
	})
	n := 0
	for ; n < len(p) && i < len(l.parts); i++ {
		part := l.parts[i]
		within := off + int64(n) - part.start
		m, err := part.f.ReadAt(p[n:min(len(p), n+int(part.size-within))], within)
		n += m
		if err != nil && err != io.EOF {
			return n, err
		}
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (l *logFiles) Close() error {
	for _, part := range l.parts {
		part.f.Close()
	}
	return nil
}

func (l *logFiles) Stat() (iofs.FileInfo, error) { return logInfo{size: l.size, mod: l.mod}, nil }

// logInfo describes the log as read: its name, size and last change.
type logInfo struct {
	size int64
	mod  time.Time
}

func (i logInfo) Name() string        { return logName }
func (i logInfo) Size() int64         { return i.size }
func (i logInfo) Mode() iofs.FileMode { return filePerm }
func (i logInfo) ModTime() time.Time  { return i.mod }
func (i logInfo) IsDir() bool         { return false }
func (i logInfo) Sys() any            { return nil }
