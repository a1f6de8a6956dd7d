package slurm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/worker"
)

// The files of a job folder, <slurm-dir>/<job>-<attempt>/. The executor writes the lease,
// the run spec, the script, the Slurm job id and alive; the batch job writes the rest.
const (
	fileLease    = "lease.json"    // the worker.Lease as leased
	fileRun      = "run.json"      // RunSpec
	fileScript   = "job.sh"        // the batch script
	fileSlurmID  = "slurm_job_id"  // the id sbatch gave
	fileAlive    = "alive"         // touched by the executor at every heartbeat
	fileOutput   = "slurm.out"     // the batch job's own output
	fileLog      = "log"           // the job's run log
	fileLogSent  = "log.sent"      // how much of log the executor forwarded
	fileProgress = "progress.json" // the latest job.Progress
	fileOutcome  = "outcome.json"  // the worker.Completion
	dirOut       = "out"           // the artifacts, at their paths
	dirWork      = "work"          // the engine's work folders
)

// RunSpec is what a batch job needs besides its lease to run it as the executor's worker
// would.
type RunSpec struct {
	WorkerID string       `json:"worker_id"`
	Tools    engine.Tools `json:"tools,omitempty"`
	// Runtime and Stall are the job's caps (zero: none).
	Runtime time.Duration `json:"runtime_ns"`
	Stall   time.Duration `json:"stall_ns"`
	// Timing is the server's: the batch job writes its log and progress every
	// Timing.Heartbeat, and stops as a lost lease once the executor has not touched alive
	// for Timing.LeaseTTL.
	Timing worker.Timing `json:"timing"`
}

// folderName is a job folder's name, which is also the batch job's name without its
// "chaperone-" prefix.
func folderName(f worker.Fence) string { return fmt.Sprintf("%s-%d", f.JobID, f.Attempt) }

// jobName is the batch job's name, by which a restarted executor finds it.
func jobName(f worker.Fence) string { return "chaperone-" + folderName(f) }

// writeJSON writes v to path atomically (a rename of a synced file), so that a reader
// sees the old content or the new, never a part.
func writeJSON(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return writeAtomic(path, b)
}

func writeAtomic(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// folderQueue is the worker.Queue of a batch job: it writes what a worker sends the
// server into the job's folder, from where the executor forwards it. The server's fence is
// the executor's to keep; here a lease is lost only when the executor is gone.
type folderQueue struct {
	dir  string
	ttl  time.Duration // how long alive may go untouched
	now  func() time.Time
	stop <-chan struct{} // closed when Slurm stops the batch job
}

var _ worker.Queue = (*folderQueue)(nil)

var errNotInBatchJob = errors.New("slurm: a batch job runs one given lease and neither announces nor leases")

func (q *folderQueue) Announce(context.Context, worker.Announcement) (worker.Timing, error) {
	return worker.Timing{}, errNotInBatchJob
}

func (q *folderQueue) Lease(context.Context, worker.LeaseRequest) (*worker.Lease, error) {
	return nil, errNotInBatchJob
}

// Heartbeat records the progress. It refuses the lease once Slurm stopped the batch job,
// and once the executor has not touched alive for a lease TTL: an executor gone for good
// leaves no batch job burning its allocation.
func (q *folderQueue) Heartbeat(_ context.Context, hb worker.Heartbeat) error {
	select {
	case <-q.stop:
		return job.ErrLeaseLost
	default:
	}
	st, err := os.Stat(filepath.Join(q.dir, fileAlive))
	if err != nil || q.now().Sub(st.ModTime()) > q.ttl {
		return job.ErrLeaseLost
	}
	if hb.Progress == nil {
		return nil
	}
	return writeJSON(filepath.Join(q.dir, fileProgress), hb.Progress)
}

// AppendLog appends p to the folder's log, which the executor forwards. The folder is on
// this machine's filesystem, where no append is lost on the way and sent again, so the
// offset is not needed to keep one once; the batch job's own lines (RunBatch) go there too.
func (q *folderQueue) AppendLog(_ context.Context, _ worker.Fence, _ int64, p []byte) error {
	return q.writeLog(p)
}

// writeLog appends p to the folder's log.
func (q *folderQueue) writeLog(p []byte) error {
	f, err := os.OpenFile(filepath.Join(q.dir, fileLog), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(p); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func (q *folderQueue) PutArtifact(_ context.Context, _ worker.Fence, path string, r io.Reader) error {
	if !filepath.IsLocal(path) {
		return fmt.Errorf("slurm: artifact path %q is not local", path)
	}
	dst := filepath.Join(q.dir, dirOut, filepath.FromSlash(path))
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Complete writes the outcome, synced, so that the executor finds it whole once Slurm
// says the batch job ended.
func (q *folderQueue) Complete(_ context.Context, c worker.Completion) error {
	return writeJSON(filepath.Join(q.dir, fileOutcome), c)
}

func (q *folderQueue) ReleaseWorker(context.Context, string) error { return errNotInBatchJob }
func (q *folderQueue) HandBack(context.Context, string) error      { return errNotInBatchJob }
func (q *folderQueue) RemoveWorker(context.Context, string) error  { return errNotInBatchJob }

// artifacts lists the files under a folder's out/, as slash-separated paths.
func artifacts(dir string) ([]string, error) {
	root := filepath.Join(dir, dirOut)
	var paths []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && p == root {
			return fs.SkipAll
		}
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(root, p)
		paths = append(paths, filepath.ToSlash(rel))
		return err
	})
	return paths, err
}

// shellQuote quotes s for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// touch sets a file's modification time to now, creating it when missing.
func touch(path string) error {
	now := time.Now()
	if err := os.Chtimes(path, now, now); err == nil || !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return os.WriteFile(path, nil, 0o644)
}
