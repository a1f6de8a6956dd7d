// Package artifact defines where job output lives: result files and run logs. The local
// folder implementation is in artifact/fs; an S3-compatible one can follow behind the same
// interface.
package artifact

import (
	"context"
	"errors"
	"io"
)

// ErrNotFound is returned for a file or log that does not exist.
var ErrNotFound = errors.New("artifact not found")

// Store keeps the files of each job. Result files are kept per attempt, so a late writer
// from a lost attempt can never overwrite what the current attempt produced.
type Store interface {
	// Put writes one result file of the given attempt of a job.
	Put(ctx context.Context, jobID string, attempt int, path string, r io.Reader) error
	// Open reads one result file.
	Open(ctx context.Context, jobID string, attempt int, path string) (io.ReadCloser, error)
	// DeleteAttempt removes the result files of one attempt (a lost or abandoned one).
	DeleteAttempt(ctx context.Context, jobID string, attempt int) error
	// AppendLog appends to the job's run log, which all attempts share.
	AppendLog(ctx context.Context, jobID string, p []byte) error
	// OpenLog reads the run log as it stands; an empty log is not an error.
	OpenLog(ctx context.Context, jobID string) (io.ReadCloser, error)
	// DeleteJob removes everything of a job.
	DeleteJob(ctx context.Context, jobID string) error
	// Jobs lists the job ids that have files, for sweeping orphans.
	Jobs(ctx context.Context) ([]string, error)
}
