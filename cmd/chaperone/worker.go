package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/chaperone-bio/chaperone/app"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/worker/remote"
)

// runWorker runs jobs of a server on this machine: the engines of serve's in-process
// worker, reaching the server's queue over HTTP with a worker token.
func runWorker(inv *invocation, args []string) error {
	stderr := inv.stderr
	fs := inv.flagSet()
	host, _ := os.Hostname()
	server := fs.String("server", env("CHAPERONE_URL", ""), "URL of a chaperone server, or of the load balancer before its replicas (CHAPERONE_URL)")
	token := fs.String("token", env("CHAPERONE_WORKER_TOKEN", ""), "worker token from chaperone keys create --worker (CHAPERONE_WORKER_TOKEN)")
	id := fs.String("id", env("CHAPERONE_WORKER_ID", host), "worker id, stable across restarts so that a restart hands back what the last run held (CHAPERONE_WORKER_ID)")
	data := fs.String("data", env("CHAPERONE_DATA", app.DefaultDataDir), "folder of work and cache folders (CHAPERONE_DATA)")
	slots := fs.Int("slots", envInt("CHAPERONE_SLOTS", 0), "jobs run at once; 0 = one per GPU found, else 1 (CHAPERONE_SLOTS)")
	logLevel := fs.String("log-level", env("CHAPERONE_LOG_LEVEL", "info"), "debug, info, warn or error (CHAPERONE_LOG_LEVEL)")
	msaServer := fs.String("msa-server", env("CHAPERONE_MSA_SERVER", engine.DefaultMSAServer), "ColabFold-compatible MMseqs2 server for use_msa_server (CHAPERONE_MSA_SERVER)")
	tools := toolsFlag(fs)
	drainTimeout := drainFlag(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if *server == "" || *token == "" {
		return usageError{errors.New("worker: --server and --token (or CHAPERONE_URL and CHAPERONE_WORKER_TOKEN) are required")}
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return usageError{fmt.Errorf("--log-level: %w", err)}
	}
	msaURL, err := msaServerURL(*msaServer)
	if err != nil {
		return usageError{err}
	}
	queue, err := remote.NewClient(*server, *token)
	if err != nil {
		return usageError{err}
	}
	logger := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level}))

	w, err := app.NewWorker(app.WorkerConfig{ID: *id, Slots: *slots, DataDir: *data,
		Engines: builtinEngines(msaURL), Tools: tools, Queue: queue, Logger: logger})
	if err != nil {
		return err
	}
	signaled, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The worker's own context outlives the signal by the drain.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := w.Start(ctx); err != nil {
		return err
	}
	logger.Info("chaperone worker running", "server", *server, "id", *id)
	<-signaled.Done()
	stop() // a second signal ends the process at once
	drain(logger, *drainTimeout, w.Drain)
	cancel()
	return w.Wait()
}
