package openfold3

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/chaperone-bio/chaperone/align"
	"github.com/chaperone-bio/chaperone/bio"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/toolkit"
)

// prediction is one openfold3 job: its targets, folders and what the run left.
type prediction struct {
	cfg            Config
	log            io.Writer
	params         toolkit.PredictParams
	checkpoint     string
	kernels        bool // fast numerics on a GPU
	cuEquivariance bool // and cuEquivariance is installed
	// The run's folders: inputs, the alignment files chains read, OpenFold3's own
	// alignment folder and predict's output.
	inputs, files, msa, out string

	targets []*target
	mon     *monitor
	elapsed time.Duration // how long the tool ran
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
	p := &prediction{cfg: e.cfg, log: run.Log, params: params,
		inputs: filepath.Join(work, "inputs"), files: filepath.Join(work, "files"), msa: filepath.Join(work, "msa"),
		out: filepath.Join(work, "out")}
	if err := toolkit.MakeDirs(p.inputs, p.files, p.out); err != nil {
		return nil, err
	}
	for _, cx := range complexes {
		p.targets = append(p.targets, &target{cx: cx, alignments: make([]*alignment, len(cx.Entities))})
	}
	p.mon = newMonitor(run.Report, len(p.targets))
	return p, nil
}

// placeAlignments writes every target's alignments as OpenFold3's precomputed MSA files:
// those the caller sent and, with use_msa_server on, those among searched that the
// alignment stage found for the target's chains. A target without them fails the job
// before the tool runs. The run log says where each target's alignments come from.
func (p *prediction) placeAlignments(searched []align.Result) error {
	for _, t := range p.targets {
		res, err := toolkit.Searched(t.cx, p.params.UseMSAServer, searched, "OpenFold3")
		if err != nil {
			return err
		}
		msas, err := chainMSAs(t.cx, res)
		if err != nil {
			return err
		}
		if err := writeMSAs(t, p.files, msas); err != nil {
			return fmt.Errorf("writing the alignments of run_openfold: %w", err)
		}
		fmt.Fprintf(p.log, "[chaperone] alignments of %s: %s\n", t.cx.Name, alignmentNote(t.cx, p.params.UseMSAServer, res))
	}
	return nil
}

// writeInputs writes predict's query JSON and runner YAML.
func (p *prediction) writeInputs() error {
	if err := writeQuerySet(filepath.Join(p.inputs, "queries.json"), p.targets); err != nil {
		return err
	}
	r := runnerYAML{output: p.out, seed: p.params.SeedOr(seed), msaDir: p.msa, format: p.params.OutputFormat, gpu: p.cfg.GPU,
		recycles: p.params.RecyclingSteps, samplingSteps: p.params.SamplingSteps,
		kernels: p.kernels, cuEquivariance: p.cuEquivariance}
	return os.WriteFile(filepath.Join(p.inputs, "runner.yaml"), []byte(r.String()), 0o644)
}

// predictCommand is run_openfold predict over the query JSON. The server and templates
// are switched off on the command line as well as in the runner YAML: the command line
// wins over the YAML, whose own default is true (run_openfold.py:147-165,
// experiment_runner.py:697-701, validator.py:313-314), and predict reads every alignment
// from files.
func (p *prediction) predictCommand() engine.Command {
	args := []string{"predict", "--query_json", filepath.Join(p.inputs, "queries.json"),
		"--runner_yaml", filepath.Join(p.inputs, "runner.yaml"), "--inference_ckpt_path", p.checkpoint,
		"--num_diffusion_samples", strconv.Itoa(p.params.DiffusionSamples),
		"--use_msa_server", "false", "--use_templates", "false", "--output_dir", p.out}
	fmt.Fprintf(p.log, "[chaperone] run_openfold predict: %d target(s) on %s; kernels: %s\n",
		len(p.targets), map[bool]string{true: "gpu", false: "cpu"}[p.cfg.GPU], p.kernelNote())
	p.mon.stageInference()
	return engine.Command{Args: args, OnLine: p.mon.line}
}

func (p *prediction) kernelNote() string {
	switch {
	case p.cuEquivariance:
		return "DeepSpeed evo attention and cuEquivariance"
	case p.kernels:
		return "DeepSpeed evo attention (cuEquivariance is not installed)"
	}
	return "plain PyTorch"
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return strings.TrimSuffix(s, "; last output:")
}
