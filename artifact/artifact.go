// Package artifact defines where job output lives: result files and run logs. The local
// folder implementation is in artifact/fs; an S3-compatible one can follow behind the same
// interface.
package artifact

import (
	"context"
	"errors"
	"io"
	iofs "io/fs"
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
	// AppendLog appends to the job's run log, which all attempts share.
	AppendLog(ctx context.Context, jobID string, p []byte) error
	// OpenLog reads the run log as it stands when opened: the File's size is fixed then,
	// however much is appended later. A missing log reads as empty, not as an error.
	OpenLog(ctx context.Context, jobID string) (File, error)
	// DeleteJob removes everything of a job.
	DeleteJob(ctx context.Context, jobID string) error
	// Jobs lists the job ids that have files, for sweeping orphans.
	Jobs(ctx context.Context) ([]string, error)
}

// File is an open file of a store. It seeks, so that an HTTP range request (a resumed
// download, a log read from an offset) is served from the middle without reading the
// start; and its Stat gives the size and modification time that validators are built
// from. An object store can satisfy it with ranged reads.
type File interface {
	io.ReadSeekCloser
	Stat() (iofs.FileInfo, error)
}
