// Package standin is what the stand-ins of upstream tools share, and how engine tests build
// them. A stand-in is a small Go program in a folder beside the test package that asks for
// it (…test/<tool>/): it honours its tool's real command line and writes the tool's real
// output layout with made-up numbers. This package holds the idiom the tools share, so
// that each stand-in keeps only what its own tool does differently: click's option
// parsing, errors and help (Command); Python's tracebacks and tqdm's progress bars (Frame,
// ProgressBar); the ways a test makes a stand-in fail (failures.go: Behaviour, CUDACrash,
// and Stall, whose stuck helper process Main serves); and the files the tools write and
// read (files.go). It imports nothing of chaperone, and only tests and stand-ins import
// it: the chaperone binary must not link it.
package standin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
)

// Main runs a stand-in: run with the command line's arguments, exiting with the status
// it returns, unless the program was started as its own sleeper (see Stall).
func Main(run func(args []string) int) {
	args := os.Args[1:]
	serveSleeper(args)
	os.Exit(run(args))
}

// Build compiles the program in the folder name beside the calling file's folder into
// dir/name and returns its path.
func Build(dir, name string) (string, error) { return build(dir, name, name) }

// BuildAs compiles the program in the folder beside the calling file's folder into
// dir/name and returns its path: for one program that stands in for several commands.
func BuildAs(dir, folder, name string) (string, error) { return build(dir, folder, name) }

// build is called by Build and BuildAs only, so that the caller two frames up is the
// package that owns the stand-in's folder.
func build(dir, folder, name string) (string, error) {
	_, caller, _, ok := runtime.Caller(2)
	if !ok {
		return "", fmt.Errorf("standin: cannot locate the source of the %s stand-in", name)
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("standin: the %s stand-in is built with the go command: %w", name, err)
	}
	out := filepath.Join(dir, name)
	cmd := exec.Command(goCmd, "build", "-o", out, ".")
	cmd.Dir = filepath.Join(filepath.Dir(caller), folder)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("standin: building the %s stand-in: %v\n%s", name, err, b)
	}
	return out, nil
}
