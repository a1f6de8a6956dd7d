package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/chaperone-bio/chaperone/app"
	"github.com/chaperone-bio/chaperone/catalog"
	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/worker/remote"
	"github.com/chaperone-bio/chaperone/worker/slurm"
)

// runWorker runs jobs of a server on this machine: the engines of serve's in-process
// worker, reaching the server's queue over HTTP with a worker token.
func runWorker(inv *invocation, args []string) error {
	stderr := inv.stderr
	fs := inv.flagSet()
	host, _ := os.Hostname()
	server := fs.String("server", env("CHAPERONE_URL", ""), "URL of a chaperone server, or of the load balancer before its replicas (CHAPERONE_URL)")
	// The token's default is read after parsing, so that help never shows it.
	token := fs.String("token", "", "worker token from chaperone keys create --worker (default: CHAPERONE_WORKER_TOKEN)")
	id := fs.String("id", env("CHAPERONE_WORKER_ID", host), "worker id, stable across restarts so that a restart hands back what the last run held (CHAPERONE_WORKER_ID)")
	data := fs.String("data", env("CHAPERONE_DATA", app.DefaultDataDir), "folder of work and cache folders (CHAPERONE_DATA)")
	slots := fs.Int("slots", envInt("CHAPERONE_SLOTS", 0), "jobs run at once; 0 = one per GPU found, else 1 (CHAPERONE_SLOTS)")
	logLevel := fs.String("log-level", env("CHAPERONE_LOG_LEVEL", "info"), "debug, info, warn or error (CHAPERONE_LOG_LEVEL)")
	tools := toolsFlag(fs)
	drainTimeout := drainFlag(fs)
	useSlurm := fs.Bool("slurm", false, "hand each job to Slurm (sbatch) instead of running it here: for a login node in front of a Slurm cluster")
	var sc slurmConfig
	fs.StringVar(&sc.dir, "slurm-dir", env("CHAPERONE_SLURM_DIR", ""), "with --slurm: folder of the jobs' folders, on a filesystem the compute nodes share (CHAPERONE_SLURM_DIR)")
	fs.StringVar(&sc.submit.Partition, "slurm-partition", "", "with --slurm: sbatch --partition")
	fs.StringVar(&sc.submit.Account, "slurm-account", "", "with --slurm: sbatch --account, the allocation the jobs are charged to")
	fs.IntVar(&sc.submit.GPUs, "slurm-gpus", 0, "with --slurm: sbatch --gpus, GPUs per job (0: none asked)")
	fs.StringVar(&sc.submit.Gres, "slurm-gres", "", "with --slurm: sbatch --gres, e.g. gpu:a100:1")
	fs.Func("slurm-option", "with --slurm: one more sbatch option, e.g. --qos=high; repeatable", func(v string) error {
		sc.submit.Options = append(sc.submit.Options, v)
		return nil
	})
	fs.Func("slurm-option-for", "with --slurm: KIND=OPTION or MODEL=OPTION, one more sbatch option for the jobs of one kind (predict, design, embed) or one model, e.g. embed=--partition=small or boltz2=--mem=64G; repeatable; a model's wins over its kind's, both over --slurm-option", func(v string) error {
		name, opt, ok := strings.Cut(v, "=")
		if !ok || name == "" || !strings.HasPrefix(opt, "-") {
			return fmt.Errorf("want KIND=OPTION or MODEL=OPTION (such as embed=--partition=small), got %q", v)
		}
		if _, known := catalog.Default().Model(name); !known && !slices.Contains([]job.Kind{job.PredictKind, job.DesignKind, job.EmbedKind}, job.Kind(name)) {
			return fmt.Errorf("%q is neither a model nor a kind (predict, design, embed)", name)
		}
		if sc.submit.For == nil {
			sc.submit.For = map[string][]string{}
		}
		sc.submit.For[name] = append(sc.submit.For[name], opt)
		return nil
	})
	fs.StringVar(&sc.submit.Time, "slurm-time", "", "with --slurm: sbatch --time for every job, in Slurm's format; default: the job's runtime cap plus --slurm-time-margin")
	fs.DurationVar(&sc.submit.TimeMargin, "slurm-time-margin", 5*time.Minute, "with --slurm: added to the runtime cap for the Slurm time limit, so that chaperone's cap ends a job first")
	fs.StringVar(&sc.binary, "slurm-binary", "", "with --slurm: this chaperone binary as the compute nodes see it; default: this binary's path, which must be on the shared filesystem")
	fs.DurationVar(&sc.poll, "slurm-poll", slurm.DefaultPoll, "with --slurm: how often squeue is asked about the batch jobs held (logs, progress and results are read from the shared folder every heartbeat)")
	fs.StringVar(&sc.models, "slurm-models", "", "with --slurm: comma-separated models to offer; default: those chaperone doctor, run as a batch job at start, finds a compute node can run")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if *token == "" {
		*token = os.Getenv("CHAPERONE_WORKER_TOKEN")
	}
	if *server == "" || *token == "" {
		return usageError{errors.New("worker: --server and --token (or CHAPERONE_URL and CHAPERONE_WORKER_TOKEN) are required")}
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return usageError{fmt.Errorf("--log-level: %w", err)}
	}
	queue, err := remote.NewClient(*server, *token)
	if err != nil {
		return usageError{err}
	}
	logger := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level}))
	reach := func(ctx context.Context) error { return reachServer(ctx, queue, *server, logger) }
	if *useSlurm {
		sc.id, sc.slots, sc.tools = *id, *slots, tools
		return runSlurmExecutor(sc, queue, reach, logger, *drainTimeout)
	}

	w, err := app.NewWorker(app.WorkerConfig{ID: *id, Slots: *slots, DataDir: *data,
		Engines: builtinEngines(), Tools: tools, Queue: queue, Logger: logger})
	if err != nil {
		return err
	}
	return runUntilSignaled(w, reach, logger, *drainTimeout, "chaperone worker running", "server", *server, "id", *id)
}

// runner is a worker of either kind: one that runs jobs here, or a Slurm executor.
type runner interface {
	Start(ctx context.Context) error
	Drain(ctx context.Context) error
	Wait() error
	// Stopped is closed when the worker stops on its own: the server refused its token.
	Stopped() <-chan struct{}
}

// runUntilSignaled waits until reach finds the server, then runs r until SIGTERM or
// SIGINT, drains it for up to drainTimeout and stops it; a second signal ends the process
// at once. A worker the server refuses stops at once, with the error that says so.
func runUntilSignaled(r runner, reach func(context.Context) error, logger *slog.Logger, drainTimeout time.Duration, running string, attrs ...any) error {
	signaled, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := reach(signaled); err != nil {
		if signaled.Err() != nil {
			return nil // stopped while it waited: nothing ran
		}
		return err
	}
	// The worker's own context outlives the signal by the drain.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := r.Start(ctx); err != nil {
		return err
	}
	logger.Info(running, attrs...)
	select {
	case <-signaled.Done():
		stop() // a second signal ends the process at once
		drain(logger, drainTimeout, r.Drain)
	case <-r.Stopped():
	}
	cancel()
	return r.Wait()
}

// Pauses between tries to reach the server at start: doubling from the first to the last.
const (
	firstReachPause = time.Second
	lastReachPause  = 30 * time.Second
)

// reachServer returns once the server at url answers and takes the worker's token. A worker
// started before its server (both at boot, or the server restarting) waits for it, saying
// in the log what it waits for, trying again after a pause that grows to 30 s. A refused
// token is no reason to wait: it is the error, in one line. ctx ending ends the wait.
func reachServer(ctx context.Context, q *remote.Client, url string, logger *slog.Logger) error {
	pause := firstReachPause
	for {
		_, err := q.Token(ctx)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, remote.ErrUnauthorized):
			return fmt.Errorf("the server at %s refused this worker token: it is unknown, revoked, or an API key "+
				"rather than a worker token (chaperone keys create --worker issues one)", url)
		case ctx.Err() != nil:
			return ctx.Err()
		}
		logger.Warn("waiting for the server to answer; trying again", "server", url, "in", pause.String(), "error", err.Error())
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			return ctx.Err()
		}
		pause = min(2*pause, lastReachPause)
	}
}
