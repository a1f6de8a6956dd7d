// Package pins is the one list of the upstream releases chaperone's engines support
// (pins.json beside this file): the release of each tool's package that the real-package
// test tier installs and runs (internal/realtools), that `chaperone doctor` reports as the
// tested version and that the README's GPU-worker guide installs. Changing a pin is changing
// all three at once. It imports nothing of chaperone.
package pins

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
)

//go:embed pins.json
var file []byte

// Pin is one tool's supported release.
type Pin struct {
	// Tool is the command the engine runs (its key in --tool NAME=PATH).
	Tool string `json:"tool"`
	// Title names the tool for people; GuideDir is where the README's guide installs it.
	Title    string `json:"title"`
	GuideDir string `json:"guide_dir"`
	// Package and Version are the PyPI release; Extras the extras installed with it.
	Package string   `json:"package"`
	Version string   `json:"version"`
	Extras  []string `json:"extras"`
	// RequiresPython is what the release declares; IgnoreRequiresPython says the tier runs
	// it on a Python it does not declare (Why says how that went).
	RequiresPython       string `json:"requires_python"`
	IgnoreRequiresPython bool   `json:"ignore_requires_python"`
	// Why says why this release and not another.
	Why string `json:"why"`
	// Constraints are releases of the tool's dependencies installed with it, on a worker as
	// in the tier, where the newest one the package allows does not run (Why says why).
	Constraints []string `json:"constraints"`
	// TierPackages are installed beside the tool in the test tier's environment only, to
	// build test inputs (for example biotite for CCD data); a worker never needs them.
	TierPackages []string `json:"tier_packages"`
	// Torch is the torch release of this tool's environment when the file's one does not
	// fit it (a release that requires a newer torch); empty for the file's.
	Torch string `json:"torch"`
	// Executable is the program of the environment that --tool names: the tool's command,
	// or "python" for a package chaperone imports (its engine's Python driver).
	Executable string `json:"executable"`
}

// TorchRelease is the torch release installed with the tool.
func (p Pin) TorchRelease() string {
	if p.Torch != "" {
		return p.Torch
	}
	return all.Torch
}

// Program is the file of the environment's bin folder that --tool names.
func (p Pin) Program() string {
	if p.Executable != "" {
		return p.Executable
	}
	return p.Tool
}

// Requirement is the pin as pip and uv take it: boltz[cuda]==2.2.1.
func (p Pin) Requirement() string {
	extras := ""
	if len(p.Extras) > 0 {
		extras = "[" + strings.Join(p.Extras, ",") + "]"
	}
	return p.Package + extras + "==" + p.Version
}

// GuidePython is the Python the README's guide installs the tool with: the tier's, unless
// the release declares a newer one (the tier then runs it on its own Python regardless).
func (p Pin) GuidePython() string {
	if p.IgnoreRequiresPython {
		if _, v, ok := strings.Cut(p.RequiresPython, ">="); ok {
			return strings.TrimSpace(strings.Split(v, ",")[0])
		}
	}
	return all.TierPython
}

// GuideRow is the tool's row of the README's GPU-worker table: the commands the tier runs,
// in the guide's folder.
func (p Pin) GuideRow() string {
	with := ""
	for _, c := range p.Constraints {
		with += fmt.Sprintf(" %q", c)
	}
	install := fmt.Sprintf("`uv venv -p %s %s && uv pip install -p %s \"%s\" torch==%s%s`",
		p.GuidePython(), p.GuideDir, p.GuideDir, p.Requirement(), p.TorchRelease(), with)
	tier := "Python " + all.TierPython
	if p.GuidePython() != all.TierPython {
		tier += fmt.Sprintf(" (it asks for %s; installed without that check)", p.RequiresPython)
	}
	return fmt.Sprintf("| %s | %s %s | %s | %s | `--tool %s=%s/bin/%s` |",
		p.Title, p.Package, p.Version, install, tier, p.Tool, p.GuideDir, p.Program())
}

// Set is the whole file.
type Set struct {
	// Torch is the torch release every environment of the tier installs, unless a pin
	// names its own.
	Torch string `json:"torch"`
	// TierPython is the Python the tier runs the tools on.
	TierPython string `json:"tier_python"`
	Tools      []Pin  `json:"tools"`
}

var all = func() Set {
	var s Set
	if err := json.Unmarshal(file, &s); err != nil {
		panic(fmt.Sprintf("engine/pins/pins.json: %v", err))
	}
	return s
}()

// All is every pin, in the file's order.
func All() Set { return all }

// For is the pin of a tool; it panics for a tool without one, which is a programming error
// that every engine's tests reach.
func For(tool string) Pin {
	for _, p := range all.Tools {
		if p.Tool == tool {
			return p
		}
	}
	panic(fmt.Sprintf("engine/pins: no pin for %q", tool))
}
