package toolkit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/chaperone-bio/chaperone/engine"
)

// Locate is the tool's executable on this machine ("" when there is none) and where it
// was looked for, in the operator's words.
func (t *Tool) Locate(tools engine.Tools) (path, looked string) {
	if p := tools[t.Name]; p != "" {
		looked = fmt.Sprintf("--tool %s=%s", t.Name, p)
		if info, err := os.Stat(p); err != nil || info.IsDir() {
			return "", looked
		}
		return p, looked
	}
	looked = t.Name + " on PATH"
	p, err := exec.LookPath(t.Name)
	if err != nil {
		return "", looked
	}
	return p, looked
}

// Diagnose is the part of an engine's diagnosis that every command-line tool shares: where
// the tool is, and the version of its Python package pkg (asked of the interpreter its
// console script names) against the versions tested. The engine adds its weights and the
// memory its models need.
func (t *Tool) Diagnose(ctx context.Context, tools engine.Tools, pkg string, tested ...string) engine.Diagnosis {
	d := engine.Diagnosis{Tested: tested}
	d.Tool, d.Looked = t.Locate(tools)
	if d.Tool == "" {
		d.VersionUnknown = "the tool was not found"
		return d
	}
	d.Version, d.VersionUnknown = ScriptPackageVersion(ctx, d.Tool, pkg)
	return d
}

// ScriptPackageVersion is the version of the Python package pkg in the environment of a
// console script, whose #! line names its interpreter; "" and why when it cannot be told.
func ScriptPackageVersion(ctx context.Context, script, pkg string) (version, unknown string) {
	python := Interpreter(script)
	if !strings.HasPrefix(filepath.Base(python), "python") {
		return "", fmt.Sprintf("%s is not a Python console script, so its %s package cannot be asked", script, pkg)
	}
	return PackageVersion(ctx, python, pkg)
}

// versionTimeout bounds asking an interpreter for a version: importlib.metadata imports
// nothing of the package, so this takes well under a second.
const versionTimeout = 30 * time.Second

// packageVersionScript prints the version of the package its argument names, or exits with
// notInstalled when the interpreter has no such package.
const packageVersionScript = `import sys, importlib.metadata as m
try:
    print(m.version(sys.argv[1]))
except m.PackageNotFoundError:
    sys.exit(3)`

const notInstalled = 3

// PackageVersion is the version of the Python package pkg as python's importlib.metadata
// reads it; "" and why when it cannot be told.
func PackageVersion(ctx context.Context, python, pkg string) (version, unknown string) {
	ctx, cancel := context.WithTimeout(ctx, versionTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, "-c", packageVersionScript, pkg)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit) && exit.ExitCode() == notInstalled:
		return "", fmt.Sprintf("%s is not installed for %s", pkg, python)
	case err != nil:
		return "", fmt.Sprintf("%s could not tell the version of %s (%v): %s", python, pkg, err, lastLines(stderr.String(), 1))
	}
	v := strings.TrimSpace(stdout.String())
	if v == "" || strings.ContainsAny(v, " \n") {
		return "", fmt.Sprintf("%s answered %q for the version of %s", python, v, pkg)
	}
	return v, ""
}

// Interpreter is the program a script's #! line names, or "" for a binary.
func Interpreter(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	b := make([]byte, 256)
	n, _ := f.Read(b)
	line, _, _ := strings.Cut(string(b[:n]), "\n")
	if !strings.HasPrefix(line, "#!") {
		return ""
	}
	fields := strings.Fields(line[2:])
	if len(fields) == 0 {
		return ""
	}
	if filepath.Base(fields[0]) == "env" && len(fields) > 1 {
		return fields[1]
	}
	return fields[0]
}

// FileWeights is a weights file (or folder) at path as found on this machine.
func FileWeights(models []string, name, path string, fetched bool, fetch string) engine.Weights {
	w := engine.Weights{Models: models, Name: name, Path: path, State: engine.WeightsMissing, Fetched: fetched, Fetch: fetch}
	if _, err := os.Stat(path); err == nil {
		w.State = engine.WeightsPresent
	}
	return w
}

// HFWeights is a Hugging Face model repository as found in the hub cache, where
// from_pretrained keeps what it downloaded: present when a snapshot of it is there.
func HFWeights(models []string, repo string) engine.Weights {
	dir := filepath.Join(HFCache(), "models--"+strings.ReplaceAll(repo, "/", "--"))
	w := engine.Weights{Models: models, Name: "Hugging Face model " + repo, Path: dir, State: engine.WeightsMissing, Fetched: true,
		Fetch: fmt.Sprintf("hf download %s, then copy that folder to the same place on the worker (or point HF_HOME there)", repo)}
	if snaps, err := os.ReadDir(filepath.Join(dir, "snapshots")); err == nil && len(snaps) > 0 {
		w.State = engine.WeightsPresent
	}
	return w
}

// HFCache is the Hugging Face hub cache as huggingface_hub finds it: $HF_HUB_CACHE, else
// hub under $HF_HOME, else huggingface/hub under $XDG_CACHE_HOME or ~/.cache.
func HFCache() string {
	if d := os.Getenv("HF_HUB_CACHE"); d != "" {
		return d
	}
	if d := os.Getenv("HF_HOME"); d != "" {
		return filepath.Join(d, "hub")
	}
	return filepath.Join(UserCache(), "huggingface", "hub")
}

// UserCache is $XDG_CACHE_HOME, else ~/.cache, as Python tools find it.
func UserCache() string {
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return d
	}
	return filepath.Join(Home(), ".cache")
}

// Home is the user's home folder, or "~" when it cannot be told, so that a path built on
// it still reads as the tool's default.
func Home() string {
	if h, err := os.UserHomeDir(); err == nil {
		return h
	}
	return "~"
}
