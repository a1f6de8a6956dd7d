// Package enginetest is a test-only engine for exercising the job service: it runs a real
// shell process per job and can succeed, fail, hang with a process tree, go silent, write
// many artifacts, or run slowly, as the job's name asks. It is a fixture: tests register
// it, a running chaperone server never does.
package enginetest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/job"
)

// Behaviours, chosen by the job's name ("<behaviour>" or "<behaviour>:<n>"):
//
//	ok (or any other name)  succeed at once: one row, design or embedding per sub-unit
//	fail                    the tool prints an error and exits 3
//	hang                    start a process tree whose grandchild ignores SIGTERM, print its
//	                        pid to hang.pid in the work folder, and never finish
//	silent                  sleep without output or progress (for the stall cap)
//	many:N                  succeed with N extra artifacts
//	slow:N                  print a progress line every 100 ms for N steps, then succeed
//	exit0-nofiles           exit 0 without writing the expected files (a lying tool)
const (
	Fail    = "fail"
	Hang    = "hang"
	Silent  = "silent"
	Many    = "many"
	Slow    = "slow"
	NoFiles = "exit0-nofiles"
)

// Engine serves the models it is given.
type Engine struct {
	models []string
	// Started, when set, receives the job id and work folder of every run as it starts.
	Started chan<- Started
}

// Started tells a test that a run began and where.
type Started struct {
	JobID   string
	WorkDir string
}

// New returns an engine claiming the given catalog models.
func New(models ...string) *Engine { return &Engine{models: models} }

func (e *Engine) Name() string     { return "enginetest" }
func (e *Engine) Models() []string { return e.models }

func (e *Engine) Check(ctx context.Context, tools engine.Tools) error {
	if _, err := exec.LookPath("sh"); err != nil {
		return fmt.Errorf("command sh not found on PATH")
	}
	return nil
}

func (e *Engine) Run(ctx context.Context, run *engine.Run) (*engine.Output, error) {
	if e.Started != nil {
		e.Started <- Started{JobID: run.Job.ID, WorkDir: run.WorkDir}
	}
	behaviour, arg, _ := strings.Cut(run.Job.Name, ":")
	n, _ := strconv.Atoi(arg)
	total := max(run.Job.Total, 1)
	stage := stageOf(run.Job.Kind)
	run.Report(job.Progress{Stage: stage, Total: total})

	script := succeed(total)
	switch behaviour {
	case Fail:
		script = `echo "loading weights"; echo "RuntimeError: CUDA out of memory" >&2; exit 3`
	case Hang:
		script = `sh -c 'trap "" TERM; echo $$ > hang.pid; while :; do sleep 1; done' & echo started; wait`
	case Silent:
		script = `exec sleep 1000`
	case Slow:
		script = fmt.Sprintf(`i=0; while [ $i -lt %d ]; do i=$((i+1)); echo "step $i/%d"; sleep 0.1; done; %s`, n, n, succeed(total))
	case Many:
		script = fmt.Sprintf(`%s; i=0; while [ $i -lt %d ]; do i=$((i+1)); echo "extra $i" > "out/extra_$i.txt"; done`, succeed(total), n)
	case NoFiles:
		script = `echo "Number of failed examples: 1"; exit 0`
	}
	err := run.Exec(ctx, engine.Command{Path: "sh", Args: []string{"-c", script}, OnLine: func(line string) {
		var i, of int
		if _, err := fmt.Sscanf(line, "step %d/%d", &i, &of); err == nil && of > 0 {
			f := float64(i) / float64(of)
			run.Report(job.Progress{Stage: stage, Total: total, Fraction: &f})
		}
	}})
	if err != nil {
		return nil, err
	}
	return collect(run, total, n, behaviour == Many)
}

// succeed writes one structure-like file and one score file per sub-unit into out/.
func succeed(total int) string {
	return fmt.Sprintf(`mkdir -p out; i=0; while [ $i -lt %d ]; do i=$((i+1)); `+
		`printf 'data_t%%s\n_entry.id t%%s\n' $i $i > "out/t$i.cif"; `+
		`printf '{"plddt": 0.8%%s, "ptm": 0.7}\n' $i > "out/t$i.json"; done; echo "wrote %d outputs on GPU ${CUDA_VISIBLE_DEVICES:-none}"`, total, total)
}

func stageOf(k job.Kind) string {
	switch k {
	case job.DesignKind:
		return job.StageDesigning
	case job.EmbedKind:
		return job.StageEmbedding
	}
	return job.StageInference
}

// collect trusts the files, not the exit code: each sub-unit must have left its outputs.
func collect(run *engine.Run, total, extra int, many bool) (*engine.Output, error) {
	out := &engine.Output{}
	dir := filepath.Join(run.WorkDir, "out")
	for i := 1; i <= total; i++ {
		target := fmt.Sprintf("t%d", i)
		var scores struct {
			PLDDT float64 `json:"plddt"`
			PTM   float64 `json:"ptm"`
		}
		b, err := os.ReadFile(filepath.Join(dir, target+".json"))
		if err != nil {
			return nil, fmt.Errorf("the tool wrote no scores for %s", target)
		}
		if err := json.Unmarshal(b, &scores); err != nil {
			return nil, fmt.Errorf("reading scores of %s: %w", target, err)
		}
		cif := engine.File{Artifact: job.Artifact{Path: target + ".cif", Target: target, Type: job.ArtifactStructure},
			Local: filepath.Join(dir, target+".cif")}
		conf := engine.File{Artifact: job.Artifact{Path: target + "/confidence.json", Target: target, Type: job.ArtifactConfidence},
			Local: filepath.Join(dir, target+".json")}
		out.Files = append(out.Files, cif, conf)
		switch run.Job.Kind {
		case job.PredictKind:
			out.Rows = append(out.Rows, job.PredictionRow{ID: target, Status: job.RowOK, NChains: 1,
				NResidues: len(run.Job.Input.Sequence), Samples: 1, RuntimeS: 0.1,
				Scores: &job.Scores{PLDDT: scores.PLDDT, PTM: scores.PTM}})
		case job.DesignKind:
			rank := i
			out.Designs = append(out.Designs, job.Design{ID: target, Rank: &rank, Sequence: "GSGSGS",
				File: cif.Path, Metrics: map[string]any{"ptm": scores.PTM}})
		}
	}
	if run.Job.Kind == job.EmbedKind {
		emb := &job.Embedding{Model: run.Job.Model, Pool: "mean", Format: "npz", DModel: 4}
		for i, s := range run.Job.Input.Sequences {
			emb.Sequences = append(emb.Sequences, job.EmbeddedSequence{ID: s.ID, Length: len(s.Sequence), File: fmt.Sprintf("t%d.cif", min(i+1, total))})
		}
		out.Embedding = emb
	}
	if many {
		for i := 1; i <= extra; i++ {
			name := fmt.Sprintf("extra_%d.txt", i)
			out.Files = append(out.Files, engine.File{Artifact: job.Artifact{Path: "extra/" + name, Target: "t1", Type: job.ArtifactMetrics},
				Local: filepath.Join(dir, name)})
		}
	}
	return out, nil
}
