package worker

import (
	"context"
	"io"
	"time"

	"github.com/chaperone-bio/chaperone/align"
	"github.com/chaperone-bio/chaperone/job"
)

// Queue is everything a worker needs from the server side, in the worker protocol's own
// wire types: the in-process worker calls the server's implementation (package
// worker/backend) directly, and a worker on another machine speaks the same protocol over
// HTTP. Times are the server's: a worker sends no clock readings, and its leases last as
// long as the server's setting says (told in Timing).
//
// Every write about a job carries the Fence of the attempt that makes it, and the server
// refuses it with job.ErrLeaseLost unless the job is running under that attempt. Dropping
// the files of an attempt that lost its lease is the server's job, never the worker's.
type Queue interface {
	// Announce records that the worker is alive and what it can run; a worker counts as
	// live for Timing.LeaseTTL after it announced itself. The answer is the timing the
	// server holds the worker's leases to.
	Announce(ctx context.Context, a Announcement) (Timing, error)
	// Lease hands the worker the next job it can run, waiting up to req.Wait (the server
	// may cap the wait) for one to become leasable; nil when none did. The job is running
	// under the returned attempt from then on, until its lease runs out without a heartbeat.
	Lease(ctx context.Context, req LeaseRequest) (*Lease, error)
	// Heartbeat renews the lease for Timing.LeaseTTL and records progress.
	Heartbeat(ctx context.Context, hb Heartbeat) error
	// AppendLog adds output of the attempt to the job's run log, which shows every
	// attempt's output in attempt order. offset is where p starts in the output that the
	// attempt's worker sends: bytes of it that the server holds already are not added
	// again, so that an append whose answer was lost is sent again, alone or with more
	// output after it, and lands once. The offsets are the worker's own count, from 0 at
	// the start of each attempt.
	AppendLog(ctx context.Context, f Fence, offset int64, p []byte) error
	// PutArtifact stores one result file of the attempt.
	PutArtifact(ctx context.Context, f Fence, path string, r io.Reader) error
	// Complete ends the job with the attempt's outcome, in one write fenced by the attempt.
	Complete(ctx context.Context, c Completion) error
	// ReleaseWorker hands back to the queue every job the worker holds: a worker that
	// restarts under the same id knows that the jobs it held died with it, and one that
	// shuts down stops its jobs first.
	ReleaseWorker(ctx context.Context, workerID string) error
	// HandBack hands back to the queue every job the worker holds, as ReleaseWorker does,
	// without counting those attempts against the attempt limit: the worker is shutting
	// down cleanly (SIGTERM, a rolling restart) and stopped them itself.
	HandBack(ctx context.Context, workerID string) error
	// RemoveWorker forgets a worker that shut down cleanly.
	RemoveWorker(ctx context.Context, workerID string) error
}

// Fence names one attempt of one job. The server accepts a write that carries it only
// while the job is running under that attempt, so a worker that lost its lease (cancel,
// delete, expiry and a new attempt elsewhere) can change nothing.
type Fence struct {
	JobID   string `json:"job_id"`
	Attempt int    `json:"attempt"`
}

// Timing is the server's lease timing, which its workers follow.
type Timing struct {
	// LeaseTTL is how long a lease, and a worker's announcement, lasts without renewal.
	LeaseTTL time.Duration `json:"lease_ttl_ns"`
	// Heartbeat is how often a running job's lease is renewed; a cancel reaches the job's
	// processes within about this long.
	Heartbeat time.Duration `json:"heartbeat_ns"`
}

// Announcement is what a worker tells the server about itself.
type Announcement struct {
	WorkerID string   `json:"worker_id"`
	Models   []string `json:"models"` // run models its engines can run now
	// Missing says, per catalog model it cannot run, what kind of thing is missing (for
	// example "the boltz command is not installed"), so that a refused create can say what
	// to fix. API callers read it: it names no path and quotes no tool output
	// (engine.PublicReason).
	Missing map[string]string `json:"missing,omitempty"`
	// Loaded lists the models that the worker's warm sessions hold loaded now.
	Loaded []string `json:"loaded,omitempty"`
	// Slots is how many jobs the worker runs at once; the server counts those it holds.
	Slots int `json:"slots"`
}

// LeaseRequest says who wants work, what it can run, and how long it will wait for it.
type LeaseRequest struct {
	WorkerID string   `json:"worker_id"`
	Models   []string `json:"models"`
	// Loaded lists models loaded on the worker now; the server prefers jobs for them.
	Loaded []string      `json:"loaded,omitempty"`
	Wait   time.Duration `json:"wait_ns"`
}

// Lease is a job handed to a worker: what its engine needs to run it, under the attempt
// that fences every write about it.
type Lease struct {
	Fence
	Kind     job.Kind `json:"kind"`
	Name     string   `json:"name,omitempty"`
	Model    string   `json:"model,omitempty"`
	Protocol string   `json:"protocol,omitempty"`
	// RunModel is the catalog model whose engine runs the job.
	RunModel string         `json:"run_model"`
	Params   map[string]any `json:"params"`
	Input    job.Input      `json:"input"`
	Total    int            `json:"total"` // sub-units (targets, designs, sequences)
	// Alignments are the job's searched alignments (engine.Run.Alignments), read from the
	// shared cache when the job was leased.
	Alignments []align.Result `json:"alignments,omitempty"`
}

// Job is the leased job as an engine sees it.
func (l *Lease) Job() *job.Job {
	return &job.Job{ID: l.JobID, Attempt: l.Attempt, Kind: l.Kind, Name: l.Name, Model: l.Model,
		Protocol: l.Protocol, RunModel: l.RunModel, Params: l.Params, Input: l.Input, Total: l.Total,
		Status: job.Running}
}

// Heartbeat is a worker's periodic report on one leased job.
type Heartbeat struct {
	Fence
	Progress *job.Progress `json:"progress,omitempty"` // nil: unchanged
	// Activity says that the job showed life (progress or output) since the last
	// heartbeat, which resets its stall clock.
	Activity bool `json:"activity"`
}

// Completion is how an attempt ended, from its worker's point of view.
type Completion struct {
	Fence
	Status   job.Status   `json:"status"` // job.Succeeded or job.Failed
	Error    string       `json:"error,omitempty"`
	Progress job.Progress `json:"progress"`
	Results  *job.Results `json:"results,omitempty"` // for job.Succeeded
}
