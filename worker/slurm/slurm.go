// Package slurm hands leased jobs to a Slurm cluster. An Executor is a worker in the
// protocol's sense (it announces, leases, heartbeats and completes through worker.Queue)
// that runs no engine itself: it writes each lease into a folder of its own on the
// cluster's shared filesystem, submits a batch job (sbatch) that runs it on a compute node
// with `chaperone slurm-job DIR` (RunBatch), and follows that batch job (squeue, scontrol,
// sacct), forwarding its log, progress and results to the server and turning Slurm's own
// ends (time limit, out of memory, preemption, a cancel outside chaperone) into the job's.
//
// Inside the batch job the worker package runs the job with its own code, through a
// worker.Queue that writes to the folder instead of the network (folderQueue).
//
// The executor's files follow a job's way: executor.go starts it, leases, and takes up
// the folders of an earlier run; submit.go writes a lease's folder and submits its batch
// job; follow.go keeps the leases of the jobs held and polls squeue; forward.go forwards
// what a batch job wrote (log, progress); finish.go completes a job once its batch job
// ended, as ends.go reads Slurm's end; probe.go asks the compute nodes what they can run.
// Slurm's commands are in this file, the folder's layout in folder.go, and the batch
// job's side in batch.go.
//
// It imports worker, doctor (for the probe), engine and job of chaperone's packages.
package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
)

// CLI runs Slurm's commands, which find their cluster as they always do (SLURM_CONF, or
// the system's slurm.conf).
type CLI struct {
	// Bin is the folder of sbatch, squeue, scontrol, sacct and scancel; empty: PATH.
	Bin string
}

// RefusedError is sbatch refusing a job (an invalid partition, account or QOS), in
// sbatch's own words.
type RefusedError struct{ Message string }

func (e *RefusedError) Error() string { return "Slurm refused the job: " + e.Message }

// QueueEntry is one job as squeue lists it.
type QueueEntry struct {
	ID        string
	State     string // PENDING, RUNNING, COMPLETING, ...
	Reason    string // why a pending job waits (Resources, Priority, JobHeldUser, ...)
	Partition string
}

// Final is how a batch job ended, as scontrol (or sacct) tells it.
type Final struct {
	State     string // COMPLETED, FAILED, TIMEOUT, CANCELLED, OUT_OF_MEMORY, NODE_FAIL, ...
	Reason    string
	ExitCode  string // "status:signal"
	TimeLimit string // Slurm's [days-]hours:minutes:seconds, or UNLIMITED
}

// ErrUnknownJob is the answer about a job that neither scontrol nor sacct knows.
var ErrUnknownJob = errors.New("slurm: no record of the job")

func (c CLI) command(ctx context.Context, name string, args ...string) (string, error) {
	if c.Bin != "" {
		name = filepath.Join(c.Bin, name)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s: %w: %s", filepath.Base(name), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// Submit submits the batch script with sbatch's options and returns the Slurm job id.
// A refusal of the job itself is a *RefusedError; other errors (no controller, no sbatch)
// say nothing about the job.
func (c CLI) Submit(ctx context.Context, options []string, script string) (string, error) {
	args := append(append([]string{"--parsable"}, options...), script)
	out, err := c.command(ctx, "sbatch", args...)
	if err != nil {
		if msg, refused := refusal(err.Error()); refused {
			return "", &RefusedError{Message: msg}
		}
		return "", err
	}
	// --parsable prints "id" or "id;cluster".
	id, _, _ := strings.Cut(strings.TrimSpace(out), ";")
	if id == "" {
		return "", fmt.Errorf("sbatch printed no job id: %q", out)
	}
	return id, nil
}

// Check asks sbatch whether it would take a batch job with these options, submitting
// nothing (--test-only). A refusal is a *RefusedError in Slurm's words; other errors (no
// controller, no sbatch) are returned as they are.
func (c CLI) Check(ctx context.Context, options []string, script string) error {
	args := append(append([]string{"--test-only"}, options...), script)
	_, err := c.command(ctx, "sbatch", args...)
	if err == nil {
		return nil
	}
	if strings.Contains(err.Error(), "Unable to contact slurm controller") {
		return err
	}
	for line := range strings.Lines(err.Error()) {
		if _, msg, ok := strings.Cut(line, "sbatch: error: "); ok {
			return &RefusedError{Message: strings.TrimSpace(msg)}
		}
	}
	return err
}

// refusal reads sbatch's error output: the job itself was refused when sbatch says the
// submission failed for a reason other than reaching the controller, and its first error
// line says why in Slurm's words ("invalid partition specified: gpux").
func refusal(stderr string) (string, bool) {
	if !strings.Contains(stderr, "Batch job submission failed") ||
		strings.Contains(stderr, "Unable to contact slurm controller") {
		return "", false
	}
	for line := range strings.Lines(stderr) {
		if _, msg, ok := strings.Cut(line, "sbatch: error: "); ok {
			msg = strings.TrimSpace(msg)
			if rest, ok := strings.CutPrefix(msg, "Batch job submission failed: "); ok {
				msg = rest
			}
			return msg, true
		}
	}
	return strings.TrimSpace(stderr), true
}

// squeueFormat is what Queue asks squeue for, one job a line.
const squeueFormat = "%i|%T|%r|%P"

// Queue lists the jobs among ids that Slurm still has queued, running or completing; a job
// that ended is not among them.
func (c CLI) Queue(ctx context.Context, ids []string) (map[string]QueueEntry, error) {
	if len(ids) == 0 {
		return map[string]QueueEntry{}, nil
	}
	out, err := c.command(ctx, "squeue", "-h", "-o", squeueFormat, "-j", strings.Join(ids, ","))
	// squeue asked about one job id only that it no longer knows fails so.
	if err != nil && !strings.Contains(err.Error(), "Invalid job id specified") {
		return nil, err
	}
	return parseQueue(out), nil
}

func parseQueue(out string) map[string]QueueEntry {
	entries := map[string]QueueEntry{}
	for line := range strings.Lines(out) {
		f := strings.Split(strings.TrimSpace(line), "|")
		if len(f) != 4 {
			continue
		}
		entries[f[0]] = QueueEntry{ID: f[0], State: f[1], Reason: f[2], Partition: f[3]}
	}
	return entries
}

// Named lists the ids of the jobs Slurm knows under a job name, those that ended within
// the cluster's MinJobAge included.
func (c CLI) Named(ctx context.Context, name string) ([]string, error) {
	out, err := c.command(ctx, "squeue", "-h", "-t", "all", "-o", "%i", "-n", name)
	if err != nil {
		return nil, err
	}
	return strings.Fields(out), nil
}

// Cancel cancels a batch job; one that already ended is no error.
func (c CLI) Cancel(ctx context.Context, id string) error {
	_, err := c.command(ctx, "scancel", id)
	return err
}

// Ended says how a job that left the queue ended: from scontrol, which keeps finished jobs
// for the cluster's MinJobAge, else from accounting (sacct, where slurmdbd runs), for an
// executor that was down longer than that.
func (c CLI) Ended(ctx context.Context, id string) (Final, error) {
	out, err := c.command(ctx, "scontrol", "show", "job", "-o", id)
	if err == nil {
		if f, ok := parseShowJob(out); ok {
			return f, nil
		}
	}
	acct, acctErr := c.command(ctx, "sacct", "-n", "-P", "-X", "-j", id, "-o", "State,ExitCode,Reason")
	if acctErr != nil {
		return Final{}, fmt.Errorf("%w %s (scontrol: %v; sacct: %v)", ErrUnknownJob, id, err, acctErr)
	}
	f, ok := parseAcct(acct)
	if !ok {
		return Final{}, fmt.Errorf("%w %s", ErrUnknownJob, id)
	}
	return f, nil
}

// parseShowJob reads the one line of `scontrol show job -o`: key=value fields split by
// spaces (the fields read here hold no spaces).
func parseShowJob(out string) (Final, bool) {
	fields := map[string]string{}
	for f := range strings.FieldsSeq(out) {
		if k, v, ok := strings.Cut(f, "="); ok {
			if _, seen := fields[k]; !seen {
				fields[k] = v
			}
		}
	}
	f := Final{State: fields["JobState"], Reason: fields["Reason"], ExitCode: fields["ExitCode"], TimeLimit: fields["TimeLimit"]}
	return f, f.State != ""
}

// parseAcct reads `sacct -n -P -X -o State,ExitCode,Reason`, whose State may read
// "CANCELLED by 0".
func parseAcct(out string) (Final, bool) {
	line, _, _ := strings.Cut(strings.TrimSpace(out), "\n")
	f := strings.Split(line, "|")
	if len(f) != 3 || f[0] == "" {
		return Final{}, false
	}
	state, _, _ := strings.Cut(f[0], " ")
	return Final{State: state, ExitCode: f[1], Reason: f[2]}, true
}
