package toolkit

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/chaperone-bio/chaperone/engine"
)

// Tool is an upstream command-line tool as an engine drives it. Fill in the fields; the
// zero value of the unexported state is ready.
type Tool struct {
	// Name is the command looked up on PATH and the tool's key in engine.Tools (the
	// operator's --tool NAME=PATH); it is also the engine's name.
	Name string
	// Install says how to get the tool, for the message when it is missing, for example
	// `Boltz-2 (pip install "boltz[cuda]")`.
	Install string
	// Subcommand is what the engine runs, for example ["predict"]; its --help must list
	// every one of Options.
	Subcommand []string
	// Options are the options the engine passes to the subcommand.
	Options []string
	// Needs names the version that has them all, for the message when one is missing, for
	// example "Boltz 2 (pip install -U boltz)".
	Needs string
	// Env is added to the environment of the self-check's --help, for a tool that needs a
	// variable set before it can even import (KEY=VALUE).
	Env []string

	mu      sync.Mutex
	checked string // the executable that last passed Check, with its size and time
}

// checkTimeout bounds the self-check: a Python tool's --help imports torch, which takes
// seconds.
const checkTimeout = 2 * time.Minute

// Path is the tool's executable: the operator's path, else the command on PATH.
func (t *Tool) Path(tools engine.Tools) (string, error) {
	if p := tools[t.Name]; p != "" {
		return p, nil
	}
	p, err := exec.LookPath(t.Name)
	if err != nil {
		return "", &engine.CheckError{Public: t.notInstalled(),
			Detail: fmt.Sprintf("the %s command is not on PATH; install %s or give its path with --tool %s=PATH", t.Name, t.Install, t.Name)}
	}
	return p, nil
}

func (t *Tool) notInstalled() string { return fmt.Sprintf("the %s command is not installed", t.Name) }

// Check finds the tool and runs its subcommand's --help, which must succeed and list every
// one of Options. An executable that passed is not run again until its file changes, as
// the worker checks engines every minute.
func (t *Tool) Check(ctx context.Context, tools engine.Tools) error {
	path, err := t.Path(tools)
	if err != nil {
		return err
	}
	info, err := os.Stat(path)
	if err != nil {
		return &engine.CheckError{Public: t.notInstalled(), Detail: fmt.Sprintf("the %s command %s: %v", t.Name, path, err)}
	}
	stamp := fmt.Sprintf("%s %d %d", path, info.Size(), info.ModTime().UnixNano())
	t.mu.Lock()
	done := t.checked == stamp
	t.mu.Unlock()
	if done {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, append(t.Subcommand, "--help")...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	if len(t.Env) > 0 {
		cmd.Env = append(os.Environ(), t.Env...)
	}
	out, err := cmd.CombinedOutput()
	command := strings.Join(append([]string{path}, t.Subcommand...), " ")
	if err != nil {
		return &engine.CheckError{Public: fmt.Sprintf("self-check failed: the %s command is installed but its --help fails", t.Name),
			Detail: fmt.Sprintf("%s --help failed (%v): %s", command, err, lastLines(string(out), 5))}
	}
	for _, opt := range t.Options {
		if !listsOption(string(out), opt) {
			return &engine.CheckError{Public: fmt.Sprintf("self-check failed: the installed %s command is not the version this engine needs (%s)", t.Name, t.Needs),
				Detail: fmt.Sprintf("%s has no %s option; this engine needs %s", command, opt, t.Needs)}
		}
	}
	t.mu.Lock()
	t.checked = stamp
	t.mu.Unlock()
	return nil
}

// listsOption reports whether a help text lists opt as a whole option, not as the start
// of a longer one (--diffusion_samples within --diffusion_samples_affinity).
func listsOption(help, opt string) bool {
	for i := 0; ; {
		j := strings.Index(help[i:], opt)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(opt)
		if (start == 0 || !optionByte(help[start-1])) && (end == len(help) || !optionByte(help[end])) {
			return true
		}
		i = start + 1
	}
}

func optionByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-'
}

// lastLines is the end of a tool's output, for an error message.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
