package toolkit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/job"
)

// Plan is the first step of a run: it turns the job into Steps, deciding what every
// target becomes and where every file goes (for example parsing the input with
// bio.Complexes and the params with NewPredictParams). workDir is the run's work folder
// as an absolute path, to write into the tool's inputs.
type Plan func(run *engine.Run, workDir string) (Steps, error)

// Steps are one planned job of a command-line engine; RunSteps calls them in order.
type Steps interface {
	// WriteInputs writes the tool's input files into the work folder.
	WriteInputs() error
	// Command is the tool's command line, without the Path that RunSteps fills in, and
	// the reader of its output lines (progress, the tool's own word on a target).
	Command() engine.Command
	// Results reads what the tool left, given how it ended (exit is nil for status 0).
	// It trusts the files, not exit: tools exit 0 after skipping an input, and may exit
	// non-zero after writing everything.
	Results(exit error) (*engine.Output, error)
}

// RunSteps runs a job in one invocation of a command-line tool: it finds the tool, plans,
// writes the inputs, runs the tool through run.Exec, and reads the results. A canceled run
// and a tool not found end with Exec's error; every other end of the tool is for Results
// to judge.
func RunSteps(ctx context.Context, run *engine.Run, tool *Tool, plan Plan) (*engine.Output, error) {
	path, err := tool.Path(run.Tools)
	if err != nil {
		return nil, err
	}
	work, err := filepath.Abs(run.WorkDir)
	if err != nil {
		return nil, err
	}
	steps, err := plan(run, work)
	if err != nil {
		return nil, err
	}
	if err := steps.WriteInputs(); err != nil {
		return nil, fmt.Errorf("writing the inputs of %s: %w", tool.Name, err)
	}
	cmd := steps.Command()
	cmd.Path = path
	err = run.Exec(ctx, cmd)
	if ctx.Err() != nil || errors.Is(err, exec.ErrNotFound) {
		return nil, err
	}
	return steps.Results(err)
}

// Target is what an engine read for one target of a prediction: its row and its files.
type Target struct {
	Row   job.PredictionRow
	Files []engine.File
}

// MakeDirs creates the folders a run writes into, with their parents.
func MakeDirs(dirs ...string) error {
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	return nil
}

// Artifact is a file of the run as a result: path in the results, the target it belongs
// to, its type (job.Artifact*), and where the run left it.
func Artifact(path, target, typ, local string) engine.File {
	return engine.File{Artifact: job.Artifact{Path: path, Target: target, Type: typ}, Local: local}
}

// Predictions gathers the targets' rows and files into the run's output, in order. The job
// fails only when every target failed: with the tool's exit error if it ended badly (exit,
// as Results was given it), else with each target's error. Two targets with one artifact
// path, compared without case as a case-insensitive file system unpacking the archive
// would, are an error: one file would replace the other.
func Predictions(tool string, targets []Target, exit error) (*engine.Output, error) {
	out := &engine.Output{}
	paths := map[string]string{}
	var failures []string
	for _, t := range targets {
		out.Rows = append(out.Rows, t.Row)
		if t.Row.Status != job.RowOK {
			failures = append(failures, fmt.Sprintf("%s: %s", t.Row.ID, t.Row.Error))
		}
		for _, f := range t.Files {
			key := strings.ToLower(f.Path)
			if other, ok := paths[key]; ok {
				return nil, fmt.Errorf("targets %s and %s both have a result file %s", other, f.Target, f.Path)
			}
			paths[key] = f.Target
			out.Files = append(out.Files, f)
		}
	}
	if len(failures) < len(targets) {
		return out, nil
	}
	if exit != nil {
		return nil, fmt.Errorf("%s failed: %w", tool, exit)
	}
	msg := strings.Join(failures, "; ")
	if len(msg) > 2000 {
		msg = msg[:2000] + "…"
	}
	return nil, fmt.Errorf("%s predicted none of the %d target(s): %s", tool, len(targets), msg)
}
