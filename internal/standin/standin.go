// Package standin builds the stand-ins of upstream tools that engine tests run: small Go
// programs in a folder beside the test package that asks for them. The stand-ins import it
// too, for the stuck helper process of a slow run. It imports nothing of chaperone.
package standin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
)

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
