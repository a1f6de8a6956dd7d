package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/chaperone-bio/chaperone/app"
	"github.com/chaperone-bio/chaperone/doctor"
	"github.com/chaperone-bio/chaperone/engine"
)

// doctorCommand checks this machine as a worker and prints what it found. Its exit code
// is 0 when at least one model can run, 1 when none can, 2 on a usage error.
func doctorCommand(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "Usage: chaperone doctor [flags]\n\n"+
			"Checks this machine as a worker: per model whether it can run and why not (its tool, version,\n"+
			"self-check, weights, GPU memory), the GPUs, the alignment server, free disk and, with --server,\n"+
			"the server and the worker token. Exit 0 when a model can run, 1 when none can, 2 on a usage error.\n\n")
		fs.PrintDefaults()
	}
	data := fs.String("data", env("CHAPERONE_DATA", app.DefaultDataDir), "the worker's data folder, whose free disk is checked (CHAPERONE_DATA)")
	msaServer := fs.String("msa-server", env("CHAPERONE_MSA_SERVER", engine.DefaultMSAServer), "ColabFold-compatible MMseqs2 server the worker would use (CHAPERONE_MSA_SERVER)")
	server := fs.String("server", env("CHAPERONE_URL", ""), "also check the chaperone server the worker would join (CHAPERONE_URL)")
	token := fs.String("token", env("CHAPERONE_WORKER_TOKEN", ""), "worker token to check with --server (CHAPERONE_WORKER_TOKEN)")
	asJSON := fs.Bool("json", false, "print the findings as JSON, for scripts")
	tools := toolsFlag(fs)
	// Help is asked for, so it goes to standard output; a usage error goes to standard error.
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stdout)
			fs.Usage()
			return 0
		}
		fmt.Fprintf(stderr, "chaperone doctor: %s\n", err)
		fs.SetOutput(stderr)
		fs.Usage()
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "chaperone doctor: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	msaURL, err := msaServerURL(*msaServer)
	if err != nil {
		fmt.Fprintf(stderr, "chaperone doctor: %s\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	report := doctor.Check(ctx, doctor.Config{Engines: builtinEngines(msaURL), Tools: tools, DataDir: *data,
		MSAServer: msaURL, Server: *server, Token: *token})
	write := report.WriteTable
	if *asJSON {
		write = report.WriteJSON
	}
	if err := write(stdout); err != nil {
		fmt.Fprintf(stderr, "chaperone doctor: %s\n", err)
		return 1
	}
	if report.Runnable == 0 {
		return 1
	}
	return 0
}
