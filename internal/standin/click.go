package standin

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Command is a click command as a stand-in offers it: what it parses, what its errors and
// its --help say.
type Command struct {
	Usage   string // the usage line after "Usage: ", as "boltz predict [OPTIONS] DATA"
	Try     string // the command a usage error points at for help, as "boltz predict --help"
	Summary string // the help's paragraph above the options, "" for none
	Help    string // the help option as the help lists it: "--help" when "", or "-h, --help"
	Options []Option
	// Args names the positional arguments, each required. A command without any refuses the
	// first positional it meets, and looks "-" and "--" up as options.
	Args []string
	// ShowDefaults lists each option's default in the help (click's show_default).
	ShowDefaults bool
	// ChoicesAnyCase takes a choice in any case (click.Choice(case_sensitive=False)).
	ChoicesAnyCase bool
}

// Option is one click option of a command.
type Option struct {
	Short, Name string // "-i" (or "") and "--input"
	Kind        Kind
	Choices     []string // of a Choice
	Default     string   // "" for none
	Required    bool     // Parse refuses a run without it, and the help says so
	Hidden      bool     // left out of the help
}

// Kind is the click type of an option's value.
type Kind int

const (
	Flag         Kind = iota // is_flag: no value; Parse gives "true"
	Text                     // str
	Int                      // int
	Float                    // float
	Bool                     // bool: Parse gives "true" or "false"
	Choice                   // click.Choice(Choices)
	Path                     // click.Path()
	ExistingPath             // click.Path(exists=True)
	ExistingFile             // click.Path(exists=True, dir_okay=False)
)

// metavar is how click's help shows a value of the kind.
func (o Option) metavar() string {
	switch o.Kind {
	case Text:
		return "TEXT"
	case Int:
		return "INTEGER"
	case Float:
		return "FLOAT"
	case Bool:
		return "BOOLEAN"
	case Choice:
		return "[" + strings.Join(o.Choices, "|") + "]"
	case Path, ExistingPath:
		return "PATH"
	case ExistingFile:
		return "FILE"
	}
	return ""
}

// display names the option as click's errors do: '-i' / '--input'.
func (o Option) display() string {
	if o.Short != "" {
		return o.Short + "' / '" + o.Name
	}
	return o.Name
}

// Parse reads a command's arguments as click does. It returns every option's value by its
// long name (the defaults filled in) and the positional arguments. A nil map ends the run
// with the status returned: after the help (0), or after click's usage error (2).
func (c *Command) Parse(args []string) (map[string]string, []string, int) {
	values := map[string]string{}
	for _, o := range c.Options {
		if o.Default != "" {
			values[o.Name] = o.Default
		}
	}
	takesArgs := len(c.Args) > 0
	var positional []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if takesArgs && a == "--" {
			positional = append(positional, args[i+1:]...)
			break
		}
		if slices.Contains(strings.Split(c.help(), ", "), a) {
			c.printHelp()
			return nil, nil, 0
		}
		if !strings.HasPrefix(a, "-") || (takesArgs && a == "-") {
			if !takesArgs {
				return nil, nil, c.Fail(fmt.Sprintf("Got unexpected extra argument (%s)", a))
			}
			positional = append(positional, a)
			continue
		}
		name, value, hasValue := strings.Cut(a, "=")
		k := slices.IndexFunc(c.Options, func(o Option) bool { return o.Name == name || o.Short != "" && o.Short == name })
		if k < 0 {
			return nil, nil, c.Fail("No such option: " + name)
		}
		o := c.Options[k]
		if o.Kind == Flag {
			if hasValue {
				return nil, nil, c.Fail(fmt.Sprintf("Option '%s' does not take a value.", name))
			}
			values[o.Name] = "true"
			continue
		}
		if !hasValue {
			if i+1 >= len(args) {
				return nil, nil, c.Fail(fmt.Sprintf("Option '%s' requires an argument.", name))
			}
			i++
			value = args[i]
		}
		value, bad := c.convert(o, value)
		if bad != "" {
			return nil, nil, c.Fail(fmt.Sprintf("Invalid value for '%s': %s", o.display(), bad))
		}
		values[o.Name] = value
	}
	for _, o := range c.Options {
		if o.Required && values[o.Name] == "" {
			return nil, nil, c.Fail(fmt.Sprintf("Missing option '%s'.", o.display()))
		}
	}
	switch {
	case len(positional) < len(c.Args):
		return nil, nil, c.Fail(fmt.Sprintf("Missing argument '%s'.", c.Args[len(positional)]))
	case takesArgs && len(positional) > len(c.Args):
		return nil, nil, c.Fail(fmt.Sprintf("Got unexpected extra argument (%s)", positional[len(c.Args)]))
	}
	return values, positional, 0
}

// convert checks a value as the option's click type does. It returns the value as Parse
// gives it, and click's complaint about it ("" when the value is good).
func (c *Command) convert(o Option, value string) (string, string) {
	switch o.Kind {
	case Int:
		if _, err := strconv.Atoi(value); err != nil {
			return value, fmt.Sprintf("'%s' is not a valid integer.", value)
		}
	case Float:
		if _, err := strconv.ParseFloat(value, 64); err != nil {
			return value, fmt.Sprintf("'%s' is not a valid float.", value)
		}
	case Bool:
		switch strings.ToLower(value) {
		case "1", "true", "t", "yes", "y", "on":
			return "true", ""
		case "0", "false", "f", "no", "n", "off":
			return "false", ""
		}
		return value, fmt.Sprintf("'%s' is not a valid boolean.", value)
	case Choice:
		given := value
		if c.ChoicesAnyCase {
			given = strings.ToLower(value)
		}
		if !slices.Contains(o.Choices, given) {
			return value, fmt.Sprintf("'%s' is not one of '%s'.", value, strings.Join(o.Choices, "', '"))
		}
	case ExistingPath, ExistingFile:
		if _, err := os.Stat(value); err != nil {
			return value, fmt.Sprintf("Path '%s' does not exist.", value)
		}
	}
	return value, ""
}

// Fail prints click's usage error with msg and returns its exit status, 2.
func (c *Command) Fail(msg string) int { return UsageError(c.Usage, c.Try, msg) }

// UsageError prints click's usage error for a command of that usage line, whose help is
// got with try, and returns its exit status, 2.
func UsageError(usage, try, msg string) int {
	fmt.Fprintf(os.Stderr, "Usage: %s\nTry '%s' for help.\n\nError: %s\n", usage, try, msg)
	return 2
}

func (c *Command) help() string {
	if c.Help == "" {
		return "--help"
	}
	return c.Help
}

// printHelp prints the command's --help, the options one a line with their metavars.
func (c *Command) printHelp() {
	var b strings.Builder
	fmt.Fprintf(&b, "Usage: %s\n\n", c.Usage)
	if c.Summary != "" {
		fmt.Fprintf(&b, "  %s\n\n", c.Summary)
	}
	b.WriteString("Options:\n")
	for _, o := range c.Options {
		if o.Hidden {
			continue
		}
		names := o.Name
		if o.Short != "" {
			names = o.Short + ", " + o.Name
		}
		fmt.Fprintf(&b, "  %s %s", names, o.metavar())
		if c.ShowDefaults && o.Default != "" {
			fmt.Fprintf(&b, "  [default: %s]", o.Default)
		}
		if o.Required {
			b.WriteString("  [required]")
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "  %s  Show this message and exit.\n", c.help())
	fmt.Print(b.String())
}
