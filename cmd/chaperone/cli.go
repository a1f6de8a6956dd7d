package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/chaperone-bio/chaperone/client"
)

// Exit codes of the client commands, for scripts to branch on.
const (
	exitOK          = 0
	exitJobFailed   = 1 // the job failed or was canceled; also any error not listed below
	exitUsage       = 2 // bad flags or files, or the server rejected the input (400, 409, 413, 422)
	exitAuth        = 3 // 401: the API key is not valid
	exitNotFound    = 4 // 404: no such job (or not yours)
	exitRateLimited = 5 // 429 after the retries
	exitUnavailable = 6 // the server is unreachable, or 502/503/504 after the retries
	exitInterrupted = 130
)

// cli is what every client command shares: the parsed common flags, the client, and
// where output goes.
type cli struct {
	c       *client.Client
	json    bool
	stdout  io.Writer
	stderr  io.Writer
	isTTY   bool // stderr is a terminal: draw progress in place
	columns int  // its width
}

// commonFlags are the flags of every client command.
type commonFlags struct {
	server, apiKey string
	json           bool
	retries        int
	retryDelay     time.Duration
	patience       time.Duration
}

func (f *commonFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.server, "server", env("CHAPERONE_URL", client.DefaultURL), "address of the chaperone server (CHAPERONE_URL)")
	// The key is read from the environment after parsing, so that help never shows it as
	// the default.
	fs.StringVar(&f.apiKey, "api-key", "", "API key; jobs then belong to the key (CHAPERONE_API_KEY)")
	fs.BoolVar(&f.json, "json", false, "print JSON (the API's own objects) instead of tables")
	fs.IntVar(&f.retries, "retries", envInt("CHAPERONE_RETRIES", 4), "retries of a call after 429, 502-504 or a failed connection (CHAPERONE_RETRIES)")
	fs.DurationVar(&f.retryDelay, "retry-delay", envDuration("CHAPERONE_RETRY_DELAY", 500*time.Millisecond),
		"first backoff between retries, doubling each time; a server's Retry-After wins (CHAPERONE_RETRY_DELAY)")
	fs.DurationVar(&f.patience, "patience", envDuration("CHAPERONE_PATIENCE", 30*time.Minute),
		"how long one call waits out the Retry-Afters the server announces on 429 and 503, in all; those waits are not counted as retries (CHAPERONE_PATIENCE)")
}

func (f *commonFlags) connect(stdout, stderr io.Writer) (*cli, error) {
	if f.retries < 0 {
		return nil, usageError{errors.New("--retries must be 0 or more")}
	}
	opts := []client.Option{
		client.WithUserAgent("chaperone-cli/" + release(buildInfo())),
		client.WithRetry(client.Retry{Attempts: f.retries + 1, Backoff: f.retryDelay, Patience: f.patience}),
	}
	key := f.apiKey
	if key == "" {
		key = os.Getenv("CHAPERONE_API_KEY")
	}
	if key != "" {
		opts = append(opts, client.WithAPIKey(key))
	}
	c, err := client.New(f.server, opts...)
	if err != nil {
		return nil, usageError{err}
	}
	tty, cols := terminal(stderr)
	return &cli{c: c, json: f.json, stdout: stdout, stderr: stderr, isTTY: tty, columns: cols}, nil
}

// connect parses a client command's flags and its positional arguments, as many as
// positional names, and connects to the server.
func (inv *invocation) connect(fs *flag.FlagSet, args []string, positional ...string) (*cli, []string, error) {
	pos, err := parseCommand(fs, args, positional...)
	if err != nil {
		return nil, nil, err
	}
	cl, err := inv.client.connect(inv.stdout, inv.stderr)
	return cl, pos, err
}

// connectToJob is connect for a command of one job, named by its ID: the whole id or its
// start (cli.jobID).
func (inv *invocation) connectToJob(ctx context.Context, fs *flag.FlagSet, args []string) (*cli, string, error) {
	cl, pos, err := inv.connect(fs, args, "ID")
	if err != nil {
		return nil, "", err
	}
	id, err := cl.jobID(ctx, pos[0])
	return cl, id, err
}

// withInterrupt makes a client command's run function: the command runs until it is
// done or interrupted (exit 130).
func withInterrupt(run func(ctx context.Context, inv *invocation, args []string) error) func(*invocation, []string) error {
	return func(inv *invocation, args []string) error {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return run(ctx, inv, args)
	}
}

// jobEnded is a job that failed or was canceled: exit 1.
type jobEnded struct{ j *client.Job }

func (e jobEnded) Error() string {
	if e.j.Status == client.Failed {
		return fmt.Sprintf("job %s failed: %s", e.j.ID, e.j.Error)
	}
	return fmt.Sprintf("job %s was %s", e.j.ID, e.j.Status)
}

// outcome is nil for a job that succeeded (or has not ended), else a jobEnded.
func outcome(j *client.Job) error {
	if j.Status == client.Failed || j.Status == client.Canceled {
		return jobEnded{j}
	}
	return nil
}

// report prints err (as a problem object with --json, when it is one) and returns the
// exit code it means.
func report(err error, jsonMode bool, stderr io.Writer) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	code := exitCode(err)
	var apiErr *client.Error
	switch {
	case code == exitInterrupted:
		fmt.Fprintln(stderr, "chaperone: interrupted")
	case jsonMode && errors.As(err, &apiErr):
		b, _ := json.Marshal(apiErr)
		fmt.Fprintf(stderr, "%s\n", b)
	default:
		fmt.Fprintf(stderr, "chaperone: %s\n", err)
	}
	return code
}

func exitCode(err error) int {
	var (
		conn     *client.ConnectionError
		notReady resultsNotReady
	)
	switch {
	case isUsage(err), errors.As(err, &notReady):
		return exitUsage
	case errors.Is(err, context.Canceled):
		return exitInterrupted
	case errors.As(err, &conn):
		return exitUnavailable
	}
	switch client.StatusCode(err) {
	case http.StatusBadRequest, http.StatusConflict, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity,
		http.StatusRequestedRangeNotSatisfiable:
		return exitUsage
	case http.StatusUnauthorized:
		return exitAuth
	case http.StatusNotFound:
		return exitNotFound
	case http.StatusTooManyRequests:
		return exitRateLimited
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return exitUnavailable
	}
	return exitJobFailed
}

// parseCommand parses a client command's flags (anywhere among its arguments) and
// checks the number of positional arguments.
func parseCommand(fs *flag.FlagSet, args []string, positional ...string) ([]string, error) {
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, usageError{err}
	}
	switch {
	case len(pos) < len(positional):
		var wants []string
		for _, name := range positional[len(pos):] {
			wants = append(wants, argWords[name])
		}
		return nil, usageError{fmt.Errorf("%s needs %s", fs.Name(), strings.Join(wants, ", and "))}
	case len(pos) > len(positional) && len(positional) == 0:
		return nil, usageError{fmt.Errorf("%s takes no arguments, got %q", fs.Name(), pos)}
	case len(pos) > len(positional):
		return nil, usageError{fmt.Errorf("%s takes %s, got %q", fs.Name(), strings.Join(positional, " "), pos)}
	}
	return pos, nil
}

// argWords says in words what each positional argument of the command table is, for a
// command line that lacks it.
var argWords = map[string]string{
	"ID":      "the id of a job: the whole id, or its first 8 characters or more (chaperone jobs list shows them)",
	"ID|NAME": "the id or the name of a key (chaperone keys list shows them)",
	"DIR":     "the folder of the Slurm job to run",
}

// printJSON writes v as indented JSON.
func (c *cli) printJSON(v any) error {
	enc := json.NewEncoder(c.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func envDuration(name string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(env(name, "")); err == nil {
		return d
	}
	return def
}

// parseParam reads one --param key=value: the value as JSON when it is JSON (3, false,
// 0.5, "x", [1]), else as a string, so --param output_format=pdb needs no quotes.
func parseParam(params map[string]any, kv string) error {
	key, raw, ok := strings.Cut(kv, "=")
	if !ok || key == "" {
		return fmt.Errorf("want KEY=VALUE, got %q", kv)
	}
	var v any
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		v = raw
	}
	params[key] = v
	return nil
}

// readInput reads a file named by a flag; "-" is standard input.
func readInput(flagName, path string) (string, error) {
	var (
		b   []byte
		err error
	)
	if path == "-" {
		b, err = io.ReadAll(os.Stdin)
	} else {
		b, err = os.ReadFile(path)
	}
	if err != nil {
		return "", usageError{fmt.Errorf("--%s: %w", flagName, err)}
	}
	return string(b), nil
}

func pct(f float64) string { return strconv.Itoa(int(f*100+0.5)) + "%" }
