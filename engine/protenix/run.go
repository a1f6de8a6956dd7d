package protenix

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/chaperone-bio/chaperone/align"
	"github.com/chaperone-bio/chaperone/bio"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/toolkit"
	"github.com/chaperone-bio/chaperone/job"
)

// seed is the tools' documented default seed (decisions: Engines), for a job stored before
// the catalog filled in its seed param; the seed is always passed, so that a rerun gives the
// same result.
const seed = 101

// inputName is the stem of the run's one input file.
const inputName = "targets"

// prediction is one job, in the steps of toolkit.RunSteps.
type prediction struct {
	e         *Engine
	log       io.Writer
	report    func(job.Progress)
	params    toolkit.PredictParams
	complexes []*bio.Complex
	// searched holds per complex the alignments the alignment stage searched for it; nil
	// where it needed none.
	searched []*align.Result
	// The run's folders: the input JSON, the alignment files it names, the tool's output,
	// and structures converted to PDB.
	input, files, out, pdb string

	targets []*target
	msa     bool // some target is folded with alignments
	mon     *monitor
	started time.Time
}

func (e *Engine) plan(run *engine.Run, work string) (toolkit.Steps, error) {
	if err := e.checkWeights(); err != nil {
		return nil, err
	}
	complexes, err := bio.Complexes(run.Job.Input)
	if err != nil {
		return nil, fmt.Errorf("reading the job's input: %w", err)
	}
	params, err := toolkit.NewPredictParams(run.Job.Params)
	if err != nil {
		return nil, err
	}
	searched := make([]*align.Result, len(complexes))
	for i, cx := range complexes {
		if searched[i], err = toolkit.Searched(cx, params.UseMSAServer, run.Alignments, e.flavor.command); err != nil {
			return nil, err
		}
	}
	p := &prediction{e: e, log: run.Log, report: run.Report, params: params, complexes: complexes, searched: searched,
		input: filepath.Join(work, "input"), files: filepath.Join(work, "msa"), out: filepath.Join(work, "out"),
		pdb: filepath.Join(work, "pdb")}
	if err := toolkit.MakeDirs(p.input, p.files, p.out); err != nil {
		return nil, err
	}
	return p, nil
}

// WriteInputs writes every target's alignment files and the one JSON file that lists
// every target, and says in the run log where each target's alignments come from.
func (p *prediction) WriteInputs() error {
	var entries []inputJob
	for i, cx := range p.complexes {
		t, err := planTarget(cx, p.params.UseMSAServer, p.searched[i], p.files)
		if err != nil {
			return fmt.Errorf("the input of %s: %w", cx.Name, err)
		}
		p.targets = append(p.targets, t)
		entries = append(entries, t.entry)
		p.msa = p.msa || t.msa
		if note := t.alignmentNote(); note != "" {
			fmt.Fprintf(p.log, "[chaperone] %s: alignments: %s\n", cx.Name, note)
		}
	}
	b, err := json.MarshalIndent(entries, "", "    ")
	if err != nil {
		return err
	}
	return os.WriteFile(p.inputPath(), append(b, '\n'), 0o644)
}

func (p *prediction) inputPath() string { return filepath.Join(p.input, inputName+".json") }

// Command is `<tool> pred` over the input JSON; the run's clock starts here.
func (p *prediction) Command() engine.Command {
	f := p.e.flavor
	kernels, dtype := f.plainKernels, f.plainDtype
	if p.params.Fast {
		kernels, dtype = f.fastKernels, f.fastDtype
	}
	if !p.e.cfg.GPU {
		// cuEquivariance's kernels run on CUDA only.
		kernels = "torch"
	}
	args := []string{"pred", "--input", p.inputPath(), "--out_dir", p.out, "--seeds", strconv.Itoa(p.params.SeedOr(seed)),
		"--sample", strconv.Itoa(p.params.DiffusionSamples), "--model_name", f.modelName, "--dtype", dtype,
		"--trimul_kernel", kernels, "--triatt_kernel", kernels, "--use_msa", strconv.FormatBool(p.msa),
		"--need_atom_confidence", "true"}
	// Steps the caller left out are the tool's own (10 cycles, 200 diffusion steps).
	if v := p.params.RecyclingSteps; v != nil {
		args = append(args, "--cycle", strconv.Itoa(*v))
	}
	if v := p.params.SamplingSteps; v != nil {
		args = append(args, "--step", strconv.Itoa(*v))
	}
	accelerator := "the CPU"
	if p.e.cfg.GPU {
		accelerator = "the GPU"
	}
	if f.device {
		device := "cpu"
		if p.e.cfg.GPU {
			device = "cuda"
		}
		args = append(args, "--device", device)
	}
	if f.checkpoint != "" {
		args = append(args, "--load_checkpoint_path", p.e.checkpoint())
	}
	fmt.Fprintf(p.log, "[chaperone] %s pred: %d target(s) on %s\n", f.command, len(p.targets), accelerator)
	p.mon = newMonitor(p.report, len(p.targets))
	p.started = time.Now()
	return engine.Command{Args: args, Env: p.e.layerNormEnv(), OnLine: p.mon.line}
}

// Results reads every target's row and files.
func (p *prediction) Results(exit error) (*engine.Output, error) {
	o := &outcome{out: p.out, pdb: p.pdb, format: p.params.OutputFormat, samples: p.params.DiffusionSamples, writePAE: p.params.WritePAE,
		tool: p.e.flavor.command, mon: p.mon, crash: exit}
	targets := make([]toolkit.Target, len(p.targets))
	for i, t := range p.targets {
		targets[i] = o.read(t)
	}
	o.runtimes(targets, time.Since(p.started))
	return toolkit.Predictions(p.e.flavor.command, targets, exit)
}
