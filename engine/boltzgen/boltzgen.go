// Package boltzgen is the engine of the catalog's boltzgen model and its six protocols: it
// drives BoltzGen's command line (github.com/HannesStark/boltzgen, `boltzgen run`) as its
// argparse options and output layout are in BoltzGen 0.3.
//
// A job is one boltzgen run. The spec the caller sent is parsed again (bio.ParseDesignSpec)
// and written as BoltzGen reads it: a spec in BoltzGen's entities form as it is, with the
// request's structure written beside it under the one file name its file entities give; a
// spec in Boltz's sequences form rewritten as entities, the target's chains plus the binder
// the protocol designs (Config.Binders). BoltzGen runs its steps (design, inverse folding,
// folding, analysis, filtering) as subprocesses that can die without failing the run, so
// the engine trusts only the final ranked set it finds: designs from
// final_ranked_designs/final_<budget>_designs/ in the order of their rank, each with the
// metrics of its row of final_designs_metrics_<budget>.csv. Imports: engine,
// engine/toolkit, job, bio.
package boltzgen

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/chaperone-bio/chaperone/bio"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/toolkit"
	"github.com/chaperone-bio/chaperone/job"
)

// Config is the engine's setup on one worker.
type Config struct {
	// Binders maps a protocol to the binder it designs against a spec in the sequences
	// form, in BoltzGen's sequence notation (80..140), as the catalog documents it.
	Binders map[string]string
	// GPU says the worker has a CUDA GPU. BoltzGen 0.3.2 has no CPU path (cli/boltzgen.py:921
	// asks torch.cuda for the device capability whatever --use_kernels says, :942 takes the
	// CUDA device count as the devices, and every step's config sets accelerator: gpu), so
	// without one the engine offers nothing.
	GPU bool
}

// Engine runs boltzgen jobs with the boltzgen command.
type Engine struct {
	cfg  Config
	tool *toolkit.Tool
}

// New returns an engine with the given setup.
func New(cfg Config) *Engine {
	return &Engine{cfg: cfg, tool: &toolkit.Tool{
		Name:       "boltzgen",
		Install:    "BoltzGen (pip install boltzgen)",
		Subcommand: []string{"run"},
		Options:    []string{"--protocol", "--output", "--num_designs", "--budget", "--use_kernels"},
		Needs:      "BoltzGen 0.3 (pip install -U boltzgen)",
	}}
}

func (e *Engine) Name() string     { return e.tool.Name }
func (e *Engine) Models() []string { return []string{"boltzgen"} }

// NoGPU is the public reason the engine gives on a worker without a GPU.
const NoGPU = "BoltzGen needs a CUDA GPU and this worker has none"

// Check refuses a worker without a GPU, then finds the boltzgen command and checks that
// `boltzgen run --help` lists every option the engine passes.
func (e *Engine) Check(ctx context.Context, tools engine.Tools) error {
	if !e.cfg.GPU {
		return &engine.CheckError{Public: NoGPU,
			Detail: NoGPU + ": BoltzGen 0.3.2 asks torch.cuda for the device capability and count whatever its options say " +
				"(boltzgen/cli/boltzgen.py:921,942) and runs every step with accelerator: gpu; no CUDA device is visible (CUDA_VISIBLE_DEVICES, /dev/nvidia*)"}
	}
	return e.tool.Check(ctx, tools)
}

// Run designs with one boltzgen run.
func (e *Engine) Run(ctx context.Context, run *engine.Run) (*engine.Output, error) {
	return toolkit.RunSteps(ctx, run, e.tool, e.plan)
}

// params are a boltzgen job's params.
type params struct {
	NumDesigns int  `json:"num_designs"`
	Budget     int  `json:"budget"`
	Fast       bool `json:"fast"`
}

// design is one boltzgen job, in the steps of toolkit.RunSteps.
type design struct {
	log      io.Writer
	report   func(job.Progress)
	protocol string
	params   params
	spec     *bio.DesignSpec
	text     string // the spec as sent
	binder   string // for the sequences form
	// structure is the request's structure text, written beside the spec as spec.File;
	// target is it read, its Format what its content says it is.
	structure string
	target    *bio.Structure
	inputs    string // folder of the spec and its structure
	out       string // BoltzGen's --output
	mon       *monitor
}

func (e *Engine) plan(run *engine.Run, work string) (toolkit.Steps, error) {
	j := run.Job
	p := params{NumDesigns: 10, Budget: 10, Fast: true}
	if err := toolkit.DecodeParams(j.Params, &p); err != nil {
		return nil, err
	}
	p.Budget = min(p.Budget, p.NumDesigns)
	var structure *bio.Structure
	if j.Input.Structure != "" {
		s, err := bio.ReadStructure(j.Input.Structure)
		if err != nil {
			return nil, fmt.Errorf("reading the job's structure: %w", err)
		}
		structure = s
	}
	spec, err := bio.ParseDesignSpec(j.Input.Spec, structure)
	if err != nil {
		return nil, fmt.Errorf("reading the job's spec: %w", err)
	}
	d := &design{log: run.Log, report: run.Report, protocol: j.Protocol, params: p, spec: spec, text: j.Input.Spec,
		structure: j.Input.Structure, inputs: filepath.Join(work, "inputs"), out: filepath.Join(work, "out")}
	d.target = structure
	if spec.Form == bio.SequencesSpec {
		if d.binder = e.cfg.Binders[j.Protocol]; d.binder == "" {
			return nil, fmt.Errorf("protocol %s designs no binder against a spec in the sequences form; send BoltzGen's entities form", j.Protocol)
		}
	}
	return d, os.MkdirAll(d.inputs, 0o755)
}

// specPath is where the spec is written; BoltzGen names its designs after its stem.
func (d *design) specPath() string { return filepath.Join(d.inputs, "spec.yaml") }

// WriteInputs writes the spec, and the structure beside it under the name its file
// entities give, its suffix made to match its content: BoltzGen reads a file whose name
// ends in exactly .pdb as PDB and any other as mmCIF (data/parse/schema.py:1920-1933).
func (d *design) WriteInputs() error {
	text, name := d.text, d.spec.File
	if d.spec.Form == bio.SequencesSpec {
		text = entitiesYAML(d.spec, d.binder)
	}
	if name != "" {
		if n := nameFor(name, d.target.Format); n != name {
			renamed, err := renameFile(text, name, n, d.target)
			if err != nil {
				return err
			}
			fmt.Fprintf(d.log, "[chaperone] the structure %s holds %s; written as %s, the name BoltzGen reads as that\n", name, d.target.Format, n)
			text, name = renamed, n
		}
	}
	if err := os.WriteFile(d.specPath(), []byte(text), 0o644); err != nil {
		return err
	}
	if name == "" {
		return nil
	}
	return os.WriteFile(filepath.Join(d.inputs, name), []byte(d.structure), 0o644)
}

// Command is boltzgen run on the spec.
func (d *design) Command() engine.Command {
	kernels := "false"
	if d.params.Fast {
		kernels = "auto"
	}
	args := []string{"run", d.specPath(), "--protocol", d.protocol, "--output", d.out,
		"--num_designs", strconv.Itoa(d.params.NumDesigns), "--budget", strconv.Itoa(d.params.Budget), "--use_kernels", kernels}
	fmt.Fprintf(d.log, "[chaperone] boltzgen run: protocol %s, %d designs, the best %d kept; spec in the %s form%s\n",
		d.protocol, d.params.NumDesigns, d.params.Budget, d.spec.Form, d.fileNote())
	d.mon = newMonitor(d.report, d.params.NumDesigns)
	return engine.Command{Args: args, OnLine: d.mon.line}
}

func (d *design) fileNote() string {
	if d.spec.File == "" {
		return ""
	}
	return ", with the structure as " + d.spec.File
}

// Results reads the final ranked designs.
func (d *design) Results(exit error) (*engine.Output, error) {
	d.mon.set(job.StageWriting, d.mon.fraction)
	out, err := readDesigns(filepath.Join(d.out, "final_ranked_designs"), d.params.Budget, d.mon, exit)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(d.log, "[chaperone] %d of the %d final designs pass BoltzGen's filters (pass_filters); BoltzGen ranks the others after them and keeps them\n",
		passing(out.Designs), len(out.Designs))
	d.mon.set(job.StageWriting, 1)
	return out, nil
}
