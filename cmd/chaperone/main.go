// Command chaperone is the chaperone server, its administration commands, and the
// command-line client of the API. Its commands are the table below; "chaperone help"
// lists them.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"net/netip"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/chaperone-bio/chaperone/api"
	"github.com/chaperone-bio/chaperone/apikey"
	"github.com/chaperone-bio/chaperone/app"
	"github.com/chaperone-bio/chaperone/catalog"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/store"
	"github.com/chaperone-bio/chaperone/worker/remote"
)

// root is the command table: every command, in the order help lists them.
var root = &command{
	name:    "chaperone",
	summary: "a self-hostable server for biomolecular machine learning",
	args:    "<command> [arguments] [flags]",
	subcommands: []*command{
		{name: "serve", summary: "run the API and an in-process worker", args: "[flags]", run: serve},
		{name: "worker", summary: "run jobs of a server on this machine (a GPU node)", args: "--server URL --token T [flags]", run: runWorker},
		{name: "doctor", summary: "check this machine as a worker: per model its tool, version, weights and GPU memory, and why not", args: "[--server URL --token T] [--json] [flags]", run: doctorCommand},
		{name: "keys", summary: "issue, list and revoke API keys and worker tokens, on the server's machine", args: "<command> [arguments] [flags]", subcommands: []*command{
			{name: "create", summary: "issue an API key (printed once); --worker: a worker token", args: "--name NAME [--worker] [flags]", run: keysCreate},
			{name: "list", summary: "list keys (never the keys themselves)", args: "[flags]", run: keysList},
			{name: "revoke", summary: "revoke a key", args: "ID|NAME [flags]", run: keysRevoke},
		}},
		{name: "predict", summary: "submit a structure prediction", args: "--sequence S | --input FILE | --target FILE...  [--model M] [--param K=V]... [--wait] [--out DIR] [flags]", run: withInterrupt(create)},
		{name: "design", summary: "submit a design", args: "--protocol P --spec FILE | --structure FILE --contig C  [--param K=V]... [--wait] [--out DIR] [flags]", run: withInterrupt(create)},
		{name: "embed", summary: "submit an embedding of sequences", args: "--sequence S | --input FASTA  [--model M] [--pool P] [--format F] [--wait] [--out DIR] [flags]", run: withInterrupt(create)},
		{name: "jobs", summary: "follow, cancel, delete and download your jobs", args: "<command> [arguments] [flags]", subcommands: []*command{
			{name: "list", summary: "list your jobs, newest first", args: "[--limit N] [--cursor C] [--all] [flags]", run: withInterrupt(jobsList)},
			{name: "get", summary: "show a job", args: "ID [flags]", run: withInterrupt(jobsGet)},
			{name: "wait", summary: "wait for a job to end, showing its progress; exit 1 if it fails", args: "ID [--out DIR] [flags]", run: withInterrupt(jobsWait)},
			{name: "cancel", summary: "cancel a job", args: "ID [flags]", run: withInterrupt(jobsCancel)},
			{name: "delete", summary: "delete a job and its files; a running job is stopped", args: "ID [flags]", run: withInterrupt(jobsDelete)},
			{name: "results", summary: "show a job's results: rows, designs or embeddings, and its artifacts", args: "ID [flags]", run: withInterrupt(jobsResults)},
			{name: "logs", summary: "print a job's log", args: "ID [--follow] [flags]", run: withInterrupt(jobsLogs)},
			{name: "download", summary: "save a job's files", args: "ID [--out DIR] [--zip] [--artifact PATH]... [flags]", run: withInterrupt(jobsDownload)},
		}},
		{name: "models", summary: "models, protocols and whether a worker can run them", args: "[flags]", run: withInterrupt(models)},
		{name: "version", summary: "print the version (also: chaperone --version)", run: printVersion},
		{name: "slurm-job", summary: "run the job of a Slurm executor's folder inside its batch job", args: "DIR", hidden: true, run: slurmJob},
	},
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func printVersion(inv *invocation, args []string) error {
	if _, err := parseCommand(inv.flagSet(), args); err != nil {
		return err
	}
	_, err := fmt.Fprintln(inv.stdout, versionLine(buildInfo()))
	return err
}

// usageError is a command line that cannot run as it is: a flag or argument wrong or
// missing, or a file it names unreadable. Exit 2, and the command's usage is shown.
type usageError struct{ error }

func isUsage(err error) bool {
	var u usageError
	return errors.As(err, &u)
}

// env returns the value of an environment variable, or def.
func env(name, def string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return def
}

func serve(inv *invocation, args []string) error {
	stderr := inv.stderr
	fs := inv.flagSet()
	addr := fs.String("addr", env("CHAPERONE_ADDR", "127.0.0.1:8080"), "listen address (CHAPERONE_ADDR)")
	data := fs.String("data", env("CHAPERONE_DATA", app.DefaultDataDir), "data folder: database, artifacts, work folders (CHAPERONE_DATA)")
	storeURL := storeFlag(fs)
	drainTimeout := drainFlag(fs)
	artifacts := fs.String("artifacts", env("CHAPERONE_ARTIFACTS", ""), "s3://bucket/prefix (AWS_ENDPOINT_URL, AWS_REGION, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY) or a folder, shared by all replicas; default: artifacts in --data (CHAPERONE_ARTIFACTS)")
	slots := fs.Int("slots", envInt("CHAPERONE_SLOTS", 0), "jobs the in-process worker runs at once; 0 = one per GPU found, else 1 (CHAPERONE_SLOTS)")
	noWorker := fs.Bool("no-worker", env("CHAPERONE_NO_WORKER", "") == "1", "serve the API without an in-process worker (CHAPERONE_NO_WORKER=1)")
	metricsAddr := fs.String("metrics-addr", env("CHAPERONE_METRICS_ADDR", ""), "serve /metrics on this address alone, for the operator, instead of with the API (CHAPERONE_METRICS_ADDR)")
	publicURL := fs.String("public-url", env("CHAPERONE_PUBLIC_URL", ""), "public base URL, used in problem type URIs; default: from each request (CHAPERONE_PUBLIC_URL)")
	logLevel := fs.String("log-level", env("CHAPERONE_LOG_LEVEL", "info"), "debug, info, warn or error (CHAPERONE_LOG_LEVEL)")
	alignment, err := newAlignFlags(fs)
	if err != nil {
		return usageError{err}
	}
	tools := toolsFlag(fs)
	stagingPerJob, err := bytesFlag(fs, "upload-staging-per-job", "CHAPERONE_UPLOAD_STAGING_PER_JOB", remote.DefaultStagingPerJob,
		"bytes of unfinished artifact uploads from remote workers that this server keeps for one job; a part over it is refused (413)")
	if err != nil {
		return usageError{err}
	}
	stagingPerWorker, err := bytesFlag(fs, "upload-staging-per-worker", "CHAPERONE_UPLOAD_STAGING_PER_WORKER", remote.DefaultStagingPerWorker,
		"bytes of unfinished artifact uploads that this server keeps for the workers of one worker token, together")
	if err != nil {
		return usageError{err}
	}
	var proxies []netip.Prefix
	addProxies := func(v string) error {
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s == "" {
				continue
			}
			p, err := netip.ParsePrefix(s)
			if err != nil {
				a, aerr := netip.ParseAddr(s)
				if aerr != nil {
					return fmt.Errorf("not a CIDR or address: %q", s)
				}
				p = netip.PrefixFrom(a, a.BitLen())
			}
			proxies = append(proxies, p)
		}
		return nil
	}
	if err := addProxies(env("CHAPERONE_TRUSTED_PROXIES", "")); err != nil {
		return usageError{fmt.Errorf("CHAPERONE_TRUSTED_PROXIES: %w", err)}
	}
	fs.Func("trusted-proxy", "CIDR whose forwarding header (--forwarded-header) is believed; repeatable, comma lists allowed; none by default (CHAPERONE_TRUSTED_PROXIES)", addProxies)
	forwardedHeader := fs.String("forwarded-header", env("CHAPERONE_FORWARDED_HEADER", api.ForwardedXFF), "the one header the trusted proxies set to the client address: X-Forwarded-For, Forwarded (RFC 7239) or another address list; only the rightmost address not of a trusted proxy is believed (CHAPERONE_FORWARDED_HEADER)")
	limits := catalog.DefaultLimits()
	if v := env("CHAPERONE_LIMITS", ""); v != "" {
		for _, kv := range strings.Split(v, ",") {
			if err := setLimit(&limits, kv); err != nil {
				return usageError{fmt.Errorf("CHAPERONE_LIMITS: %w", err)}
			}
		}
	}
	fs.Func("limit", "NAME=VALUE: change a limit or quota (names as in GET /v1/models \"limits\"); repeatable (CHAPERONE_LIMITS=NAME=VALUE,...)", func(v string) error {
		return setLimit(&limits, v)
	})
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return usageError{fmt.Errorf("--log-level: %w", err)}
	}
	if _, err := api.CanonicalForwardedHeader(*forwardedHeader); err != nil {
		return usageError{fmt.Errorf("--forwarded-header: %w", err)}
	}
	version := versionLine(buildInfo())
	searcher, err := alignment.searcher()
	if err != nil {
		return usageError{err}
	}
	logger := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level}))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	stores, err := app.OpenStoresAt(ctx, app.Locations{DataDir: *data, Store: *storeURL, Artifacts: *artifacts})
	if err != nil {
		return err
	}
	a, err := app.Start(ctx, app.Config{
		Store:            stores.Jobs,
		Artifacts:        stores.Artifacts,
		Addr:             *addr,
		MetricsAddr:      *metricsAddr,
		DataDir:          *data,
		Version:          version,
		Logger:           logger,
		Limits:           limits,
		PublicURL:        *publicURL,
		TrustedProxies:   proxies,
		ForwardedHeader:  *forwardedHeader,
		Slots:            *slots,
		NoWorker:         *noWorker,
		Engines:          builtinEngines(),
		Tools:            tools,
		Searcher:         searcher,
		AlignCache:       alignment.cacheLimits(),
		AlignSlots:       *alignment.searches,
		StagingPerJob:    *stagingPerJob,
		StagingPerWorker: *stagingPerWorker,
	})
	if err != nil {
		return errors.Join(err, stores.Close())
	}
	select {
	case <-ctx.Done():
		stop() // a second signal ends the process at once
		drain(logger, *drainTimeout, a.Drain)
	case err = <-a.Err():
	}
	return errors.Join(err, a.Close(), stores.Close())
}

func setLimit(l *catalog.Limits, kv string) error {
	name, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
	if !ok {
		return usageError{fmt.Errorf("want NAME=VALUE, got %q", kv)}
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return usageError{fmt.Errorf("limit %s: %q is not an integer", name, v)}
	}
	if err := l.Set(name, n); err != nil {
		return usageError{err}
	}
	return nil
}

// parseInterleaved parses flags that may come before or after positional arguments
// ("keys revoke NAME --data DIR") and returns the positional ones.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return positional, nil
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// toolsFlag defines --tool, which serve and worker share, with CHAPERONE_TOOL_<NAME>.
func toolsFlag(fs *flag.FlagSet) engine.Tools {
	tools := engine.Tools{}
	for _, kv := range os.Environ() {
		if name, path, ok := strings.Cut(strings.TrimPrefix(kv, "CHAPERONE_TOOL_"), "="); ok && strings.HasPrefix(kv, "CHAPERONE_TOOL_") {
			tools[strings.ToLower(name)] = path
		}
	}
	fs.Func("tool", "NAME=PATH: run the upstream tool NAME from PATH instead of PATH lookup; repeatable (CHAPERONE_TOOL_<NAME>=PATH)", func(v string) error {
		name, path, ok := strings.Cut(v, "=")
		if !ok || name == "" || path == "" {
			return fmt.Errorf("want NAME=PATH, got %q", v)
		}
		tools[name] = path
		return nil
	})
	return tools
}

// drainFlag defines --drain-timeout, which serve and worker share.
func drainFlag(fs *flag.FlagSet) *time.Duration {
	def := defaultDrain
	if v, err := time.ParseDuration(env("CHAPERONE_DRAIN_TIMEOUT", "")); err == nil {
		def = v
	}
	return fs.Duration("drain-timeout", def, "on SIGTERM, how long running jobs may go on before they are stopped and handed back to the queue (without using up an attempt); a second signal stops at once (CHAPERONE_DRAIN_TIMEOUT)")
}

// defaultDrain lets a typical structure prediction finish during a rolling restart.
const defaultDrain = 10 * time.Minute

// drain stops taking work and waits for running jobs, up to timeout.
func drain(logger *slog.Logger, timeout time.Duration, drainFn func(context.Context) error) {
	logger.Info("draining: no new jobs; running ones may finish", "timeout", timeout.String())
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := drainFn(ctx); err != nil {
		logger.Warn("drain timed out; stopping the jobs still running and handing them back")
	}
	logger.Info("shutting down")
}

// bytesFlag defines a flag of a number of bytes, with its environment variable: a whole
// number, or one with a unit (KB, MB, GB, TB; KiB, MiB, GiB, TiB). The error is the
// environment variable's, when it does not parse.
func bytesFlag(fs *flag.FlagSet, name, envName string, def int64, usage string) (*int64, error) {
	v := def
	if s, ok := os.LookupEnv(envName); ok {
		n, err := parseBytes(s)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", envName, err)
		}
		v = n
	}
	fs.Func(name, fmt.Sprintf("%s; a number of bytes, units allowed (4GiB, 500MB); default %s (%s)", usage, formatBytes(def), envName), func(s string) error {
		n, err := parseBytes(s)
		v = n
		return err
	})
	return &v, nil
}

var byteUnits = []struct {
	suffix string
	n      int64
}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1}}

// parseBytes reads a positive number of bytes, with an optional unit.
func parseBytes(s string) (int64, error) {
	num, unit := strings.TrimSpace(s), int64(1)
	for _, u := range byteUnits {
		if n, ok := strings.CutSuffix(num, u.suffix); ok {
			num, unit = strings.TrimSpace(n), u.n
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 || n > math.MaxInt64/unit {
		return 0, fmt.Errorf("%q is not a number of bytes, such as 4GiB or 500MB", s)
	}
	return n * unit, nil
}

// formatBytes writes n in the largest binary unit that divides it.
func formatBytes(n int64) string {
	for _, u := range byteUnits[:4] {
		if n%u.n == 0 && n >= u.n && (n/u.n < 1024 || u.suffix == "TiB") {
			return strconv.FormatInt(n/u.n, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}

// storeFlag defines --store, which serve and keys share so that they open the same state.
func storeFlag(fs *flag.FlagSet) *string {
	return fs.String("store", env("CHAPERONE_STORE", ""), "postgres://… URL of a PostgreSQL database that replicas share; default: SQLite in --data (CHAPERONE_STORE)")
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(env(name, "")); err == nil {
		return v
	}
	return def
}

// keysFlags are the flags of every keys subcommand: where the server keeps its state.
type keysFlags struct {
	data, store *string
}

func newKeysFlags(fs *flag.FlagSet) keysFlags {
	return keysFlags{
		data:  fs.String("data", env("CHAPERONE_DATA", app.DefaultDataDir), "data folder of the server (CHAPERONE_DATA)"),
		store: storeFlag(fs),
	}
}

func (f keysFlags) open(ctx context.Context) (store.Store, error) {
	return app.OpenStoreAt(ctx, app.Locations{DataDir: *f.data, Store: *f.store})
}

// parseAndOpen parses a keys subcommand's flags and its positional arguments, as many as
// positional names, and opens the server's store.
func (f keysFlags) parseAndOpen(ctx context.Context, fs *flag.FlagSet, args []string, positional ...string) (store.Store, []string, error) {
	pos, err := parseCommand(fs, args, positional...)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.open(ctx)
	return st, pos, err
}

func keysCreate(inv *invocation, args []string) error {
	fs := inv.flagSet()
	loc := newKeysFlags(fs)
	name := fs.String("name", "", "name of the new key")
	workerToken := fs.Bool("worker", false, "create a worker token, good only for chaperone worker --token")
	if _, err := parseCommand(fs, args); err != nil {
		return err
	}
	if *name == "" {
		return usageError{errors.New("keys create: --name is required")}
	}
	ctx := context.Background()
	st, err := loc.open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	key, rec := apikey.New(*name, time.Now())
	rec.Worker = *workerToken
	if err := st.CreateKey(ctx, rec); err != nil {
		return err
	}
	fmt.Fprintf(inv.stdout, "%s\n", key)
	what := "key"
	if rec.Worker {
		what = "worker token"
	}
	fmt.Fprintf(inv.stderr, "Created %s %s (%s). It is shown only this once; store it now.\n", what, rec.ID, rec.Name)
	return nil
}

func keysList(inv *invocation, args []string) error {
	fs := inv.flagSet()
	loc := newKeysFlags(fs)
	ctx := context.Background()
	st, _, err := loc.parseAndOpen(ctx, fs, args)
	if err != nil {
		return err
	}
	defer st.Close()
	ks, err := st.ListKeys(ctx)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(inv.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tKIND\tPREFIX\tCREATED\tREVOKED")
	for _, k := range ks {
		revoked := "-"
		if !k.RevokedAt.IsZero() {
			revoked = k.RevokedAt.UTC().Format(time.RFC3339)
		}
		kind := "api"
		if k.Worker {
			kind = "worker"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s…\t%s\t%s\n", k.ID, k.Name, kind, k.Prefix, k.CreatedAt.UTC().Format(time.RFC3339), revoked)
	}
	return tw.Flush()
}

func keysRevoke(inv *invocation, args []string) error {
	fs := inv.flagSet()
	loc := newKeysFlags(fs)
	ctx := context.Background()
	st, pos, err := loc.parseAndOpen(ctx, fs, args, "ID|NAME")
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.RevokeKey(ctx, pos[0], time.Now()); err != nil {
		return fmt.Errorf("keys revoke %s: %w", pos[0], err)
	}
	fmt.Fprintf(inv.stdout, "revoked %s\n", pos[0])
	return nil
}
