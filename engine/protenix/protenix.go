// Package protenix is the engine of the catalog's protenix-v2, opendde and opendde-abag: it
// drives the command-line tools of Protenix (github.com/bytedance/Protenix, `protenix
// pred`) and of OpenDDE (github.com/aurekaresearch/OpenDDE, `opendde pred`), which is
// built on Protenix's code and keeps its input JSON, output layout and confidence keys.
// What the two share (the input JSON, the alignment files, reading the results and the
// run's output) is written once here; a flavor holds what differs: the command, its
// options, and how it finds its weights.
//
// A job is one run of the tool over one JSON file that lists every target, so the weights
// load once per job and no error is lost (the tools remove an empty ERR/ folder after each
// input file, and with it the errors of a later one). Every target is parsed into a
// bio.Complex (bio.Complexes) and written as the tool's JSON entry, with every protein
// chain's alignment files: those sent inline, those the alignment stage searched before
// the run (engine.Run.Alignments), or the chain alone for single-sequence, so that the tool
// never searches (alignments.go). Afterwards the engine
// reads what the tool wrote, target by target, and not its exit status: both tools exit 0
// after failing an input, and leave its error in ERR/<target>.txt. Samples are ranked by
// the tool's ranking_score across all seeds; structures are converted to PDB where the
// caller asked for it, as the tools write only mmCIF. The input rules the tools add to
// the catalog's capabilities are CheckInput.
// Imports: align, bio, engine, engine/toolkit (and its pdbfile), job.
package protenix

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/toolkit"
)

// Config is an engine's setup on one worker.
type Config struct {
	// GPU runs the tool on the GPU: cuEquivariance kernels where fast asks for them, and
	// OpenDDE's --device cuda. Without one the tool runs on the CPU with PyTorch kernels.
	GPU bool
	// OpenDDERoot is OpenDDE's data folder, where opendde-abag's checkpoint lies
	// (checkpoint/opendde_abag.pt); default as OpenDDE's own: $OPENDDE_ROOT_DIR, else
	// opendde under $XDG_CACHE_HOME or ~/.cache.
	OpenDDERoot string
}

// Engine runs the jobs of one flavor's models with its tool.
type Engine struct {
	cfg    Config
	flavor *flavor
	tool   *toolkit.Tool
}

// New returns the engine of protenix-v2.
func New(cfg Config) *Engine { return newEngine(cfg, protenixFlavor) }

// NewOpenDDE returns the engine of opendde, OpenDDE's general checkpoint.
func NewOpenDDE(cfg Config) *Engine { return newEngine(cfg, openDDEFlavor) }

// NewOpenDDEAbAg returns the engine of opendde-abag, OpenDDE with its checkpoint tuned on
// antibody–antigen complexes. It is an engine of its own because it is offered only while
// that checkpoint is there, which the general model does not need.
func NewOpenDDEAbAg(cfg Config) *Engine { return newEngine(cfg, openDDEAbAgFlavor) }

func newEngine(cfg Config, f *flavor) *Engine {
	if cfg.OpenDDERoot == "" {
		cfg.OpenDDERoot = defaultOpenDDERoot()
	}
	e := &Engine{cfg: cfg, flavor: f}
	e.tool = &toolkit.Tool{Name: f.command, Install: f.install, Subcommand: []string{"pred"}, Options: f.options,
		Needs: f.needs, Env: e.checkEnv()}
	return e
}

// defaultOpenDDERoot is OpenDDE's data folder as opendde/config/data.py finds it.
func defaultOpenDDERoot() string {
	if d := os.Getenv("OPENDDE_ROOT_DIR"); d != "" {
		return d
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		cache = filepath.Join(home, ".cache")
	}
	return filepath.Join(cache, "opendde")
}

func (e *Engine) Name() string     { return e.tool.Name }
func (e *Engine) Models() []string { return []string{e.flavor.model} }

// Check finds the tool, checks that its `pred --help` lists every option the engine
// passes, and for opendde-abag that its checkpoint is there.
func (e *Engine) Check(ctx context.Context, tools engine.Tools) error {
	if err := e.tool.Check(ctx, tools); err != nil {
		return err
	}
	if err := e.checkWeights(); err != nil {
		return &engine.CheckError{Public: err.Error(), Detail: fmt.Sprintf("%v (looked for %s)", err, e.checkpoint())}
	}
	return nil
}

// checkpoint is the path of the flavor's own checkpoint.
func (e *Engine) checkpoint() string {
	return filepath.Join(e.cfg.OpenDDERoot, "checkpoint", e.flavor.checkpoint)
}

// Run predicts every target of the job in one run of the tool.
func (e *Engine) Run(ctx context.Context, run *engine.Run) (*engine.Output, error) {
	return toolkit.RunSteps(ctx, run, e.tool, e.plan)
}

// checkWeights finds opendde-abag's checkpoint, at Check and again at a run (the file may
// have gone since). Its error names the file as OpenDDE's documentation does, without
// this server's paths, for the 503 that callers see.
func (e *Engine) checkWeights() error {
	if e.flavor.checkpoint == "" {
		return nil
	}
	if _, err := os.Stat(e.checkpoint()); err != nil {
		return errors.New(e.flavor.missingCheckpoint)
	}
	return nil
}
