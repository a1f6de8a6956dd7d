package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/chaperone-bio/chaperone/app"
)

// commandPaths walks the command table: every command and subcommand, hidden ones too,
// each as the names that lead to it from the root.
func commandPaths(c *command, names []string, visit func(names []string, c *command)) {
	visit(names, c)
	for _, sub := range c.subcommands {
		commandPaths(sub, append(slices.Clip(names), sub.name), visit)
	}
}

// helpSpellings are the command lines that must show the help of the command names
// lead to.
func helpSpellings(names []string, c *command) [][]string {
	spellings := [][]string{
		append(slices.Clip(names), "--help"),
		append(slices.Clip(names), "-h"),
		append([]string{"help"}, names...),
		// Help on help: "chaperone help --help" is the root's help.
		slices.Concat([]string{"help"}, names, []string{"--help"}),
	}
	if c.run == nil {
		spellings = append(spellings, append(slices.Clip(names), "help"))
	}
	if len(names) > 1 {
		parent := names[:len(names)-1]
		spellings = append(spellings, slices.Concat(parent, []string{"help"}, names[len(names)-1:]))
	}
	return spellings
}

func TestEveryCommandAnswersHelpOnStandardOutput(t *testing.T) {
	commandPaths(root, nil, func(names []string, c *command) {
		name := strings.Join(append([]string{"chaperone"}, names...), " ")
		for _, args := range helpSpellings(names, c) {
			code, stdout, stderr := chaperone(t, args...)
			switch {
			case code != 0:
				t.Errorf("chaperone %s exited %d, want 0; stderr: %s", strings.Join(args, " "), code, stderr)
			case stderr != "":
				t.Errorf("chaperone %s wrote to stderr: %s", strings.Join(args, " "), stderr)
			case !strings.Contains(stdout, name+": "+c.summary):
				t.Errorf("the help of chaperone %s does not open with %q: %s", strings.Join(args, " "), name+": "+c.summary, stdout)
			case !strings.Contains(stdout, "Usage:\n  "+strings.TrimSpace(name+" "+c.args)+"\n"):
				t.Errorf("the help of chaperone %s has no usage line: %s", strings.Join(args, " "), stdout)
			}
		}
	})
}

func TestHelpListsEveryCommandButHiddenOnes(t *testing.T) {
	hidden := &command{name: "internal-step", summary: "a step chaperone runs for itself", hidden: true,
		run: func(inv *invocation, args []string) error {
			_, err := parseCommand(inv.flagSet(), args)
			return err
		}}
	table := *root
	table.subcommands = append(slices.Clip(root.subcommands), hidden)
	runTable := func(args ...string) (code int, stdout, stderr string) {
		var out, errOut bytes.Buffer
		d := dispatcher{stdout: &out, stderr: &errOut}
		return d.group([]*command{&table}, args, nil), out.String(), errOut.String()
	}

	_, top, _ := runTable("help")
	commandPaths(&table, nil, func(names []string, c *command) {
		if c.run == nil || len(names) == 0 {
			return
		}
		listed := strings.Contains(top, "\n  "+strings.Join(names, " ")+" ")
		if c.hidden && listed {
			t.Errorf("chaperone help lists the hidden command %v", names)
		}
		if !c.hidden && !listed {
			t.Errorf("chaperone help does not list %v:\n%s", names, top)
		}
	})
	if code, _, stderr := runTable("internal-step"); code != 0 {
		t.Errorf("a hidden command does not run: exit %d, %s", code, stderr)
	}
	if code, help, _ := runTable("internal-step", "--help"); code != 0 || !strings.Contains(help, hidden.summary) {
		t.Errorf("a hidden command does not answer --help: exit %d, %s", code, help)
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"-version"}, {"version"}} {
		code, stdout, stderr := chaperone(t, args...)
		if want := versionLine(buildInfo()) + "\n"; code != 0 || stdout != want || stderr != "" {
			t.Errorf("chaperone %v: exit %d, stdout %q, stderr %q; want 0, %q and nothing", args, code, stdout, stderr, want)
		}
	}
}

// TestUsageErrorsShowTheUsage: a command line that cannot run is a short message and the
// usage of the command, on stderr, exit 2.
func TestUsageErrorsShowTheUsage(t *testing.T) {
	for _, tc := range []struct {
		args           []string
		message, usage string
	}{
		{[]string{"frobnicate"}, `unknown command "frobnicate"`, "chaperone <command>"},
		{[]string{"--frobnicate"}, "-frobnicate", "chaperone <command>"},
		{[]string{"help", "frobnicate"}, `unknown command "frobnicate"`, "chaperone <command>"},
		{[]string{"jobs"}, "want list, get, wait", "chaperone jobs <command>"},
		{[]string{"jobs", "frobnicate"}, `unknown command "frobnicate"`, "chaperone jobs <command>"},
		{[]string{"help", "jobs", "list", "more"}, "no subcommands", "chaperone jobs list [--limit N]"},
		{[]string{"jobs", "list", "--frobnicate"}, "-frobnicate", "chaperone jobs list [--limit N]"},
		{[]string{"jobs", "get"}, "jobs get needs the id of a job: the whole id, or its first 8 characters or more", "chaperone jobs get ID"},
		{[]string{"jobs", "get", "a", "b"}, `jobs get takes ID, got ["a" "b"]`, "chaperone jobs get ID"},
		{[]string{"keys", "revoke"}, "keys revoke needs the id or the name of a key", "chaperone keys revoke ID|NAME"},
		{[]string{"keys", "create"}, "--name is required", "chaperone keys create --name NAME"},
		{[]string{"keys", "revoke", "a", "b"}, "keys revoke takes ID|NAME", "chaperone keys revoke ID|NAME"},
		{[]string{"predict", "--sequence", "MK", "--param", "fast"}, "KEY=VALUE", "chaperone predict --sequence S"},
		{[]string{"--json", "serve"}, "-json", "chaperone serve"},
		{[]string{"version", "extra"}, `version takes no arguments, got ["extra"]`, "chaperone version"},
		{[]string{"worker", "--slurm-option-for", "folding=--mem=8G"}, `"folding" is neither a model nor a kind`, "chaperone worker"},
		{[]string{"worker", "--slurm-option-for", "embed"}, "want KIND=OPTION or MODEL=OPTION", "chaperone worker"},
	} {
		code, stdout, stderr := chaperone(t, tc.args...)
		if code != 2 || stdout != "" || !strings.HasPrefix(stderr, "chaperone: ") ||
			!strings.Contains(stderr, tc.message) || !strings.Contains(stderr, "Usage: "+tc.usage) {
			t.Errorf("chaperone %v: exit %d, stdout %q, stderr %q; want 2, nothing, and a message with %q and the usage %q on stderr",
				tc.args, code, stdout, stderr, tc.message, tc.usage)
		}
	}
}

// TestClientFlagsBeforeTheCommand runs client commands against a real server with the
// client's flags before the command, after it, and in both places.
func TestClientFlagsBeforeTheCommand(t *testing.T) {
	dir := t.TempDir()
	stores, err := app.OpenStores(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.Start(context.Background(), app.Config{Store: stores.Jobs, Artifacts: stores.Artifacts, Addr: "127.0.0.1:0",
		DataDir: dir, NoWorker: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); stores.Close() })
	const nowhere = "http://127.0.0.1:1" // nothing listens: exit 6
	t.Setenv("CHAPERONE_URL", nowhere)
	t.Setenv("CHAPERONE_RETRIES", "0")
	t.Setenv("CHAPERONE_API_KEY", "")

	for _, tc := range []struct {
		args   []string
		code   int
		stdout string // what it contains
	}{
		{[]string{"--server", a.URL, "jobs", "list"}, exitOK, "ID"},
		{[]string{"--server=" + a.URL, "models"}, exitOK, "MODEL"},
		{[]string{"--json", "--server", a.URL, "models"}, exitOK, `"models"`},
		{[]string{"--server", a.URL, "jobs", "--json", "list"}, exitOK, `"data"`},
		{[]string{"--server", nowhere, "jobs", "list", "--server", a.URL}, exitOK, "ID"},
		{[]string{"--server", a.URL, "jobs", "list", "--server", nowhere}, exitUnavailable, ""},
		{[]string{"--server", a.URL, "--", "models"}, exitOK, "MODEL"},
		{[]string{"--server", a.URL, "jobs", "get", "job_nosuchjob"}, exitNotFound, ""},
		{[]string{"--api-key", "chp_live_notakey", "--server", a.URL, "jobs", "list"}, exitAuth, ""},
		{[]string{"jobs", "list"}, exitUnavailable, ""},
	} {
		code, stdout, stderr := chaperone(t, tc.args...)
		if code != tc.code || !strings.Contains(stdout, tc.stdout) {
			t.Errorf("chaperone %v: exit %d, stdout %q, stderr %q; want %d and %q", tc.args, code, stdout, stderr, tc.code, tc.stdout)
		}
	}

	// --json before the command makes an error the API's problem object.
	_, _, stderr := chaperone(t, "--json", "--server", a.URL, "jobs", "get", "job_nosuchjob")
	var problem struct{ Status int }
	if err := json.Unmarshal([]byte(stderr), &problem); err != nil || problem.Status != 404 {
		t.Errorf("--json before the command: stderr %q, want the 404 problem object (%v)", stderr, err)
	}

	t.Setenv("CHAPERONE_API_KEY", "chp_live_notakey")
	if code, _, stderr := chaperone(t, "--server", a.URL, "jobs", "list"); code != exitAuth {
		t.Errorf("with CHAPERONE_API_KEY set to a key the server does not know: exit %d (%s), want %d", code, stderr, exitAuth)
	}
}

// TestHelpHidesTheAPIKey: the key in CHAPERONE_API_KEY is not shown as the default of
// --api-key.
func TestHelpHidesTheAPIKey(t *testing.T) {
	t.Setenv("CHAPERONE_API_KEY", "chp_live_kept-secret")
	if _, help, _ := chaperone(t, "jobs", "list", "--help"); strings.Contains(help, "kept-secret") {
		t.Errorf("help shows the API key from the environment:\n%s", help)
	}
}
