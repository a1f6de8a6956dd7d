// Command chaperone is the chaperone server, its administration commands, and the
// command-line client of the API:
//
//	chaperone serve               the API and an in-process worker
//	chaperone keys create|list|revoke
//	chaperone predict|design|embed   submit a job; --wait, --out DIR
//	chaperone jobs list|get|wait|cancel|delete|results|logs|download
//	chaperone models
//	chaperone version
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
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
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

const usage = `chaperone: a self-hostable server for biomolecular machine learning.

Usage:
  chaperone serve [flags]             run the API and an in-process worker
  chaperone worker --server URL       run jobs of a server on this machine (a GPU node)
  chaperone keys create --name NAME   issue an API key (printed once); --worker: a worker token
  chaperone keys list                 list keys (never the keys themselves)
  chaperone keys revoke ID|NAME       revoke a key
  chaperone version

Client of a chaperone server (--server or CHAPERONE_URL, default http://127.0.0.1:8080;
--api-key or CHAPERONE_API_KEY; --json for JSON output):
  chaperone predict --sequence S | --input FILE | --target FILE...  [--model M] [--param K=V]... [--wait] [--out DIR]
  chaperone design --protocol P --spec FILE | --structure FILE --contig C  [--param K=V]... [--wait] [--out DIR]
  chaperone embed --sequence S | --input FASTA  [--model M] [--pool P] [--format F] [--wait] [--out DIR]
  chaperone jobs list [--limit N] [--cursor C] [--all]
  chaperone jobs get|wait|cancel|delete|results ID
  chaperone jobs logs ID [--follow]
  chaperone jobs download ID [--out DIR] [--zip] [--artifact PATH]...
  chaperone models                    models, protocols and whether a worker can run them

Exit codes of the client: 0 success; 1 the job failed or was canceled (or another
error); 2 usage, or input rejected (400, 409, 413, 422); 3 authentication (401);
4 not found (404); 5 rate-limited after retries (429); 6 server unreachable or
unavailable (503).

Run "chaperone serve -h" or "chaperone jobs list -h" (any command) for its flags.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "serve":
		err = serve(args[1:], stderr)
	case "keys":
		err = keys(args[1:], stdout, stderr)
	case "worker":
		err = runWorker(args[1:], stderr)
	case "slurm-job": // the script of the Slurm executor's batch jobs; not for people
		err = slurmJob(args[1:], stderr)
	case "predict", "design", "embed", "jobs", "models":
		return clientCommand(args, stdout, stderr)
	case "version":
		fmt.Fprintln(stdout, version)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
	default:
		fmt.Fprintf(stderr, "chaperone: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	var usageErr usageError
	switch {
	case errors.As(err, &usageErr):
		fmt.Fprintf(stderr, "chaperone: %s\n", err)
		return 2
	case errors.Is(err, flag.ErrHelp):
		return 0
	case err != nil:
		fmt.Fprintf(stderr, "chaperone: %s\n", err)
		return 1
	}
	return 0
}

type usageError struct{ error }

// env returns the value of an environment variable, or def.
func env(name, def string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return def
}

func serve(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
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
	msaServer := fs.String("msa-server", env("CHAPERONE_MSA_SERVER", engine.DefaultMSAServer), "ColabFold-compatible MMseqs2 server that use_msa_server sends protein sequences to; self-host one to keep them private (CHAPERONE_MSA_SERVER)")
	tools := toolsFlag(fs)
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
	msaURL, err := msaServerURL(*msaServer)
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
		Store:           stores.Jobs,
		Artifacts:       stores.Artifacts,
		Addr:            *addr,
		MetricsAddr:     *metricsAddr,
		DataDir:         *data,
		Version:         version,
		Logger:          logger,
		Limits:          limits,
		PublicURL:       *publicURL,
		TrustedProxies:  proxies,
		ForwardedHeader: *forwardedHeader,
		Slots:           *slots,
		NoWorker:        *noWorker,
		Engines:         builtinEngines(msaURL),
		Tools:           tools,
		MSAServerURL:    msaURL,
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

func keys(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError{errors.New("keys: want create, list or revoke")}
	}
	fs := flag.NewFlagSet("keys "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	data := fs.String("data", env("CHAPERONE_DATA", app.DefaultDataDir), "data folder of the server (CHAPERONE_DATA)")
	storeURL := storeFlag(fs)
	name := fs.String("name", "", "name of the new key (create)")
	workerToken := fs.Bool("worker", false, "create a worker token, good only for chaperone worker --token (create)")
	positional, err := parseInterleaved(fs, args[1:])
	if err != nil {
		return usageError{err}
	}
	switch {
	case args[0] == "create" && *name == "":
		return usageError{errors.New("keys create: --name is required")}
	case args[0] == "revoke" && len(positional) != 1:
		return usageError{errors.New("keys revoke: give one key id or name")}
	case args[0] != "create" && args[0] != "list" && args[0] != "revoke":
		return usageError{fmt.Errorf("keys: unknown subcommand %q; want create, list or revoke", args[0])}
	}
	ctx := context.Background()
	st, err := app.OpenStoreAt(ctx, app.Locations{DataDir: *data, Store: *storeURL})
	if err != nil {
		return err
	}
	defer st.Close()
	switch args[0] {
	case "create":
		key, rec := apikey.New(*name, time.Now())
		rec.Worker = *workerToken
		if err := st.CreateKey(ctx, rec); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s\n", key)
		what := "key"
		if rec.Worker {
			what = "worker token"
		}
		fmt.Fprintf(stderr, "Created %s %s (%s). It is shown only this once; store it now.\n", what, rec.ID, rec.Name)
	case "list":
		ks, err := st.ListKeys(ctx)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
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
	case "revoke":
		if err := st.RevokeKey(ctx, positional[0], time.Now()); err != nil {
			return fmt.Errorf("keys revoke %s: %w", positional[0], err)
		}
		fmt.Fprintf(stdout, "revoked %s\n", positional[0])
	}
	return nil
}
