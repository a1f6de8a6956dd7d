package slurm

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/worker"
)

// checkRequest asks Slurm, submitting nothing, whether it takes batch jobs with the
// operator's request, so that a wrong partition, account or GPU request stops the executor
// at start, in Slurm's words, instead of failing every job it leases.
func (e *Executor) checkRequest(ctx context.Context) error {
	script := filepath.Join(e.cfg.Dir, "check-"+e.cfg.WorkerID+".sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ntrue\n"), 0o755); err != nil {
		return fmt.Errorf("slurm: the job folder: %w", err)
	}
	defer os.Remove(script)
	general := e.batchOptions("chaperone-check", e.cfg.Dir, e.timeLimit(job.PredictKind))
	if err := e.check(ctx, general, script, "the jobs", "--slurm-partition, --slurm-account, --slurm-gpus, --slurm-gres, --slurm-option"); err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(e.cfg.Submit.For)) {
		opts := append(slices.Clone(general), e.cfg.Submit.For[name]...)
		if err := e.check(ctx, opts, script, "the "+name+" jobs", "--slurm-option-for "+name+"=…"); err != nil {
			return err
		}
	}
	return nil
}

// check asks Slurm whether it takes a batch job with opts; which and flags name the jobs
// and the flags that asked for them in the error.
func (e *Executor) check(ctx context.Context, opts []string, script, which, flags string) error {
	err := e.cfg.Slurm.Check(ctx, opts, script)
	var refused *RefusedError
	switch {
	case errors.As(err, &refused):
		return fmt.Errorf("slurm: Slurm would refuse %s as configured (%s): %s", which, flags, refused.Message)
	case err != nil:
		return fmt.Errorf("slurm: asking Slurm whether it takes %s: %w", which, err)
	}
	return nil
}

// begin writes a leased job's folder and submits its batch job. A job Slurm refuses fails
// with Slurm's words.
func (e *Executor) begin(ctx context.Context, l *worker.Lease) {
	log := e.log.With("job", l.JobID, "attempt", l.Attempt)
	t := &tracked{lease: *l, dir: filepath.Join(e.cfg.Dir, folderName(l.Fence))}
	if err := e.prepare(t); err != nil {
		log.Error("preparing the job folder", "error", err.Error())
		e.fail(ctx, t, "the Slurm executor could not prepare the job's folder: "+err.Error())
		return
	}
	e.appendLog(ctx, t, fmt.Sprintf("== chaperone: attempt %d of %s job %s (model %s) handed to Slurm by worker %s at %s ==\n",
		l.Attempt, l.Kind, l.JobID, l.RunModel, e.cfg.WorkerID, time.Now().UTC().Format(time.RFC3339)))
	// The follow loop takes the job up only after this first submission, so that it
	// cannot submit it too.
	if e.submit(ctx, t) {
		e.mu.Lock()
		e.jobs[folderName(l.Fence)] = t
		e.mu.Unlock()
	}
}

// prepare writes the folder: lease, run spec, batch script, and alive.
func (e *Executor) prepare(t *tracked) error {
	if err := os.RemoveAll(t.dir); err != nil {
		return err
	}
	if err := os.MkdirAll(t.dir, 0o755); err != nil {
		return err
	}
	spec := RunSpec{WorkerID: e.cfg.WorkerID, Tools: e.cfg.Tools,
		Runtime: e.cfg.Runtime[t.lease.Kind], Stall: e.cfg.Stall, Timing: e.leaseTiming()}
	if err := writeJSON(filepath.Join(t.dir, fileLease), t.lease); err != nil {
		return err
	}
	if err := writeJSON(filepath.Join(t.dir, fileRun), spec); err != nil {
		return err
	}
	script := fmt.Sprintf("#!/bin/sh\n# chaperone job %s, attempt %d\nexec %s slurm-job %s\n",
		t.lease.JobID, t.lease.Attempt, shellQuote(e.cfg.Binary), shellQuote(t.dir))
	if err := os.WriteFile(filepath.Join(t.dir, fileScript), []byte(script), 0o755); err != nil {
		return err
	}
	return touch(filepath.Join(t.dir, fileAlive))
}

// submit runs sbatch for a tracked job without a Slurm id. Slurm refusing the job fails
// it, and submit reports false; any other error leaves it for the next tick, which first
// looks for the batch job by its name, in case sbatch did submit it.
func (e *Executor) submit(ctx context.Context, t *tracked) bool {
	id, err := e.cfg.Slurm.Submit(ctx, e.sbatchOptions(t), filepath.Join(t.dir, fileScript))
	var refused *RefusedError
	switch {
	case errors.As(err, &refused):
		e.log.Warn("Slurm refused a job", "job", t.lease.JobID, "error", err.Error())
		e.forget(t)
		e.fail(ctx, t, refused.Error())
		return false
	case err != nil:
		e.log.Warn("submitting to Slurm failed; trying again", "job", t.lease.JobID, "error", err.Error())
		return true
	}
	e.tookID(ctx, t, id)
	e.appendLog(ctx, t, fmt.Sprintf("== chaperone: submitted to Slurm as job %s ==\n", id))
	// The job waits in Slurm's queue until the next tick says otherwise.
	t.stage = job.StageScheduler
	e.heartbeat(ctx, t, worker.Heartbeat{Fence: t.lease.Fence, Progress: &job.Progress{Stage: job.StageScheduler, Total: t.lease.Total}})
	return true
}

// tookID records the Slurm job id of a tracked job.
func (e *Executor) tookID(ctx context.Context, t *tracked, id string) {
	t.slurmID = id
	if err := os.WriteFile(filepath.Join(t.dir, fileSlurmID), []byte(id+"\n"), 0o644); err != nil {
		e.log.Warn("recording the Slurm job id", "job", t.lease.JobID, "slurm_job", id, "error", err.Error())
	}
}

// sbatchOptions are sbatch's options for a job.
func (e *Executor) sbatchOptions(t *tracked) []string {
	opts := e.batchOptions(jobName(t.lease.Fence), t.dir, e.timeLimit(t.lease.Kind))
	opts = append(opts, e.cfg.Submit.For[string(t.lease.Kind)]...)
	return append(opts, e.cfg.Submit.For[t.lease.RunModel]...)
}

// batchOptions are sbatch's options for a batch job of the executor: its name and folder,
// the time limit, and the operator's request (partition, account, GPUs, more options).
func (e *Executor) batchOptions(name, dir, timeLimit string) []string {
	s := e.cfg.Submit
	opts := []string{
		"--job-name=" + name,
		"--comment=chaperone:" + e.cfg.WorkerID,
		"--output=" + filepath.Join(dir, fileOutput),
		"--chdir=" + dir,
		"--no-requeue",
		"--time=" + timeLimit,
	}
	if s.Partition != "" {
		opts = append(opts, "--partition="+s.Partition)
	}
	if s.Account != "" {
		opts = append(opts, "--account="+s.Account)
	}
	if s.GPUs > 0 {
		opts = append(opts, "--gpus="+strconv.Itoa(s.GPUs))
	}
	if s.Gres != "" {
		opts = append(opts, "--gres="+s.Gres)
	}
	return append(opts, s.Options...)
}

// timeLimit is the batch job's --time: as configured, else the runtime cap plus the
// margin in whole minutes, so that the job's own cap, with its own words, ends it first.
func (e *Executor) timeLimit(kind job.Kind) string {
	if e.cfg.Submit.Time != "" {
		return e.cfg.Submit.Time
	}
	limit := e.cfg.Runtime[kind]
	if limit <= 0 {
		return "UNLIMITED"
	}
	return strconv.Itoa(int(math.Ceil((limit + e.cfg.Submit.TimeMargin).Minutes())))
}
