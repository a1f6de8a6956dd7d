// Package openfold3 is the engine of the catalog's openfold3: it drives OpenFold3's command
// line (github.com/aqlaboratory/openfold-3, `run_openfold`) exactly as its own source reads
// its options, query JSON and runner YAML (openfold3/run_openfold.py,
// entry_points/validator.py, projects/of3_all_atom/config/inference_query_format.py).
//
// A job is one `run_openfold predict` over one query JSON that holds every target, so the
// weights load once per job. OpenFold3 never searches: predict runs with use_msa_server
// and use_templates false, and reads every alignment from files the engine writes, its
// precomputed MSAs: those the caller sent, and those chaperone's alignment stage searched
// ahead of the run (engine.Run.Alignments). OpenFold3's own server step would hold the
// GPU while it searches, overwrite the alignments a caller sent, and since 0.4 needs
// data.rcsb.org, which a private cluster cannot reach. Samples, recycles, sampling steps,
// kernels, accelerator, output format and the seed go through the runner YAML. OpenFold3
// merges $OPENFOLD_CACHE/runner.yml under that YAML (run_openfold.py:209-221), so predict
// runs with OPENFOLD_CACHE at an empty folder of its own: an operator's leftover
// runner.yml cannot change a job.
//
// OpenFold3 writes its samples unranked and exits 0 after failing a query: the engine
// ranks them by sample_ranking_score, and reads failures from the tool's summary.txt
// ("Failed Queries"), its error log (logs/predict_err_rank0.log) and what it printed,
// never from the exit status. The model is offered only while the checkpoint is there
// (the real tool would ask on a terminal before downloading it). The input rules OpenFold3
// adds to the catalog's capabilities are CheckInput.
// Imports: align, bio, engine, engine/toolkit, job.
package openfold3

import (
	"context"
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
	"github.com/chaperone-bio/chaperone/engine/toolkit"
)

// CheckpointTool is the key in engine.Tools under which an operator gives the checkpoint
// file (--tool openfold3_checkpoint=PATH or CHAPERONE_TOOL_OPENFOLD3_CHECKPOINT); without
// it the engine looks where OpenFold3 does.
const CheckpointTool = "openfold3_checkpoint"

// Where OpenFold3 keeps its parameters (entry_points/parameters.py:26-27,112-133): the
// folder $OPENFOLD_CACHE, else ~/.openfold3; a ckpt_root file there names another folder.
// The checkpoint is 0.5's default, OpenBind-0 (parameters.py:38-54, DEFAULT_CHECKPOINT_NAME);
// of3_ft3_v1.pt and the p2 checkpoints are legacy and refused by 0.5's model.
const (
	checkpointName = "of3-ob-2025-06-30-174k.pt"
	cacheEnv       = "OPENFOLD_CACHE"
	ckptRootFile   = "ckpt_root"
	// fetchCheckpoint is how an operator gets it (parameters.py:79-109: the bucket
	// openfold3-data, key openfold3-parameters/<file>).
	fetchCheckpoint = "setup_openfold, or aws s3 cp s3://openfold3-data/openfold3-parameters/" + checkpointName + " . --no-sign-request"
)

// Config is the engine's setup on one worker.
type Config struct {
	// GPU runs OpenFold3 on the GPU (pl_trainer_args.accelerator gpu); else on the CPU.
	GPU bool
}

// Engine runs openfold3 jobs with the run_openfold command.
type Engine struct {
	cfg     Config
	predict *toolkit.Tool

	mu     sync.Mutex
	kernel map[string]bool // tool stamp → cuEquivariance is importable by its Python
}

// New returns an engine with the given setup.
func New(cfg Config) *Engine {
	const install, needs = "OpenFold3 (pip install openfold3[cuequivariance])", "OpenFold3 0.5 or newer (pip install -U openfold3[cuequivariance])"
	return &Engine{cfg: cfg, kernel: map[string]bool{},
		predict: &toolkit.Tool{Name: "run_openfold", Install: install, Needs: needs, Subcommand: []string{"predict"},
			Options: []string{"--query_json", "--runner_yaml", "--inference_ckpt_path", "--num_diffusion_samples",
				"--use_msa_server", "--use_templates", "--output_dir"}},
	}
}

func (e *Engine) Name() string     { return e.predict.Name }
func (e *Engine) Models() []string { return []string{"openfold3"} }

// Check finds run_openfold, checks that the --help of predict lists every option the
// engine passes, and that the checkpoint is there; it also learns
// whether the tool's Python has the cuEquivariance kernels, for fast runs.
func (e *Engine) Check(ctx context.Context, tools engine.Tools) error {
	if err := e.predict.Check(ctx, tools); err != nil {
		return err
	}
	if _, err := checkpoint(tools); err != nil {
		return &engine.CheckError{Public: "weights missing: the OpenFold3 checkpoint " + checkpointName, Detail: err.Error()}
	}
	if path, err := e.predict.Path(tools); err == nil {
		e.probeCuEquivariance(ctx, path)
	}
	return nil
}

// checkpoint is the checkpoint file the tool will load: the operator's, else where
// OpenFold3 itself looks. The error names no server path: it reaches API callers.
func checkpoint(tools engine.Tools) (string, error) {
	p, err := checkpointPlace(tools)
	if err != nil {
		return "", err
	}
	if info, err := os.Stat(p); err != nil || info.IsDir() {
		if tools[CheckpointTool] != "" {
			return "", fmt.Errorf("the OpenFold3 checkpoint given with --tool %s is not a file; download %s (%s)",
				CheckpointTool, checkpointName, fetchCheckpoint)
		}
		return "", fmt.Errorf("the OpenFold3 checkpoint %s is not installed on this worker: run setup_openfold, put it in "+
			"$%s (default ~/.openfold3), or give it with --tool %s=PATH", checkpointName, cacheEnv, CheckpointTool)
	}
	return p, nil
}

// checkpointPlace is where the checkpoint should be: the operator's path, else
// $OPENFOLD_CACHE or ~/.openfold3, or the folder a ckpt_root file there names.
func checkpointPlace(tools engine.Tools) (string, error) {
	if p := tools[CheckpointTool]; p != "" {
		return p, nil
	}
	dir := os.Getenv(cacheEnv)
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("no home folder to find the OpenFold3 checkpoint in; set %s or --tool %s=PATH", cacheEnv, CheckpointTool)
		}
		dir = filepath.Join(home, ".openfold3")
	}
	if b, err := os.ReadFile(filepath.Join(dir, ckptRootFile)); err == nil && strings.TrimSpace(string(b)) != "" {
		dir = strings.TrimSpace(string(b))
	}
	return filepath.Join(dir, checkpointName), nil
}

// probeCuEquivariance learns whether the Python that runs the tool can import the
// cuEquivariance kernels OpenFold3 uses: with the kernels switched on and the ops not
// importable, OpenFold3 fails every query. Finding the package is not enough: its ops are
// a CUDA library that fails to load without a driver or against another CUDA, so the
// probe imports what OpenFold3 imports (core/model/primitives/attention.py:65-69,
// core/model/layers/triangular_multiplicative_update.py:35-36). The tool is a console
// script whose first line names its interpreter. The answer is kept per version of the
// script, so the worker's checks every minute run Python only when the script changed.
func (e *Engine) probeCuEquivariance(ctx context.Context, tool string) {
	stamp, ok := fileStamp(tool)
	if !ok {
		return
	}
	e.mu.Lock()
	_, known := e.kernel[stamp]
	e.mu.Unlock()
	if known {
		return
	}
	found := false
	if python := toolkit.Interpreter(tool); python != "" {
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, python, "-c", cuEquivarianceProbe)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
		found = cmd.Run() == nil
	}
	e.mu.Lock()
	e.kernel[stamp] = found
	e.mu.Unlock()
}

// cuEquivarianceProbe exits 0 when OpenFold3's cuEquivariance imports succeed.
const cuEquivarianceProbe = `from cuequivariance_ops_torch.triangle_attention import CUEQ_TRIATTN_FALLBACK_THRESHOLD
from cuequivariance_torch.primitives.triangle import triangle_attention
from cuequivariance_torch import triangle_multiplicative_update
`

// cuEquivariance reports what the last check learnt of the tool as it is now; false when
// no check has seen this version of it.
func (e *Engine) cuEquivariance(tool string) bool {
	stamp, ok := fileStamp(tool)
	e.mu.Lock()
	defer e.mu.Unlock()
	return ok && e.kernel[stamp]
}

// fileStamp names a version of a file: its path, size and modification time.
func fileStamp(path string) (string, bool) {
	info, err := os.Stat(path)
	if err != nil {
		return "", false
	}
	return fmt.Sprintf("%s %d %d", path, info.Size(), info.ModTime().UnixNano()), true
}

// Run predicts every target of the job in one run_openfold predict, with the alignments the
// caller sent and those the alignment stage searched. A target whose chains were to be
// searched and have no alignments in run.Alignments fails the job before the tool runs.
func (e *Engine) Run(ctx context.Context, run *engine.Run) (*engine.Output, error) {
	path, err := e.predict.Path(run.Tools)
	if err != nil {
		return nil, err
	}
	ckpt, err := checkpoint(run.Tools)
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
	p.checkpoint = ckpt
	p.kernels = p.cfg.GPU && p.params.Fast
	p.cuEquivariance = p.kernels && e.cuEquivariance(path)
	if err := p.placeAlignments(run.Alignments); err != nil {
		return nil, err
	}
	if err := p.writeInputs(); err != nil {
		return nil, fmt.Errorf("writing the inputs of run_openfold: %w", err)
	}
	cmd := p.predictCommand()
	cmd.Path = path
	// An empty OPENFOLD_CACHE of the run's own: predict merges the runner.yml it finds
	// there under the engine's YAML, and the checkpoint is always given by path.
	cache := filepath.Join(work, "openfold_cache")
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return nil, err
	}
	cmd.Env = append(cmd.Env, cacheEnv+"="+cache)
	started := time.Now()
	err = run.Exec(ctx, cmd)
	p.elapsed = time.Since(started)
	if ctx.Err() != nil || errors.Is(err, exec.ErrNotFound) {
		return nil, err
	}
	return p.results(err)
}
