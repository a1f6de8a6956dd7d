package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"

	"github.com/chaperone-bio/chaperone/app"
	"github.com/chaperone-bio/chaperone/doctor"
)

// errNothingRuns is doctor's verdict when no model can run here: exit 1.
var errNothingRuns = errors.New("doctor: no model can run on this machine (see the reasons above)")

// doctorCommand checks this machine as a worker and prints what it found: exit 0 when at
// least one model can run, 1 when none can, 2 on a usage error.
func doctorCommand(inv *invocation, args []string) error {
	fs := inv.flagSet()
	data := fs.String("data", env("CHAPERONE_DATA", app.DefaultDataDir), "the worker's data folder, whose free disk is checked (CHAPERONE_DATA)")
	msaServer := fs.String("msa-server", env("CHAPERONE_MSA_SERVER", ""), "also check a ColabFold-compatible MMseqs2 server: the one chaperone serve searches alignments on (its --msa-server; workers never reach it) (CHAPERONE_MSA_SERVER)")
	server := fs.String("server", env("CHAPERONE_URL", ""), "also check the chaperone server the worker would join (CHAPERONE_URL)")
	// The token's default is read after parsing, so that help never shows it.
	token := fs.String("token", "", "worker token to check with --server (default: CHAPERONE_WORKER_TOKEN)")
	asJSON := fs.Bool("json", false, "print the findings as JSON, for scripts")
	tools := toolsFlag(fs)
	if _, err := parseCommand(fs, args); err != nil {
		return err
	}
	if *token == "" {
		*token = os.Getenv("CHAPERONE_WORKER_TOKEN")
	}
	var msaURL string
	if *msaServer != "" {
		var err error
		if msaURL, err = msaServerURL(*msaServer); err != nil {
			return usageError{err}
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	report := doctor.Check(ctx, doctor.Config{Engines: builtinEngines(), Tools: tools, DataDir: *data,
		MSAServer: msaURL, Server: *server, Token: *token})
	write := report.WriteTable
	if *asJSON {
		write = report.WriteJSON
	}
	if err := write(inv.stdout); err != nil {
		return err
	}
	if report.Runnable == 0 {
		return errNothingRuns
	}
	return nil
}
