// Package pydriver is the engine family of the catalog's Python-API models: ESM C and
// ESMFold2 through the esm package (engine "esm"), SaProt through Hugging Face transformers
// (engine "transformers"). These models have no command line worth driving and their users
// run thousands of small jobs, so the engines are warm (engine.Warm): a driver written in
// Python (driver.py, embedded in the binary) runs per worker slot in the operator's
// interpreter, keeps every model it loaded resident between jobs, and talks with the Go side
// over its stdin and stdout in length-prefixed frames (protocol.go; driver.py documents
// every message). The Go side plans each job (length buckets for embeddings, chains and
// alignment files for folds: the engine searches no alignment, it reads those the alignment
// stage searched, engine.Run.Alignments; alignments.go), supervises the driver (a driver that dies, crashes or outlives the
// job's context is stopped and the session is dead, so the worker starts a fresh one), and
// writes the result files itself (npz through engine/toolkit/npy, parquet through
// parquet-go).
//
// Imports: align, engine, engine/pins, engine/toolkit (and npy), job, bio.
package pydriver

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/pins"
)

//go:embed driver.py
var driverSource []byte

// model is one catalog model as the driver loads it.
type model struct {
	id     string
	loader string // driver.py's LOADERS key
	name   string // the name from_pretrained takes
	dModel int    // embedding width; 0 for a structure model
	// loops and steps are a structure model's recycling loops and sampling steps when the
	// job leaves them out (the catalog's numbers for it).
	loops, steps int
	params       int64 // parameter count, for the driver's estimate of the memory a load needs
	// repos are the Hugging Face repositories from_pretrained downloads for it.
	repos []string
	// backbone is the catalog model whose weights folder, when the operator names one,
	// is this structure model's language-model backbone (ESMFold2's ESM C 6B).
	backbone string
}

// spec is the model as a request names it to the driver, with the weights folders the
// operator named on this worker (weights.go).
func (m model) spec(fast bool, tools engine.Tools) map[string]any {
	width := int64(4)
	if fast {
		width = 2
	}
	need := m.params * width
	folder := weightsFolder(tools, m.id)
	if folder != "" {
		if n := folderBytes(folder); n > 0 {
			need = n
		}
	}
	spec := map[string]any{"id": m.id, "loader": m.loader, "name": m.name, "fast": fast, "bytes": need,
		"folder": nil, "backbone": nil}
	if folder != "" {
		spec["folder"] = folder
	}
	if m.backbone != "" {
		if dir := weightsFolder(tools, m.backbone); dir != "" {
			spec["backbone"] = dir
		}
	}
	if m.dModel > 0 {
		spec["d_model"] = m.dModel
	}
	return spec
}

// Engine drives one Python package's models through the driver.
type Engine struct {
	name    string // the engine's and its tool's name: the package the interpreter imports
	install string // how to install the package, for the message when it is missing
	tested  string // the package release the engine was written against; "" when none is known
	models  []model

	mu      sync.Mutex
	checked map[string]string // interpreter → stamp of the file that last passed its check
}

// ESM returns the engine of the esm package: ESM C embeddings and ESMFold2.
func ESM() *Engine {
	return &Engine{
		name:    "esm",
		install: install(pins.For("esm")),
		tested:  pins.For("esm").Version,
		// The repositories are esm's own names (esm/models/esmc/config.py and
		// esmfold2/config.py; the tier holds them to the pinned release). ESMFold2 also
		// pulls its ESM C 6B backbone, the repository its config's esmc_id names.
		models: []model{
			{id: "esmfold2", loader: "esmfold2", name: "biohub/ESMFold2", loops: 10, steps: 100, params: 7_000_000_000,
				repos: []string{"biohub/ESMFold2", "biohub/ESMC-6B"}, backbone: "esmc-6b"},
			{id: "esmfold2-fast", loader: "esmfold2", name: "biohub/ESMFold2-Fast", loops: 10, steps: 100, params: 6_500_000_000,
				repos: []string{"biohub/ESMFold2-Fast", "biohub/ESMC-6B"}, backbone: "esmc-6b"},
			{id: "esmc-300m", loader: "esmc", name: "biohub/ESMC-300M", dModel: 960, params: 300_000_000, repos: []string{"biohub/ESMC-300M"}},
			{id: "esmc-600m", loader: "esmc", name: "biohub/ESMC-600M", dModel: 1152, params: 600_000_000, repos: []string{"biohub/ESMC-600M"}},
			{id: "esmc-6b", loader: "esmc", name: "biohub/ESMC-6B", dModel: 2560, params: 6_000_000_000, repos: []string{"biohub/ESMC-6B"}},
		},
		checked: map[string]string{},
	}
}

// Transformers returns the engine of the transformers package: SaProt embeddings.
func Transformers() *Engine {
	return &Engine{
		name:    "transformers",
		install: install(pins.For("transformers")),
		tested:  pins.For("transformers").Version,
		models: []model{
			{id: "saprot-650m", loader: "saprot", name: "westlake-repl/SaProt_650M_AF2", dModel: 1280, params: 650_000_000,
				repos: []string{"westlake-repl/SaProt_650M_AF2"}},
			{id: "saprot-1.3b", loader: "saprot", name: "westlake-repl/SaProt_1.3B_AF2", dModel: 1280, params: 1_300_000_000,
				repos: []string{"westlake-repl/SaProt_1.3B_AF2"}},
		},
		checked: map[string]string{},
	}
}

// install says how to install a pinned package, for the message when it is missing.
func install(p pins.Pin) string {
	how := fmt.Sprintf("%s with torch (pip install %q torch==%s", p.Package, p.Requirement(), p.TorchRelease())
	if p.IgnoreRequiresPython {
		how += fmt.Sprintf("; it asks for Python %s: on an older Python add --ignore-requires-python", p.RequiresPython)
	}
	return how + ")"
}

var _ engine.Warm = (*Engine)(nil)

func (e *Engine) Name() string { return e.name }

func (e *Engine) Models() []string {
	ids := make([]string, len(e.models))
	for i, m := range e.models {
		ids[i] = m.id
	}
	return ids
}

func (e *Engine) model(id string) (model, bool) {
	for _, m := range e.models {
		if m.id == id {
			return m, true
		}
	}
	return model{}, false
}

// checkTimeout bounds the self-check: importing a package that imports torch takes seconds.
const checkTimeout = 2 * time.Minute

// Check finds the interpreter (the operator's --tool path, else python3 on PATH) and
// checks that it imports the package, without loading any weights.
func (e *Engine) Check(ctx context.Context, tools engine.Tools) error {
	_, err := e.interpreter(ctx, tools)
	var ce *engine.CheckError
	if err == nil || errors.As(err, &ce) || ctx.Err() != nil {
		return err
	}
	// What the worker's interpreter said, and where it is, are the operator's to read.
	public := fmt.Sprintf("no Python interpreter on a worker imports the %s package", e.name)
	if errors.As(err, new(notInstalledError)) {
		public = fmt.Sprintf("the %s package is not installed", e.name)
	}
	return &engine.CheckError{Public: public, Detail: err.Error()}
}

// notInstalledError is an interpreter without the package at all: said so, and not as
// whichever of the package's dependencies (numpy) the driver failed to import first.
type notInstalledError struct{ pkg, python string }

func (e notInstalledError) Error() string { return e.pkg + " is not installed for " + e.python }

// interpreter returns the Python that runs the driver, once it has passed its check. A
// passed check is not run again until the interpreter's file changes, as the worker checks
// engines every minute.
func (e *Engine) interpreter(ctx context.Context, tools engine.Tools) (string, error) {
	python, err := e.interpreterPath(tools)
	if err != nil {
		return "", err
	}
	info, err := os.Stat(python)
	if err != nil {
		return "", fmt.Errorf("the %s interpreter %s: %w", e.name, python, err)
	}
	stamp := fmt.Sprintf("%d %d", info.Size(), info.ModTime().UnixNano())
	e.mu.Lock()
	done := e.checked[python] == stamp
	e.mu.Unlock()
	if done {
		return python, nil
	}
	if err := e.probe(ctx, python); err != nil {
		if tools[e.name] == "" {
			return "", fmt.Errorf("python3 on PATH cannot run the %s models: %w; install %s there, or give an interpreter that has it with --tool %s=PATH", e.name, err, e.install, e.name)
		}
		return "", fmt.Errorf("%w; install %s in it", err, e.install)
	}
	e.mu.Lock()
	e.checked[python] = stamp
	e.mu.Unlock()
	return python, nil
}

func (e *Engine) interpreterPath(tools engine.Tools) (string, error) {
	if p := tools[e.name]; p != "" {
		return p, nil
	}
	p, err := exec.LookPath("python3")
	if err != nil {
		return "", fmt.Errorf("no Python interpreter for the %s models: python3 is not on PATH; install %s in a Python environment and give its interpreter with --tool %s=PATH", e.name, e.install, e.name)
	}
	return p, nil
}

// probe runs the driver's check in python: it imports the package and prints its version.
// Its output decides, not its exit status. Its error says what is wrong, not what to do:
// the caller adds that. (A session's driver reports the version again
// when it starts, and every job's log shows it.)
func (e *Engine) probe(ctx context.Context, python string) error {
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	dir, err := os.MkdirTemp("", "chaperone-check-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	script := filepath.Join(dir, "driver.py")
	if err := os.WriteFile(script, driverSource, 0o644); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, python, script, e.name, "check")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	exit := cmd.Run()
	var v struct {
		Installed *bool
		Version   string
		Missing   []string
	}
	// The first JSON value printed is the answer; whatever follows it is not.
	err = json.NewDecoder(bytes.NewReader(stdout.Bytes())).Decode(&v)
	switch {
	case err == nil && v.Installed != nil && !*v.Installed:
		return notInstalledError{e.name, python}
	case err != nil || v.Version == "":
		if exit == nil {
			exit = fmt.Errorf("no version on its output: %q", stdout.String())
		}
		return fmt.Errorf("the %s interpreter %s cannot import %s (%v): %s", e.name, python, e.name, exit, lastLine(stderr.String()))
	case len(v.Missing) > 0:
		return fmt.Errorf("the %s interpreter %s has %s %s, which lacks %s", e.name, python, e.name, v.Version, strings.Join(v.Missing, ", "))
	}
	return nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// Open starts a driver for a worker slot and waits until it has imported the package.
func (e *Engine) Open(ctx context.Context, slot engine.Slot) (engine.Session, error) {
	python, err := e.interpreter(ctx, slot.Tools)
	if err != nil {
		return nil, err
	}
	script := filepath.Join(slot.Dir, "driver.py")
	if err := os.WriteFile(script, driverSource, 0o644); err != nil {
		return nil, err
	}
	p, err := slot.Start(engine.Command{Path: python, Args: []string{script, e.name, "serve"}})
	if err != nil {
		return nil, fmt.Errorf("starting the %s driver: %w", e.name, err)
	}
	s := newSession(e, p)
	ready, err := s.next(ctx)
	if err == nil && ready.Event != "ready" {
		err = fmt.Errorf("the %s driver began with %q instead of ready", e.name, ready.Event)
	}
	if err != nil {
		s.Close()
		return nil, err
	}
	s.version = ready.Version
	return s, nil
}

// Run runs one job in a driver of its own that serves it and exits: the one-off way, for
// a check or a test. The worker runs jobs through sessions (Open) instead.
func (e *Engine) Run(ctx context.Context, run *engine.Run) (*engine.Output, error) {
	python, err := e.interpreter(ctx, run.Tools)
	if err != nil {
		return nil, err
	}
	return e.runJob(ctx, run, &onceChannel{eng: e, run: run, python: python})
}
