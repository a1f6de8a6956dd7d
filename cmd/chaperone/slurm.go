package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/chaperone-bio/chaperone/app"
	"github.com/chaperone-bio/chaperone/catalog"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/worker"
	"github.com/chaperone-bio/chaperone/worker/slurm"
)

// slurmConfig is what chaperone worker --slurm is told.
type slurmConfig struct {
	id, dir, binary, models string
	slots                   int
	poll                    time.Duration
	tools                   engine.Tools
	submit                  slurm.Submit
}

// runSlurmExecutor runs the worker as a Slurm executor until SIGTERM, then drains it.
func runSlurmExecutor(sc slurmConfig, queue worker.Queue, reach func(context.Context) error, logger *slog.Logger, drainTimeout time.Duration) error {
	if sc.dir == "" {
		return usageError{errors.New("worker: --slurm needs --slurm-dir, a folder on the cluster's shared filesystem")}
	}
	dir, err := filepath.Abs(sc.dir)
	if err != nil {
		return err
	}
	if sc.binary == "" {
		if sc.binary, err = os.Executable(); err != nil {
			return fmt.Errorf("worker: finding this binary for the batch jobs (give --slurm-binary): %w", err)
		}
	}
	models := strings.FieldsFunc(sc.models, func(r rune) bool { return r == ',' || r == ' ' })
	// Without a list, a probe on a compute node narrows every model down to those it can run.
	probe := len(models) == 0
	if probe {
		for _, e := range builtinEngines() {
			models = append(models, e.Models()...)
		}
	}
	runtime, stall := app.Caps(catalog.Limits{})
	e := slurm.New(slurm.Config{WorkerID: sc.id, Slots: sc.slots, Dir: dir, Models: models, Queue: queue,
		Submit: sc.submit, Binary: sc.binary, Tools: sc.tools, Runtime: runtime,
		Stall: stall, Poll: sc.poll, Probe: probe, Logger: logger})

	return runUntilSignaled(e, reach, logger, drainTimeout, "chaperone Slurm executor running", "id", sc.id, "dir", dir, "models", models)
}

// slurmJob is the hidden `chaperone slurm-job DIR`, the script of every batch job the Slurm
// executor submits: it runs the job of DIR on this compute node. Slurm's SIGTERM (a
// cancel, the time limit) stops the job's processes before Slurm kills the rest.
func slurmJob(inv *invocation, args []string) error {
	pos, err := parseCommand(inv.flagSet(), args, "DIR")
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger := slog.New(slog.NewTextHandler(inv.stderr, nil))
	return slurm.RunBatch(ctx, pos[0], builtinEngines, logger)
}
