package worker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	"github.com/chaperone-bio/chaperone/align"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/proc"
	"github.com/chaperone-bio/chaperone/job"
)

// RunLease runs one job that was leased elsewhere to its end, as a slot of a leasing
// worker runs it (engine, caps, progress, log, upload, completion), under the lease timing
// given: a Slurm batch job runs the lease its executor took, through a Queue of its own.
// The worker takes no other work, so it is not started; RunLease uses its first slot.
func (w *Worker) RunLease(ctx context.Context, l *Lease, timing Timing) {
	w.mu.Lock()
	w.timing = timing
	w.mu.Unlock()
	s := w.slots[0]
	defer w.closeSession(s)
	w.run(ctx, l, s)
}

// run drives one leased job to its end.
func (w *Worker) run(ctx context.Context, l *Lease, s *slotState) {
	j := l.Job()
	timing := w.leaseTiming()
	log := w.log.With("job", j.ID, "attempt", j.Attempt, "model", j.RunModel)
	log.Info("job started")
	started := time.Now()
	workDir := filepath.Join(w.cfg.WorkDir, fmt.Sprintf("%s-%d", j.ID, j.Attempt))
	jl := newJobLog(w.cfg.Queue, l.Fence, workDir, w.log, started.Add(timing.LeaseTTL))
	fmt.Fprintf(jl, "== chaperone: attempt %d of %s job %s (model %s) on worker %s at %s ==\n",
		j.Attempt, j.Kind, j.ID, j.RunModel, w.cfg.ID, started.UTC().Format(time.RFC3339))

	defer os.RemoveAll(workDir)

	runCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	tracker := &progressTracker{last: time.Now()}
	beats := make(chan struct{})
	go func() {
		defer close(beats)
		w.heartbeat(runCtx, stop, j, timing, started, jl, tracker)
	}()

	out, err := w.execute(runCtx, j, l.Alignments, workDir, s, jl, tracker)
	var results *job.Results
	if err == nil && context.Cause(runCtx) == nil {
		tracker.report(job.Progress{Stage: job.StageWriting, Done: j.Total, Total: j.Total})
		results, err = w.upload(runCtx, l.Fence, workDir, out)
	}
	stop(nil)
	<-beats

	cause := context.Cause(runCtx)
	final := tracker.snapshot()
	outcome := Completion{Fence: l.Fence, Progress: final}
	switch {
	case ctx.Err() != nil: // the worker is shutting down; Wait hands the job back, and the
		// server closes the attempt's log saying so.
		jl.flush(true)
		return
	case errors.Is(cause, errLeaseLost):
		// The server refuses this attempt's writes now, the log included, and drops
		// whatever files it stored.
		log.Info("job stopped: lease lost")
		return
	case errors.Is(cause, errRuntimeCap):
		outcome.Status, outcome.Error = job.Failed,
			fmt.Sprintf("the job exceeded the %s runtime cap of %s and was stopped", j.Kind, w.cfg.Runtime[j.Kind])
	case errors.Is(cause, errStall):
		outcome.Status, outcome.Error = job.Failed,
			fmt.Sprintf("the job showed no progress and no log output for %s (the stall cap) and was stopped", w.cfg.Stall)
	case err != nil:
		outcome.Status, outcome.Error = job.Failed, err.Error()
	default:
		outcome.Status, outcome.Results = job.Succeeded, results
		outcome.Progress = job.Progress{Stage: final.Stage, Done: j.Total, Total: j.Total}
	}
	if outcome.Status == job.Failed {
		fmt.Fprintf(jl, "== chaperone: job failed: %s ==\n", firstLine(outcome.Error))
	} else {
		fmt.Fprintf(jl, "== chaperone: job succeeded in %.1f s ==\n", time.Since(started).Seconds())
	}
	jl.flush(true)
	done, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := w.cfg.Queue.Complete(done, outcome); err != nil {
		if errors.Is(err, job.ErrLeaseLost) {
			// Fenced out: someone else owns the job's fate now (cancel, delete, a new
			// attempt), and the server dropped this attempt's files.
			log.Info("completion not accepted: the lease was lost")
		} else {
			// The job stays running until its lease runs out and it is tried again; the
			// server drops this attempt's files then.
			log.Error("completing the job failed", "error", err.Error())
		}
		return
	}
	log.Info("job finished", "status", outcome.Status, "seconds", time.Since(started).Seconds())
}

// execute hands the job to its engine: through the slot's session for a warm engine, else
// by one run of the engine's tool.
func (w *Worker) execute(ctx context.Context, j *job.Job, alignments []align.Result, workDir string, s *slotState, jl *jobLog, t *progressTracker) (*engine.Output, error) {
	eng, ok := w.cfg.Engines.ForModel(j.RunModel)
	if !ok {
		return nil, fmt.Errorf("this worker has no engine for model %s", j.RunModel)
	}
	if err := os.RemoveAll(workDir); err != nil {
		return nil, fmt.Errorf("preparing the work folder: %w", err)
	}
	if err := os.MkdirAll(workDir, 0o755); err != nil {
		return nil, fmt.Errorf("preparing the work folder: %w", err)
	}
	absWorkDir, err := filepath.Abs(workDir)
	if err != nil {
		return nil, err
	}
	t.report(job.Progress{Stage: job.StageStarting, Total: j.Total})
	run := &engine.Run{
		Job:        j,
		WorkDir:    workDir,
		Tools:      w.cfg.Tools,
		Alignments: alignments,
		Log:        jl,
		Report:     t.report,
		Exec: func(ctx context.Context, c engine.Command) error {
			c.Env = w.processEnv(c.Env, absWorkDir, s.gpu)
			return proc.Exec(ctx, workDir, jl, c)
		},
	}
	warm, ok := eng.(engine.Warm)
	if !ok {
		// A tool run once per job needs the slot's GPU to itself.
		w.closeSession(s)
		return guard(eng, run, func() (*engine.Output, error) { return eng.Run(ctx, run) })
	}
	sess, err := w.session(ctx, s, warm)
	if err != nil {
		return nil, fmt.Errorf("starting the %s engine: %w", eng.Name(), err)
	}
	out, err := guard(eng, run, func() (*engine.Output, error) { return sess.Run(ctx, run) })
	if dead := sess.Err(); dead != nil {
		fmt.Fprintf(jl, "== chaperone: the %s session ended (%v); the next job starts a fresh one ==\n", eng.Name(), dead)
		w.closeSession(s)
	}
	return out, err
}

// processEnv is the environment added to every process a job or session starts: the marker
// that lets a restarted worker find it (see killLeftovers) and the slot's GPU.
func (w *Worker) processEnv(env []string, dir, gpu string) []string {
	env = append(env[:len(env):len(env)], runMarker+"="+dir)
	if gpu != "" {
		env = append(env, "CUDA_VISIBLE_DEVICES="+gpu)
	}
	return env
}

// guard runs one job through its engine. An engine that panics fails that job, with the
// panic in the job's error and its stack in the run log, instead of taking the server down
// with every other job in it.
func guard(eng engine.Engine, run *engine.Run, fn func() (*engine.Output, error)) (out *engine.Output, err error) {
	defer func() {
		if v := recover(); v != nil {
			fmt.Fprintf(run.Log, "== chaperone: the %s engine panicked: %v ==\n%s", eng.Name(), v, debug.Stack())
			out, err = nil, fmt.Errorf("internal error in the %s engine: %v", eng.Name(), v)
		}
	}()
	return fn()
}
