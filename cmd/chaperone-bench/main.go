// Command chaperone-bench measures a chaperone server on this machine, over real HTTP on
// loopback, and prints the figures against the project's targets:
//
//  1. durable creates per second (POST /v1/predictions, each a committed SQLite insert),
//     as a share of a raw SQLite commit loop on the same disk measured in the same run;
//  2. GET /v1/jobs/{id} requests per second from concurrent keep-alive clients, as a share
//     of a bare Go JSON handler under the same load in the same run;
//  3. submit-to-running latency with an idle worker;
//  4. server memory held by 10,000 concurrent Prefer: wait long-polls.
//
// Run it with "make bench". It is a benchmark harness, never a server a user runs: its
// servers use the test-only engine (engine/enginetest), whose jobs succeed at once or
// hang as their name says, so that the figures are those of the job service itself and
// not of a model. Each server runs in a child process (this binary, re-executed) so that
// its memory and CPU are measured apart from the load generator's; the load generator
// shares the machine's cores with it, as any loopback benchmark does.
//
// A MISS is reported, never fatal: the command fails only when it cannot measure.
package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// The command's files: options.go reads the command line, phases.go runs the phases on
// the SQLite servers and postgres.go on PostgreSQL deployments, server.go runs a server in
// its child process, load.go is the load generator, anchor.go the anchors the figures are
// shares of, machine.go what the bench reads of this machine, and report.go prints.

func main() {
	if raw := os.Getenv(serveEnv); raw != "" {
		serveChild(raw)
		return
	}
	o, err := parseOptions()
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaperone-bench:", err)
		os.Exit(2)
	}
	if err := run(o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "chaperone-bench:", err)
		os.Exit(1)
	}
}

// run measures everything o asks for and prints the report to out.
func run(o options, out io.Writer) error {
	var r results
	var err error
	// The waiters' connections need a descriptor each on both sides; the server process
	// inherits this limit.
	if r.fdLimit, err = raiseFDLimit(uint64(o.waiters + o.clients + 256)); err != nil {
		return err
	}
	root := o.dataDir
	if root == "" {
		if root, err = os.MkdirTemp("", "chaperone-bench-"); err != nil {
			return err
		}
		defer os.RemoveAll(root)
	}
	if o.profileDir != "" {
		if o.profileDir, err = filepath.Abs(o.profileDir); err != nil {
			return err
		}
		if err := os.MkdirAll(o.profileDir, 0o750); err != nil {
			return err
		}
	}
	limits := benchLimits()
	printSetup(out, o)

	// Server 1: its worker's one slot is busy with a job that never ends, so every job
	// created stays queued (a real insert, nothing leased), and the hanging job serves
	// the long-polls.
	if err := busyServerPhases(o, &r, root, limits); err != nil {
		return err
	}
	// Server 2: an idle worker, for the pickup latency.
	if err := idleServerPhase(o, &r, filepath.Join(root, "idle"), limits); err != nil {
		return err
	}
	report(out, o, r)
	if o.postgres {
		figs, err := postgresPhases(o, root, limits)
		if err != nil {
			return fmt.Errorf("PostgreSQL: %w", err)
		}
		reportPostgres(out, figs)
	}
	return nil
}
