package main

import (
	"errors"
	"flag"
	"log/slog"
	"time"

	"github.com/chaperone-bio/chaperone/catalog"
)

// options are what the command line asks of a run.
type options struct {
	duration, warmup time.Duration
	clients, owners  int
	rounds           int
	samples          int
	gap              time.Duration
	waiters          int
	hold             time.Duration
	dataDir          string
	profileDir       string
	logLevel         slog.Level
	synchronous      string
	postgres         bool
}

// parseOptions reads the command line into options; an error is a usage error.
func parseOptions() (options, error) {
	var o options
	flag.DurationVar(&o.duration, "duration", 5*time.Second, "measured time of each throughput phase (creates, gets)")
	flag.DurationVar(&o.warmup, "warmup", time.Second, "unmeasured load before each throughput phase")
	flag.IntVar(&o.rounds, "rounds", 5, "rounds of each throughput phase, alternating with its anchor; -duration is split between them")
	flag.IntVar(&o.clients, "clients", 16, "concurrent keep-alive clients in the throughput phases")
	flag.IntVar(&o.owners, "owners", 256, "distinct API keys (owners); each request uses one at random")
	flag.IntVar(&o.samples, "samples", 200, "serial submissions for the pickup latency")
	flag.DurationVar(&o.gap, "gap", 10*time.Millisecond, "pause between pickup samples, so the worker is idle at each submit")
	flag.IntVar(&o.waiters, "waiters", 10_000, "concurrent Prefer: wait=60 long-polls held for the memory figure")
	flag.DurationVar(&o.hold, "hold", 3*time.Second, "how long the long-polls are held while the server's CPU is measured")
	flag.StringVar(&o.dataDir, "data", "", "parent of the servers' data folders (default: a temporary folder, removed afterwards)")
	flag.TextVar(&o.logLevel, "server-log-level", slog.LevelInfo, "the servers' log level (info, as chaperone serve's default, logs every request); the log goes to server.log in each data folder")
	flag.StringVar(&o.synchronous, "anchor-synchronous", "FULL", "SQLite synchronous setting of the raw commit loop, the anchor of the creates (set it as the store sets its own)")
	flag.BoolVar(&o.postgres, "postgres", true, "also measure deployments of 1, 2 and 4 replicas on PostgreSQL with a remote worker (needs PostgreSQL's server binaries)")
	flag.StringVar(&o.profileDir, "profile", "", "write into this folder the server's CPU profile of each throughput phase and its heap profile while the long-polls are held")
	flag.Parse()
	if o.clients < 1 || o.owners < 1 || o.samples < 1 || o.waiters < 1 || o.rounds < 1 || o.duration <= 0 {
		return o, errors.New("-clients, -owners, -samples, -waiters, -rounds and -duration must be positive")
	}
	return o, nil
}

// benchLimit replaces the quotas and caps that a benchmark would otherwise run into. It is
// not zero, so every check still runs (and costs what it costs) on every create.
const benchLimit = 1_000_000

// benchLimits are the default limits with every quota and cap a benchmark would run into
// raised to benchLimit.
func benchLimits() catalog.Limits {
	limits := catalog.DefaultLimits()
	limits.ActiveJobsPerOwner = benchLimit
	limits.CreatesPerMinute = benchLimit
	limits.QueuedJobs = benchLimit
	limits.RetainedJobs = benchLimit
	// Every connection of the load comes from this one address, as from a proxy that does
	// not forward client addresses: the per-client bounds would refuse all but 64 of them.
	limits.ConnectionsPerClient = benchLimit
	limits.HeldWaitsPerClient = benchLimit
	return limits
}
