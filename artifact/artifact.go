// Package artifact defines where job output lives: result files and run logs. The local
// folder implementation is in artifact/fs; an S3-compatible one can follow behind the same
// interface.
package artifact

import (
	"context"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"time"
)

// ErrNotFound is returned for a file or log that does not exist.
var ErrNotFound = errors.New("artifact not found")

// Store keeps the files of each job. Result files are kept per attempt, so a late writer
// from a lost attempt can never overwrite what the current attempt produced.
type Store interface {
	// Put writes one result file of the given attempt of a job.
	Put(ctx context.Context, jobID string, attempt int, path string, r io.Reader) error
	// Open reads one result file.
	Open(ctx context.Context, jobID string, attempt int, path string) (File, error)
	// DeleteAttempt removes the result files of one attempt (a lost or abandoned one).
	DeleteAttempt(ctx context.Context, jobID string, attempt int) error
	// AppendLog adds output of one attempt of a job to the job's run log, which shows the
	// output of every attempt, in attempt order. offset is where p starts in that
	// attempt's output: bytes of it the store already holds are not written again, so a
	// writer that did not learn whether an append went through (an answer lost with a
	// server) sends it again, or sends it with more after it, and the log holds it once.
	// It returns how many bytes of the attempt's output the store holds after the append
	// (an empty p asks only that). An offset past them is a *LogOffsetError. Once a later
	// attempt's output has begun, an attempt's log is closed (ErrLogClosed): only the last
	// attempt's output grows, so that the log as a whole only grows at its end, and a
	// reader that follows it by offset misses nothing.
	AppendLog(ctx context.Context, jobID string, attempt int, offset int64, p []byte) (int64, error)
	// OpenLog reads the run log as it stands when opened: the File's size is fixed then,
	// however much is appended later. A missing log reads as empty, not as an error.
	OpenLog(ctx context.Context, jobID string) (File, error)
	// DeleteJob removes everything of a job.
	DeleteJob(ctx context.Context, jobID string) error
	// Jobs lists the job ids that have files, for sweeping orphans.
	Jobs(ctx context.Context) ([]string, error)
}

// Shared keeps files that belong to no job, under names of the caller's choosing: the
// alignment cache, which every replica and worker on the same store reads, so that a
// search is made once for the whole cluster. Names are slash-separated paths of lower-case
// letters, digits, '.', '_' and '-' (CheckSharedName).
type Shared interface {
	// PutShared writes the named file whole, replacing any before it: a reader opens the
	// old file or the new one, never part of one.
	PutShared(ctx context.Context, name string, r io.Reader) error
	// OpenShared reads the named file; ErrNotFound when there is none.
	OpenShared(ctx context.Context, name string) (File, error)
	// ListShared lists the files whose names start with prefix, in no particular order.
	ListShared(ctx context.Context, prefix string) ([]SharedFile, error)
	// DeleteShared removes the named file; a missing one is no error.
	DeleteShared(ctx context.Context, name string) error
}

// SharedFile is one file of a Shared store.
type SharedFile struct {
	Name    string
	Size    int64
	ModTime time.Time // when it was written
}

// File is an open file of a store. It seeks, so that an HTTP range request (a resumed
// download, a log read from an offset) is served from the middle without reading the
// start; and its Stat gives the size and modification time that validators are built
// from. An object store can satisfy it with ranged reads.
type File interface {
	io.ReadSeekCloser
	Stat() (iofs.FileInfo, error)
}

// ErrLogClosed refuses output of an attempt whose job's log shows a later attempt's.
var ErrLogClosed = errors.New("artifact: a later attempt's output has begun; this attempt's log is closed")

// LogOffsetError refuses output that starts past what the store holds of its attempt's.
type LogOffsetError struct {
	Held, Offset int64
}

func (e *LogOffsetError) Error() string {
	return fmt.Sprintf("artifact: the log holds %d bytes of the attempt's output, not %d", e.Held, e.Offset)
}

// EndLog appends line to an attempt's output after all the store holds of it: the server's
// own last words on an attempt that its worker writes to no more (canceled, lost, handed
// back). A worker's append that was checked before the attempt ended and lands after this
// one may be cut short by it; the attempt is over by then.
func EndLog(ctx context.Context, s Store, jobID string, attempt int, line string) error {
	held, err := s.AppendLog(ctx, jobID, attempt, 0, nil)
	if err != nil {
		return err
	}
	_, err = s.AppendLog(ctx, jobID, attempt, held, []byte(line))
	return err
}

// NewLogBytes is what of p, output of an attempt from offset on, a log that holds held
// bytes of that attempt's output lacks: the stores' one rule for AppendLog.
func NewLogBytes(held, offset int64, p []byte) ([]byte, error) {
	switch {
	case offset < 0:
		return nil, fmt.Errorf("artifact: a log offset of %d", offset)
	case offset > held:
		return nil, &LogOffsetError{Held: held, Offset: offset}
	case held-offset >= int64(len(p)):
		return nil, nil
	}
	return p[held-offset:], nil
}
