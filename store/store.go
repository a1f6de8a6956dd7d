// Package store defines where chaperone keeps its state: jobs (the job row is the queue),
// workers, API keys and idempotency entries. Implementations live in subpackages (sqlite,
// postgres; what the two share is store/internal/sqlstore's); every implementation must
// pass the conformance suite in storetest.
package store

import (
	"context"
	"time"

	"github.com/chaperone-bio/chaperone/job"
)

// Store is the whole persistent state of a chaperone deployment.
type Store interface {
	Jobs
	Queue
	History
	Workers
	Keys
	Aligning
	// Watch returns a channel that receives a value whenever what a JobSummary of the job
	// with the given id shows changes (status, stage, progress, error), or the job is
	// deleted, until ctx ends. A heartbeat that only extends a lease, or only records
	// activity, does not fire it. The empty id watches the queue: it fires when a job
	// becomes queued. Notifications are sent after the change committed, so a read made on
	// a notification sees it. Sends never block; a watcher that is
	// slow to read sees one pending value, not a backlog. The channel is closed when the
	// watch ends: when ctx ended, or when the store lost its source of notifications (a
	// dropped connection), in which case changes may have gone unseen and the watcher must
	// read again and watch anew.
	Watch(ctx context.Context, id string) <-chan struct{}
	Close() error
}

// Jobs is the caller-facing side of the job table.
type Jobs interface {
	// CreateJob stores j as queued in one transaction that also enforces idempotency,
	// quotas and retention, as CreateOptions says. j.ID, j.CreatedAt and j.Owner must be set.
	//
	// With an idempotency key already used by the same owner, it returns the original job
	// and Created=false, or job.ErrIdempotencyReused when RequestHash differs; a replay is
	// not held to quotas. Over a quota or at capacity it returns a *job.LimitError with a
	// truthful RetryAfter (EstimateRetryAfter where it waits on a running job). Quotas
	// measure time by j.CreatedAt. When only active jobs are left to evict, retention
	// stops and the create succeeds over Limits.Retained.
	CreateJob(ctx context.Context, j *job.Job, opts CreateOptions) (CreateResult, error)
	// FindIdempotent returns the job that owner created with an idempotency key, and the
	// RequestHash of that create; job.ErrNotFound when the key is unused. It lets a caller
	// answer a replay before checks that only a new job needs (worker availability);
	// CreateJob still decides races between concurrent creates.
	FindIdempotent(ctx context.Context, owner job.Owner, key string) (*job.Job, string, error)
	// GetJob returns the whole job, input and results included; job.ErrNotFound for an
	// unknown id.
	GetJob(ctx context.Context, id string) (*job.Job, error)
	// GetJobSummary returns the job without its input and results (SummaryOf of GetJob,
	// read without loading them); job.ErrNotFound for an unknown id. Ownership checks, job
	// views and waits use it: an input may be megabytes.
	GetJobSummary(ctx context.Context, id string) (*JobSummary, error)
	// ListJobs returns summaries of the owner's jobs newest first. The cursor is opaque to
	// callers; a cursor that does not decode is a *job.InvalidError.
	ListJobs(ctx context.Context, owner job.Owner, cursor string, limit int) (JobPage, error)
	// CancelJob moves a queued or running job of owner to canceled and returns its
	// summary. A job already canceled is returned unchanged; a succeeded or failed one is a
	// *job.ConflictError. Another owner's job is job.ErrNotFound.
	CancelJob(ctx context.Context, id string, owner job.Owner, now time.Time) (*JobSummary, error)
	// DeleteJob removes the job of owner and its idempotency entry and returns the summary
	// of the job as it was. Another owner's job is job.ErrNotFound.
	DeleteJob(ctx context.Context, id string, owner job.Owner) (*JobSummary, error)
	// CountJobs counts jobs by kind, run model and status, for metrics.
	CountJobs(ctx context.Context) ([]JobCount, error)
}

// CreateOptions carries the per-request checks of CreateJob.
type CreateOptions struct {
	IdempotencyKey string // empty: no idempotency
	RequestHash    string // hash of the request body, compared on key reuse
	Limits         Limits
}

// Limits are the quotas and caps CreateJob enforces. Zero means unlimited.
type Limits struct {
	ActivePerOwner    int // queued + running jobs per owner
	CreatesPerMinute  int // creates per owner in any rolling 60 s
	QueuedServiceWide int
	Retained          int // jobs kept in total; beyond, retention evicts
}

// CreateResult is what CreateJob did.
type CreateResult struct {
	Job     *job.Job
	Created bool     // false when an idempotent replay returned an existing job
	Evicted []string // ids removed by retention; their artifacts must go too
}

// JobPage is one page of a listing.
type JobPage struct {
	Jobs       []*JobSummary
	NextCursor string // empty on the last page
}

// JobSummary is a job without its input and results: what a job view, a listing and an
// ownership check need.
type JobSummary struct {
	ID       string
	Owner    job.Owner
	Kind     job.Kind
	Name     string
	Model    string
	Protocol string
	RunModel string
	Params   map[string]any

	Status   job.Status
	Stage    string
	Progress *float64
	Done     int
	Total    int
	Error    string
	Attempt  int
	// WorkerID is the worker that leased the current attempt: the lease's holder while the
	// job runs, "" once the job is back in the queue.
	WorkerID string

	CreatedAt  time.Time
	StartedAt  time.Time
	FinishedAt time.Time

	// Aligning is job.Job.Aligning: the job waits for its alignment searches.
	Aligning bool

	// ResultsReady is job.Job.ResultsReady: the job succeeded and its results are stored.
	ResultsReady bool
}

// SummaryOf is the summary of a whole job.
func SummaryOf(j *job.Job) *JobSummary {
	return &JobSummary{
		ID: j.ID, Owner: j.Owner, Kind: j.Kind, Name: j.Name, Model: j.Model, Protocol: j.Protocol,
		RunModel: j.RunModel, Params: j.Params,
		Status: j.Status, Stage: j.Stage, Progress: j.Progress, Done: j.Done, Total: j.Total,
		Error: j.Error, Attempt: j.Attempt, WorkerID: j.WorkerID, Aligning: j.Aligning,
		CreatedAt: j.CreatedAt, StartedAt: j.StartedAt, FinishedAt: j.FinishedAt,
		ResultsReady: j.ResultsReady(),
	}
}

// JobCount is one cell of the job census.
type JobCount struct {
	Kind     job.Kind
	RunModel string
	Status   job.Status
	N        int
}

// Queue is the worker-facing side of the job table.
type Queue interface {
	// LeaseJob picks the next queued job whose RunModel is in req.Models, marks it running
	// under req.WorkerID with attempt+1 and a lease until req.LeaseUntil, and returns it;
	// nil when there is none. Order: the owner with the fewest running jobs first, then a
	// job whose model is in req.Loaded, then the oldest. StartedAt and LastActivityAt
	// become req.Now at every lease (StartedAt is when the current attempt started) and
	// Stage becomes "starting".
	LeaseJob(ctx context.Context, req LeaseRequest) (*job.Job, error)
	// Heartbeat extends the lease of a running job and records its progress (nil: no
	// change). Activity true means the job showed life (progress or output) and resets the
	// stall clock. It returns job.ErrLeaseLost when the job is gone, no longer running, or
	// running under another attempt.
	Heartbeat(ctx context.Context, hb Heartbeat) error
	// CompleteJob ends a running job with one write fenced by the attempt number;
	// job.ErrLeaseLost when the job is not running under that attempt.
	CompleteJob(ctx context.Context, id string, attempt int, out Outcome) error
	// RecoverExpired returns running jobs whose lease expired before now to queued, or
	// fails them when they have used maxAttempts. It returns the attempts it ended. A
	// requeued job loses its stage, progress, worker, lease and start time and keeps its
	// attempt count; a failed one gets the error WorkerLostError(attempt) and keeps the rest.
	//
	// Each recovery is conditional on the job still running under the attempt whose lease
	// expired, decided atomically with the change: of any number of concurrent callers
	// (reapers on several replicas) exactly one recovers a given attempt, and a job leased
	// again in between is left alone.
	RecoverExpired(ctx context.Context, now time.Time, maxAttempts int) ([]Recovered, error)
	// ReleaseWorker treats every job still leased by workerID as if its lease had expired
	// now: a worker that restarts under the same id calls it, since it knows that the jobs
	// it held died with it. It is conditional as RecoverExpired is.
	ReleaseWorker(ctx context.Context, workerID string, now time.Time, maxAttempts int) ([]Recovered, error)
	// HandBack returns every job still leased by workerID to the queue, as ReleaseWorker
	// does, except that the attempts it ends do not count against maxAttempts of later
	// recoveries: a worker shutting down cleanly (a rolling restart) stopped them itself,
	// and the jobs did nothing to deserve a lost attempt. Attempt numbers still only grow,
	// so that every lease keeps a fence of its own. No job fails here.
	HandBack(ctx context.Context, workerID string, now time.Time) ([]Recovered, error)
	// QueueDepth counts queued jobs, those still aligning too.
	QueueDepth(ctx context.Context) (int, error)
}

// Aligning is the alignment stage ahead of the workers. A job created with Searches is
// queued with Aligning set, and LeaseJob passes it over until an aligner, which claims it
// here, has searched its alignments and finished it. A claim is a lease of its own: held
// by one aligner (any replica) until it runs out, renewed while the search goes on, and
// taken over by another aligner once it ran out. It counts no attempt: the job has not run.
//
// A second kind of claim makes a search happen once across the cluster: an aligner about
// to search claims the search's key, and the others, finding it held, wait for the result
// to appear in the shared cache instead of searching too.
type Aligning interface {
	// ClaimAlignment holds for holder, until until, the oldest queued job whose searches
	// are still to be done and whose claim is free (never taken, or run out before now),
	// sets its stage to "msa" and returns it whole; nil when there is none.
	ClaimAlignment(ctx context.Context, holder string, now, until time.Time) (*job.Job, error)
	// RenewAlignment extends holder's claim on the job to until; job.ErrLeaseLost when the
	// job is gone, no longer queued with its searches to do, or claimed by another holder.
	RenewAlignment(ctx context.Context, id, holder string, until time.Time) error
	// FinishAlignment ends holder's claim. With failure "" the searches are done: Aligning
	// becomes false, the stage goes back to "" and the job is leasable (a queue watch
	// fires). Otherwise the job fails with failure as its error, keeping stage "msa", so
	// that it shows where it failed. job.ErrLeaseLost as RenewAlignment.
	FinishAlignment(ctx context.Context, id, holder string, now time.Time, failure string) error
	// ReturnForAlignment puts a job running under attempt back in the queue with its
	// searches to do again, as a hand-back does (the attempt does not count against the
	// attempt limit): its worker found the alignments gone from the shared cache before it
	// started. job.ErrLeaseLost when the job is not running under that attempt.
	ReturnForAlignment(ctx context.Context, id string, attempt int) error
	// ClaimSearch holds the search named key for holder until until and reports true, when
	// no other holder holds it (never claimed, released, or run out before now); a
	// holder's own claim is renewed. It reports false while another holds it.
	ClaimSearch(ctx context.Context, key, holder string, now, until time.Time) (bool, error)
	// ReleaseSearch drops holder's claim on key; releasing a claim not held is no error.
	ReleaseSearch(ctx context.Context, key, holder string) error
	// ReleaseAligner drops every claim of the aligner named holder: its claims on jobs
	// (which become free to claim, stage "" again) and its claims on searches, those it
	// holds as holder and as holder + "/" + anything. An aligner that starts again under
	// the same name calls it, since the claims it held died with it; without it, its jobs
	// would wait for the claims to run out. It returns the jobs it freed.
	ReleaseAligner(ctx context.Context, holder string) ([]string, error)
}

// History is what the store can tell of the work it holds and has held, for callers that
// want to know how a job stands or what a model has done.
type History interface {
	// OwnersAhead counts the other owners who hold a queued job of the queued job id's run
	// model that LeaseJob would pick before it, going by the lease order (fewest running
	// jobs first, then the oldest; a worker's loaded models aside). 0 for a job that is not
	// queued; job.ErrNotFound for an unknown id.
	OwnersAhead(ctx context.Context, id string) (int, error)
	// MeasuredWalls returns, per run model, the largest input (Results.LargestInput) of any
	// job that succeeded with it. The figure outlives the jobs it came from.
	MeasuredWalls(ctx context.Context) (map[string]int, error)
}

// Recovered is one attempt that RecoverExpired, ReleaseWorker or HandBack ended: the job is queued
// again, or failed when Failed. Its worker's files of that attempt are abandoned.
type Recovered struct {
	ID      string
	Attempt int
	Failed  bool
}

// LeaseRequest says who wants work and what it can run.
type LeaseRequest struct {
	WorkerID   string
	Models     []string // run models the worker's engines serve
	Loaded     []string // models already loaded on the worker, preferred
	Now        time.Time
	LeaseUntil time.Time
}

// Heartbeat is a worker's periodic report on one leased job.
type Heartbeat struct {
	ID         string
	Attempt    int
	Progress   *job.Progress
	Activity   bool
	Now        time.Time
	LeaseUntil time.Time
}

// Outcome is how a job ended, from its worker's point of view.
type Outcome struct {
	Status   job.Status // Succeeded or Failed
	Error    string     // for Failed
	Progress job.Progress
	Results  *job.Results // for Succeeded
	Now      time.Time
}

// Workers records which workers are alive and what they can run.
type Workers interface {
	// PutWorker records a worker's heartbeat; its Busy is not stored (LiveWorkers counts it).
	PutWorker(ctx context.Context, w Worker) error
	// LiveWorkers returns the workers seen at or after since, each with the running jobs it
	// holds as Busy.
	LiveWorkers(ctx context.Context, since time.Time) ([]Worker, error)
	// RemoveWorker forgets a worker that shut down cleanly.
	RemoveWorker(ctx context.Context, id string) error
}

// Worker is one process that runs jobs.
type Worker struct {
	ID     string
	Models []string // run models it can run now
	// Missing explains, per catalog model it cannot run, what is missing (for example
	// "command boltz not found on PATH"), so a 503 can say what to fix.
	Missing map[string]string
	// Loaded lists the models its warm sessions hold loaded now.
	Loaded []string
	Slots  int
	// Busy is how many running jobs the worker holds: counted from the jobs themselves, so
	// that it changes the moment a slot leases or gives up a job, whatever kind of worker
	// it is (in-process, remote, a Slurm executor whose jobs wait in Slurm).
	Busy   int
	SeenAt time.Time
}

// Keys stores API keys and worker tokens, hashed.
type Keys interface {
	// CreateKey stores k; a live key with the same name is a *job.ConflictError, so
	// that revoking by name means one key.
	CreateKey(ctx context.Context, k Key) error
	// KeyByHash returns job.ErrNotFound for an unknown or revoked key. A revocation takes
	// effect at once: the first call after RevokeKey returned, through this store or any
	// other on the same database (another process, another replica), refuses the key,
	// however the store caches lookups.
	KeyByHash(ctx context.Context, hash string) (*Key, error)
	ListKeys(ctx context.Context) ([]Key, error)
	// RevokeKey revokes by id or by name; job.ErrNotFound when neither matches. Revoking
	// a revoked key changes nothing.
	RevokeKey(ctx context.Context, idOrName string, now time.Time) error
}

// Key is an API key as stored: never the key itself, only its hash.
type Key struct {
	ID        string
	Name      string
	Hash      string // hex SHA-256 of the full key
	Prefix    string // the first characters of the key, shown in listings
	CreatedAt time.Time
	RevokedAt time.Time // zero while the key is live
	// Worker marks a worker token: good only for the worker endpoints, which in turn
	// refuse every other key.
	Worker bool
}
