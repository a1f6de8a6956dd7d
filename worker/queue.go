package worker

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/chaperone-bio/chaperone/artifact"
	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/store"
)

// Queue is everything a worker needs from the server side. The in-process worker uses
// Local; a worker on another machine implements it over HTTP.
type Queue interface {
	Lease(ctx context.Context, req store.LeaseRequest) (*job.Job, error)
	Heartbeat(ctx context.Context, hb store.Heartbeat) error
	Complete(ctx context.Context, id string, attempt int, out store.Outcome) error
	// Abandon drops what a lost attempt wrote: its result files, and everything of a job
	// that no longer exists (its log may have been appended to after the job was deleted).
	// An attempt that the store shows as the one that succeeded keeps its files.
	Abandon(ctx context.Context, id string, attempt int) error
	AppendLog(ctx context.Context, id string, p []byte) error
	PutArtifact(ctx context.Context, id string, attempt int, path string, r io.Reader) error
	PutWorker(ctx context.Context, w store.Worker) error
	RemoveWorker(ctx context.Context, id string) error
	// ReleaseWorker returns the jobs a previous run of this worker held to the queue.
	ReleaseWorker(ctx context.Context, workerID string, now time.Time) error
	// WorkAvailable fires when a job may have become leasable, until ctx ends; it is closed
	// when ctx ends or the notifications were lost (see store.Store.Watch).
	WorkAvailable(ctx context.Context) <-chan struct{}
}

// Local is the Queue of a worker inside the server process: the store and artifact store
// themselves.
type Local struct {
	Store       store.Store
	Artifacts   artifact.Store
	MaxAttempts int
}

var _ Queue = (*Local)(nil)

func (l *Local) Lease(ctx context.Context, req store.LeaseRequest) (*job.Job, error) {
	return l.Store.LeaseJob(ctx, req)
}

func (l *Local) Heartbeat(ctx context.Context, hb store.Heartbeat) error {
	return l.Store.Heartbeat(ctx, hb)
}

func (l *Local) Complete(ctx context.Context, id string, attempt int, out store.Outcome) error {
	return l.Store.CompleteJob(ctx, id, attempt, out)
}

func (l *Local) Abandon(ctx context.Context, id string, attempt int) error {
	j, err := l.Store.GetJob(ctx, id)
	switch {
	case errors.Is(err, job.ErrNotFound):
		return l.Artifacts.DeleteJob(ctx, id)
	case err != nil:
		return err
	case j.Status == job.Succeeded && j.Attempt == attempt:
		// The attempt won after all: its completion was recorded although the worker was
		// told otherwise (an error after the commit, or a retried completion that found the
		// job already done). Its files are the job's results now.
		return nil
	}
	return l.Artifacts.DeleteAttempt(ctx, id, attempt)
}

func (l *Local) AppendLog(ctx context.Context, id string, p []byte) error {
	return l.Artifacts.AppendLog(ctx, id, p)
}

func (l *Local) PutArtifact(ctx context.Context, id string, attempt int, path string, r io.Reader) error {
	return l.Artifacts.Put(ctx, id, attempt, path, r)
}

func (l *Local) PutWorker(ctx context.Context, w store.Worker) error {
	return l.Store.PutWorker(ctx, w)
}

func (l *Local) RemoveWorker(ctx context.Context, id string) error {
	return l.Store.RemoveWorker(ctx, id)
}

func (l *Local) ReleaseWorker(ctx context.Context, workerID string, now time.Time) error {
	_, err := l.Store.ReleaseWorker(ctx, workerID, now, l.MaxAttempts)
	return err
}

func (l *Local) WorkAvailable(ctx context.Context) <-chan struct{} { return l.Store.Watch(ctx, "") }
