package slurm

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/worker"
)

// RunBatch runs the job of the folder dir on this node, inside its Slurm batch job
// (`chaperone slurm-job DIR`), with the engines the run spec's MSA server gives: the worker
// package runs it (engine, caps, progress, log, upload, panic guard) through a queue that
// writes to the folder. It returns once the job ended. Ending ctx (Slurm's SIGTERM at a
// cancel or the time limit) stops the job as a lost lease, within a heartbeat: its
// processes end, and the executor, not the batch job, says what became of it.
func RunBatch(ctx context.Context, dir string, engines func() []engine.Engine, logger *slog.Logger) error {
	var l worker.Lease
	if err := readJSON(filepath.Join(dir, fileLease), &l); err != nil {
		return fmt.Errorf("slurm-job: reading the lease: %w", err)
	}
	var spec RunSpec
	if err := readJSON(filepath.Join(dir, fileRun), &spec); err != nil {
		return fmt.Errorf("slurm-job: reading the run spec: %w", err)
	}
	reg, err := engine.NewRegistry(engines()...)
	if err != nil {
		return err
	}
	q := &folderQueue{dir: dir, ttl: spec.Timing.LeaseTTL, now: time.Now, stop: ctx.Done()}
	host, _ := os.Hostname()
	// The log shows that, and where, the job ran under Slurm.
	if err := q.writeLog(fmt.Appendf(nil, "== chaperone: running as Slurm job %s on node %s ==\n",
		os.Getenv("SLURM_JOB_ID"), host)); err != nil {
		return fmt.Errorf("slurm-job: writing the log: %w", err)
	}
	w := worker.New(worker.Config{
		ID:      spec.WorkerID,
		Slots:   1,
		Engines: reg,
		Tools:   spec.Tools,
		Queue:   q,
		WorkDir: filepath.Join(dir, dirWork),
		Runtime: map[job.Kind]time.Duration{l.Kind: spec.Runtime},
		Stall:   spec.Stall,
		Logger:  logger,
	})
	w.RunLease(context.WithoutCancel(ctx), &l, spec.Timing)
	if ctx.Err() != nil {
		return q.writeLog([]byte("== chaperone: Slurm stopped the batch job ==\n"))
	}
	return nil
}
