package slurm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/worker"
)

// finish ends a job whose batch job left Slurm's queue: with the batch job's outcome and
// artifacts when it wrote them, else as Slurm's record of the batch job says. It runs on
// when the executor stops, so that a result that is there is delivered.
func (e *Executor) finish(ctx context.Context, t *tracked) {
	log := e.log.With("job", t.lease.JobID, "attempt", t.lease.Attempt, "slurm_job", t.slurmID)
	e.forwardLog(ctx, t)
	var outcome worker.Completion
	switch err := readJSON(filepath.Join(t.dir, fileOutcome), &outcome); {
	case err == nil:
		if err := e.upload(ctx, t); err != nil {
			log.Error("uploading the results", "error", err.Error())
			outcome = worker.Completion{Fence: t.lease.Fence, Status: job.Failed, Progress: outcome.Progress,
				Error: "storing the results failed: " + err.Error()}
		}
	case errors.Is(err, os.ErrNotExist):
		final, err := e.cfg.Slurm.Ended(ctx, t.slurmID)
		if err != nil {
			log.Warn("Slurm has no record of how the batch job ended; the attempt is lost", "error", err.Error())
			e.drop(t)
			return
		}
		end := judge(final, tail(filepath.Join(t.dir, fileOutput)))
		if end.lost {
			log.Warn("the batch job ended without fault of its own; the job goes back to the queue", "state", final.State)
			e.appendLog(ctx, t, fmt.Sprintf("== chaperone: Slurm job %s ended %s; the job goes back to the queue ==\n", t.slurmID, final.State))
			e.drop(t)
			return
		}
		outcome = worker.Completion{Fence: t.lease.Fence, Status: job.Failed, Error: end.failure}
		if p, ok := e.newProgress(t); ok {
			outcome.Progress = *p
		}
		e.appendLog(ctx, t, fmt.Sprintf("== chaperone: job failed: %s ==\n", end.failure))
	default:
		log.Error("reading the outcome", "error", err.Error())
		t.ending.Store(false) // try again at the next tick
		return
	}
	done, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := e.cfg.Queue.Complete(done, outcome); err != nil && !errors.Is(err, job.ErrLeaseLost) {
		log.Error("completing the job failed; trying again", "error", err.Error())
		t.ending.Store(false)
		return
	}
	log.Info("job finished", "status", outcome.Status)
	e.drop(t)
}

// upload stores the artifacts the batch job wrote.
func (e *Executor) upload(ctx context.Context, t *tracked) error {
	paths, err := artifacts(t.dir)
	if err != nil {
		return err
	}
	for _, p := range paths {
		f, err := os.Open(filepath.Join(t.dir, dirOut, filepath.FromSlash(p)))
		if err != nil {
			return err
		}
		err = e.cfg.Queue.PutArtifact(ctx, t.lease.Fence, p, f)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	return nil
}

// fail completes a job the executor could not hand to Slurm.
func (e *Executor) fail(ctx context.Context, t *tracked, msg string) {
	e.appendLog(ctx, t, fmt.Sprintf("== chaperone: job failed: %s ==\n", msg))
	err := e.cfg.Queue.Complete(ctx, worker.Completion{Fence: t.lease.Fence, Status: job.Failed, Error: msg})
	if err != nil && !errors.Is(err, job.ErrLeaseLost) {
		e.log.Error("failing the job", "job", t.lease.JobID, "error", err.Error())
	}
	os.RemoveAll(t.dir)
}

// drop stops following a job and removes its folder.
func (e *Executor) drop(t *tracked) {
	e.forget(t)
	os.RemoveAll(t.dir)
}

// forget stops following a job, freeing its slot.
func (e *Executor) forget(t *tracked) {
	e.mu.Lock()
	delete(e.jobs, folderName(t.lease.Fence))
	e.mu.Unlock()
	select {
	case e.freed <- struct{}{}:
	default:
	}
}

// tail is the end of a file, for quoting in an error.
func tail(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	const max = 4 << 10
	if st, err := f.Stat(); err == nil && st.Size() > max {
		f.Seek(st.Size()-max, io.SeekStart)
	}
	b, _ := io.ReadAll(f)
	return string(b)
}
