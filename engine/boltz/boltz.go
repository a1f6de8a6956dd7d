// Package boltz is the engine of the catalog's boltz2: it drives the Boltz-2 command-line
// tool (github.com/jwohlwend/boltz, `boltz predict`) exactly as Boltz's own source reads
// its options and inputs.
//
// A job is one boltz predict run over a folder of YAML inputs, one per target, so the
// weights load once per job. Every target is first parsed into a bio.Complex (the job's
// input as stored, parsed again by bio.Complexes) and written back as Boltz YAML that names
// no file the caller gave: alignments and templates sent inline become files of the run,
// and so do the alignments chaperone's alignment stage searched ahead of the run
// (engine.Run.Alignments), written as the CSV files Boltz writes from its own search
// (searchedCSVs); Boltz is never let search on an MSA server itself. Afterwards the engine
// reads what Boltz wrote, target by target, and does not trust the exit status: Boltz
// exits 0 after skipping an input it could not process or running out of memory on it,
// and such a target gets a failed row with Boltz's own message. The input rules Boltz adds
// to the catalog's capabilities are CheckInput.
// Imports: engine, engine/toolkit, job, bio, align.
package boltz

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/chaperone-bio/chaperone/align"
	"github.com/chaperone-bio/chaperone/bio"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/toolkit"
	"github.com/chaperone-bio/chaperone/job"
)

// Config is an engine's setup on one worker.
type Config struct {
	// GPU runs Boltz on the GPU (--accelerator gpu); without one it runs on the CPU.
	GPU bool
}

// Engine runs boltz2 jobs with the boltz command.
type Engine struct {
	cfg  Config
	tool *toolkit.Tool
}

// New returns an engine with the given setup.
func New(cfg Config) *Engine {
	return &Engine{cfg: cfg, tool: &toolkit.Tool{
		Name:       "boltz",
		Install:    `Boltz-2 (pip install "boltz[cuda]")`,
		Subcommand: []string{"predict"},
		Options: []string{"--out_dir", "--accelerator", "--recycling_steps", "--sampling_steps", "--diffusion_samples",
			"--output_format", "--override", "--no_kernels", "--seed",
			"--write_full_pae", "--write_full_pde"},
		Needs: "Boltz 2 (pip install -U boltz)",
	}}
}

func (e *Engine) Name() string     { return e.tool.Name }
func (e *Engine) Models() []string { return []string{"boltz2"} }

// Check finds the boltz command and checks that `boltz predict --help` lists every option
// the engine passes.
func (e *Engine) Check(ctx context.Context, tools engine.Tools) error {
	return e.tool.Check(ctx, tools)
}

// Run predicts every target of the job in one boltz predict run, as toolkit.RunSteps
// does, but for one case: when Boltz cannot prepare the first target of a prediction loop
// for the model it retries that target without end (see monitor.recursing), so the engine
// stops that run and runs boltz again over the targets that have no verdict yet; Boltz
// keeps what it processed and predicted before.
func (e *Engine) Run(ctx context.Context, run *engine.Run) (*engine.Output, error) {
	path, err := e.tool.Path(run.Tools)
	if err != nil {
		return nil, err
	}
	work, err := filepath.Abs(run.WorkDir)
	if err != nil {
		return nil, err
	}
	p, err := e.plan(run, work)
	if err != nil {
		return nil, err
	}
	if err := p.WriteInputs(); err != nil {
		return nil, err
	}
	for {
		attempt, stop := context.WithCancel(ctx)
		cmd := p.Command()
		cmd.Path = path
		p.mon.attempt(stop)
		exit := run.Exec(attempt, cmd)
		stop()
		if ctx.Err() != nil || errors.Is(exit, exec.ErrNotFound) {
			return nil, exit
		}
		if p.mon.recursing == "" {
			return p.Results(exit)
		}
		left, err := p.dropDecided()
		if err != nil {
			return nil, err
		}
		if left == 0 {
			return p.Results(nil) // the run was stopped here, not failed
		}
		fmt.Fprintf(p.log, "[chaperone] Boltz could not prepare %s, the first target of its loop, and retries it without end: "+
			"stopped it, running boltz again over the %d target(s) left\n", p.mon.recursing, left)
	}
}

// prediction is one boltz2 job, in the steps of toolkit.RunSteps.
type prediction struct {
	cfg        Config
	log        io.Writer
	report     func(job.Progress)
	params     toolkit.PredictParams
	complexes  []*bio.Complex
	alignments []align.Result // searched ahead of the run (engine.Run.Alignments)
	// The run's folders: Boltz's inputs, the files they name, and Boltz's output.
	inputs, files, out string

	targets  []*target
	affinity bool // some target asks for an affinity
	mon      *monitor
	started  time.Time
	// dropped are the targets taken out of later runs of boltz, each with its verdict
	// already given; recursed is the one Boltz retried without end.
	dropped  map[string]bool
	recursed map[string]bool
}

func (e *Engine) plan(run *engine.Run, work string) (*prediction, error) {
	complexes, err := bio.Complexes(run.Job.Input)
	if err != nil {
		return nil, fmt.Errorf("reading the job's input: %w", err)
	}
	params, err := toolkit.NewPredictParams(run.Job.Params)
	if err != nil {
		return nil, err
	}
	p := &prediction{cfg: e.cfg, log: run.Log, report: run.Report, params: params, complexes: complexes,
		alignments: run.Alignments, inputs: filepath.Join(work, "inputs"), files: filepath.Join(work, "files"),
		out: filepath.Join(work, "out"), dropped: map[string]bool{}, recursed: map[string]bool{}}
	if err := toolkit.MakeDirs(p.inputs, p.files, p.out); err != nil {
		return nil, err
	}
	return p, nil
}

// WriteInputs writes each target's alignments and its YAML, and says in the run log where
// the target's alignments come from. A target whose alignments were to be searched ahead
// of the run and were not fails the job before Boltz runs.
func (p *prediction) WriteInputs() error {
	for _, cx := range p.complexes {
		t, err := planTarget(cx, p.params.UseMSAServer, p.alignments, p.files)
		if err != nil {
			return err
		}
		if err := writeYAML(p.inputs, p.files, t); err != nil {
			return fmt.Errorf("writing the Boltz input of %s: %w", cx.Name, err)
		}
		fmt.Fprintf(p.log, "[chaperone] %s: alignments %s\n", cx.Name, t.msaNote())
		p.targets = append(p.targets, t)
		p.affinity = p.affinity || cx.Affinity != nil
	}
	return nil
}

// defaultSeed is the seed of a job stored before seeds were params. Boltz documents no
// default (it draws one at random), so this is the catalog's, which the reference service
// also uses.
const defaultSeed = 0

// Command is boltz predict over the folder of inputs; the run's clock starts here.
func (p *prediction) Command() engine.Command {
	format := "mmcif"
	if p.params.OutputFormat == "pdb" {
		format = "pdb"
	}
	accelerator := "cpu"
	if p.cfg.GPU {
		accelerator = "gpu"
	}
	args := []string{"predict", p.inputs, "--out_dir", p.out, "--accelerator", accelerator,
		"--diffusion_samples", strconv.Itoa(p.params.DiffusionSamples), "--output_format", format,
		"--seed", strconv.Itoa(p.params.SeedOr(defaultSeed))}
	if len(p.dropped) == 0 {
		// A run again keeps the structures and affinities predicted before (main.py's
		// filter_inputs_structure and filter_inputs_affinity skip them).
		args = append(args, "--override")
	}
	if p.params.WritePAE {
		args = append(args, "--write_full_pae", "--write_full_pde")
	}
	// Steps the caller left out are Boltz's own (3 recycles, 200 sampling steps).
	if v := p.params.RecyclingSteps; v != nil {
		args = append(args, "--recycling_steps", strconv.Itoa(*v))
	}
	if v := p.params.SamplingSteps; v != nil {
		args = append(args, "--sampling_steps", strconv.Itoa(*v))
	}
	if !p.params.Fast {
		args = append(args, "--no_kernels")
	}
	if p.mon == nil {
		fmt.Fprintf(p.log, "[chaperone] boltz predict: %d target(s) on %s\n", len(p.targets), accelerator)
		p.mon = newMonitor(p.report, len(p.targets), p.affinity)
		p.started = time.Now()
	}
	return engine.Command{Args: args, OnLine: p.mon.line}
}

// dropDecided takes out of later runs every target Boltz has given up on so far (the one
// it retried without end among them), by removing its input and its processed record, and
// returns how many targets are left.
func (p *prediction) dropDecided() (int, error) {
	p.recursed[p.mon.recursing] = true
	decided := map[string]bool{p.mon.recursing: true}
	for name := range p.mon.skipped {
		decided[name] = true
	}
	for _, loop := range p.mon.unprepared {
		for name := range loop {
			decided[name] = true
		}
	}
	results := filepath.Join(p.out, "boltz_results_inputs")
	for name := range decided {
		for _, f := range []string{filepath.Join(p.inputs, name+".yaml"), filepath.Join(results, "processed", "records", name+".json")} {
			if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return 0, err
			}
		}
		p.dropped[name] = true
	}
	left := 0
	for _, t := range p.targets {
		if !p.dropped[t.cx.Name] {
			left++
		}
	}
	return left, nil
}

// Results reads every target's row and files.
func (p *prediction) Results(exit error) (*engine.Output, error) {
	ext := "cif"
	if p.params.OutputFormat == "pdb" {
		ext = "pdb"
	}
	o := &outcome{dir: filepath.Join(p.out, "boltz_results_inputs"), ext: ext, samples: p.params.DiffusionSamples,
		writePAE: p.params.WritePAE, mon: p.mon, recursed: p.recursed, crash: exit, wall: time.Since(p.started)}
	results := make([]*result, len(p.targets))
	for i, t := range p.targets {
		results[i] = o.read(t)
	}
	o.runtimes(results)
	targets := make([]toolkit.Target, len(results))
	for i, r := range results {
		targets[i] = r.Target
	}
	return toolkit.Predictions("boltz", targets, exit)
}

// planTarget decides where each protein chain's alignment comes from and writes it to a
// file of the run, one per Boltz entity: Boltz skips an input whose copies of one sequence
// name different files (CheckInput has made sure that their alignments agree). With
// useSearched (use_msa_server), the chains without an alignment of their own get theirs
// from the results searched ahead of the run; without it they are folded single-sequence.
func planTarget(cx *bio.Complex, useSearched bool, alignments []align.Result, files string) (*target, error) {
	t := &target{cx: cx, msas: make([]string, len(cx.Entities))}
	searched := map[string]string{} // a searched chain's sequence → its CSV
	res, err := toolkit.Searched(cx, useSearched, alignments, "Boltz")
	if err != nil {
		return nil, err
	}
	if res != nil {
		csvs, err := searchedCSVs(*res, keyBaseAbove(cx))
		if err != nil {
			return nil, fmt.Errorf("the alignments searched for target %s: %w", cx.Name, err)
		}
		for i, chain := range res.Chains {
			searched[chain] = csvs[i]
		}
		t.source = res.Source
	}
	groups := boltzEntities(cx)
	for i, en := range cx.Entities {
		if en.Kind != bio.Protein {
			continue
		}
		format, text := bio.CSV, searched[en.Sequence]
		switch {
		case en.MSA.Source == bio.MSANone || en.MSA.Source == bio.MSAAuto && !useSearched:
			t.msas[i] = "empty"
			t.single = append(t.single, en.IDs...)
			continue
		case en.MSA.Source == bio.MSAInline:
			format, text = en.MSA.Format, en.MSA.Text
			t.sent = append(t.sent, en.IDs...)
		default:
			t.searched = append(t.searched, en.IDs...)
		}
		path := filepath.Join(files, fmt.Sprintf("%s_msa%d.%s", cx.Name, groups[i]+1, format))
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			return nil, fmt.Errorf("writing the Boltz input of %s: %w", cx.Name, err)
		}
		t.msas[i], t.msa = path, true
	}
	return t, nil
}
