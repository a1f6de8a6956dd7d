package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// A command is one entry of the command table: a command that runs, or a group of
// subcommands (jobs, keys). Help, usage errors and the top-level command list are all
// made from the table, so a command is added in one place.
type command struct {
	name    string
	summary string // what it does, in one line
	args    string // what follows its name on its usage line
	// hidden commands are run by chaperone itself, not typed by people: help does not
	// list them, though they run and answer --help.
	hidden bool
	// run runs the command with the arguments after its name. It defines its flags on
	// inv.flagSet and parses them before it does anything else, so that --help (and so
	// "chaperone help") shows them without side effects. nil for a group.
	run         func(inv *invocation, args []string) error
	subcommands []*command
}

// lookup returns the subcommand called name, hidden or not, or nil.
func (c *command) lookup(name string) *command {
	for _, sub := range c.subcommands {
		if sub.name == name {
			return sub
		}
	}
	return nil
}

// visibleNames is "list, get or wait": the subcommands help lists.
func (c *command) visibleNames() string {
	var names []string
	for _, sub := range c.subcommands {
		if !sub.hidden {
			names = append(names, sub.name)
		}
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// An invocation is one run of a command: where its output goes, and the flags it
// defined, which its help and its usage errors show.
type invocation struct {
	path           []*command // from the root to the command
	stdout, stderr io.Writer
	flags          *flag.FlagSet
	// client holds the common flags of a command that talks to a server; its errors
	// then map to the client's exit codes.
	client *commonFlags
}

// flagSet returns the command's flag set. Parse errors and -h come back as errors,
// which the dispatcher shows: the flag package prints nothing itself.
func (inv *invocation) flagSet() *flag.FlagSet {
	inv.flags = quietFlagSet(commandName(inv.path[1:]))
	return inv.flags
}

// clientFlagSet returns the flag set of a client command, with the common flags
// defined on it.
func (inv *invocation) clientFlagSet() *flag.FlagSet {
	fs := inv.flagSet()
	inv.client = &commonFlags{}
	inv.client.register(fs)
	return fs
}

func quietFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// commandName is "jobs list" for that path below the root.
func commandName(path []*command) string {
	names := make([]string, len(path))
	for i, c := range path {
		names[i] = c.name
	}
	return strings.Join(names, " ")
}

// fullName is "chaperone jobs list".
func fullName(path []*command) string {
	return strings.TrimSpace(path[0].name + " " + commandName(path[1:]))
}

func usageLine(path []*command) string {
	return strings.TrimSpace(fullName(path) + " " + path[len(path)-1].args)
}

// run runs the command line and returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	d := dispatcher{stdout: stdout, stderr: stderr}
	return d.group([]*command{root}, args, nil)
}

type dispatcher struct {
	stdout, stderr io.Writer
}

// group runs args against the subcommands of the last command of path. The client's
// flags may come before the subcommand; they are handed on to it ahead of its own
// arguments, so that a flag given in both places takes the later value.
func (d dispatcher) group(path []*command, args, handedOn []string) int {
	g := path[len(path)-1]
	fs := quietFlagSet(fullName(path))
	new(commonFlags).register(fs)
	var showVersion bool
	atRoot := len(path) == 1
	if atRoot {
		fs.BoolVar(&showVersion, "version", false, "print the version")
	}
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		writeGroupHelp(d.stdout, path)
		return exitOK
	case err != nil:
		return d.badCommandLine(path, err)
	case showVersion:
		fmt.Fprintln(d.stdout, versionLine(buildInfo()))
		return exitOK
	}
	flags := args[:len(args)-fs.NArg()]
	if len(flags) > 0 && flags[len(flags)-1] == "--" {
		flags = flags[:len(flags)-1]
	}
	handedOn = slices.Concat(handedOn, flags)
	rest := fs.Args()
	switch {
	case len(rest) == 0 && atRoot:
		writeGroupHelp(d.stderr, path)
		return exitUsage
	case len(rest) == 0:
		return d.badCommandLine(path, fmt.Errorf("want %s", g.visibleNames()))
	}
	if rest[0] == "help" {
		return d.help(path, rest[1:])
	}
	sub := g.lookup(rest[0])
	if sub == nil {
		return d.badCommandLine(path, fmt.Errorf("unknown command %q", rest[0]))
	}
	path = append(slices.Clip(path), sub)
	if sub.run == nil {
		return d.group(path, rest[1:], handedOn)
	}
	return d.leaf(path, slices.Concat(handedOn, rest[1:]))
}

// help shows the help of the command that names lead to from path: "chaperone help jobs
// list" and "chaperone jobs help list" are "chaperone jobs list --help".
func (d dispatcher) help(path []*command, names []string) int {
	for _, name := range names {
		// Help on help ("chaperone help --help", "chaperone help help"): the help of the
		// command so far, whose own help says what help does.
		if name == "help" || slices.Contains([]string{"-h", "-help", "--help"}, name) {
			break
		}
		cur := path[len(path)-1]
		if cur.run != nil {
			return d.badCommandLine(path, errors.New("help: no subcommands"))
		}
		c := cur.lookup(name)
		if c == nil {
			return d.badCommandLine(path, fmt.Errorf("help: unknown command %q", name))
		}
		path = append(slices.Clip(path), c)
	}
	if path[len(path)-1].run != nil {
		return d.leaf(path, []string{"--help"})
	}
	writeGroupHelp(d.stdout, path)
	return exitOK
}

// leaf runs a command and turns what it returns into output and an exit code.
func (d dispatcher) leaf(path []*command, args []string) int {
	inv := &invocation{path: path, stdout: d.stdout, stderr: d.stderr}
	err := path[len(path)-1].run(inv, args)
	if errors.Is(err, flag.ErrHelp) {
		inv.writeHelp(d.stdout)
		return exitOK
	}
	var code int
	switch {
	case inv.client != nil:
		code = report(err, inv.client.json, d.stderr)
	case err != nil:
		fmt.Fprintf(d.stderr, "chaperone: %s\n", err)
		code = exitJobFailed
		if isUsage(err) {
			code = exitUsage
		}
	}
	if isUsage(err) {
		writeShortUsage(d.stderr, path)
	}
	return code
}

func (d dispatcher) badCommandLine(path []*command, err error) int {
	if name := commandName(path[1:]); name != "" {
		err = fmt.Errorf("%s: %w", name, err)
	}
	fmt.Fprintf(d.stderr, "chaperone: %s\n", err)
	writeShortUsage(d.stderr, path)
	return exitUsage
}

func writeShortUsage(w io.Writer, path []*command) {
	fmt.Fprintf(w, "Usage: %s\nRun '%s --help' for details.\n", usageLine(path), fullName(path))
}

// writeHelp writes a command's help: what it does, its usage line, its flags.
func (inv *invocation) writeHelp(w io.Writer) {
	cmd := inv.path[len(inv.path)-1]
	fmt.Fprintf(w, "%s: %s\n\nUsage:\n  %s\n", fullName(inv.path), cmd.summary, usageLine(inv.path))
	for _, arg := range strings.Fields(cmd.args) {
		if words, ok := argWords[arg]; ok {
			fmt.Fprintf(w, "\n%s is %s.\n", arg, words)
		}
	}
	if inv.flags != nil && hasFlags(inv.flags) {
		fmt.Fprint(w, "\nFlags:\n")
		inv.flags.SetOutput(w)
		inv.flags.PrintDefaults()
		inv.flags.SetOutput(io.Discard)
	}
	if inv.client != nil {
		fmt.Fprint(w, "\n"+clientNotes)
	}
}

// writeGroupHelp writes the help of a group: what it does and the commands under it, each
// with its summary. The root's help adds the client flags and notes.
func writeGroupHelp(w io.Writer, path []*command) {
	g := path[len(path)-1]
	fmt.Fprintf(w, "%s: %s\n\nUsage:\n  %s\n\nCommands:\n", fullName(path), g.summary, usageLine(path))
	tw := tabwriter.NewWriter(w, 0, 4, 3, ' ', 0)
	var list func(prefix string, c *command)
	list = func(prefix string, c *command) {
		for _, sub := range c.subcommands {
			switch {
			case sub.hidden:
			case sub.run == nil:
				list(prefix+sub.name+" ", sub)
			default:
				fmt.Fprintf(tw, "  %s%s\t%s\n", prefix, sub.name, sub.summary)
			}
		}
	}
	list("", g)
	fmt.Fprintf(tw, "  help\tshow the help of a command: %s help <command>\n", fullName(path))
	tw.Flush()
	if len(path) == 1 {
		fs := quietFlagSet(g.name)
		new(commonFlags).register(fs)
		fmt.Fprint(w, "\nFlags before the command (the client flags may also come after it):\n")
		fs.SetOutput(w)
		fs.PrintDefaults()
		fmt.Fprint(w, "  -version\n    \tprint the version\n\n"+clientNotes)
	}
	fmt.Fprintf(w, "\nRun '%s help <command>' or '%s <command> --help' for its usage and flags.\n", fullName(path), fullName(path))
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// clientNotes close the help of the client commands.
const clientNotes = `The client commands (predict, design, embed, jobs, models) talk to a chaperone
server: --server or CHAPERONE_URL, --api-key or CHAPERONE_API_KEY, --json to print the
API's own objects. These flags may also come before the command (chaperone --server URL
jobs list); a flag given in both places takes the later value.

Exit codes of the client: 0 success; 1 the job failed or was canceled (or another
error); 2 usage, or input rejected (400, 409, 413, 422); 3 authentication (401);
4 not found (404); 5 rate-limited after retries (429); 6 server unreachable or
unavailable (503).
`
