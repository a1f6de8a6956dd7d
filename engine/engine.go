// Package engine defines how chaperone drives an upstream model tool: an Engine declares
// the catalog models it serves, checks that its tool is present, and runs one job in a work
// folder; a Diagnoser also says what `chaperone doctor` reports of its tool. One subpackage
// per upstream tool implements it; the registry here collects them, engine/toolkit holds
// what they all repeat, engine/proc runs and supervises their tools' processes (for the
// worker and the engines' tests alike), and engine/conformance is the test suite every one
// of them passes. It imports job, bio (the parsed input that InputRules check) and align
// (the alignments a run is given).
package engine

import (
	"context"
	"io"

	"github.com/chaperone-bio/chaperone/align"
	"github.com/chaperone-bio/chaperone/bio"
	"github.com/chaperone-bio/chaperone/job"
)

// Engine runs jobs for one upstream tool.
type Engine interface {
	// Name is the engine's name, also the key of its tool in Tools (for example "boltz").
	Name() string
	// Models lists the catalog model ids the engine serves.
	Models() []string
	// Check reports whether the engine can run here: its tool is found (at the path Tools
	// gives, else its upstream command on PATH) and passes a cheap self-check. The error
	// says what is missing in words an operator can act on.
	Check(ctx context.Context, tools Tools) error
	// Run executes one job. It must not trust the tool's exit code alone: success means the
	// files the engine expects are there.
	Run(ctx context.Context, run *Run) (*Output, error)
}

// InputRules is implemented by an engine whose tool demands more of a prediction input
// than the catalog's capabilities say: the server registers CheckInput with the catalog
// for each of the engine's models, so that a job the tool would fail on, or read
// differently than the caller meant, is refused at submit with a 400.
type InputRules interface {
	// CheckInput checks one parsed target of a job for model with the job's accepted
	// params; its error is placed in the input (bio.Errorf) where a place exists.
	CheckInput(model string, cx *bio.Complex, params map[string]any) error
}

// Tools maps a tool name to an explicit executable path chosen by the operator
// (--tool NAME=PATH or CHAPERONE_TOOL_<NAME>).
type Tools map[string]string

// Run is everything an engine gets for one job.
type Run struct {
	Job     *job.Job
	WorkDir string // empty folder owned by this run
	Tools   Tools
	// Alignments are the alignments the alignment stage searched for the job, one per
	// search of Job.Searches (align.Find picks a target's by its chains): an engine hands
	// them to its tool as files and never lets the tool search itself. A search the job
	// does not list (use_msa_server off, every chain's alignment sent) has none.
	Alignments []align.Result
	// Log receives the run log: the tool's output and the engine's own notes.
	Log io.Writer
	// Report records progress; the worker forwards it to the store.
	Report func(job.Progress)
	// Exec runs a command in its own process group inside WorkDir, streaming its output to
	// Log, and kills the whole group when ctx ends. Engines must start processes only
	// through it, so that cancel and caps reach every process.
	Exec func(ctx context.Context, c Command) error
}

// Command is one external process an engine runs.
type Command struct {
	Path string
	Args []string
	Env  []string // added to the worker's environment
	// OnLine, when set, sees every line the process prints (stdout and stderr), for
	// progress parsing. It runs on the streaming goroutine and must be quick.
	OnLine func(line string)
}

// Output is what a finished run produced.
type Output struct {
	Rows      []job.PredictionRow
	Designs   []job.Design
	Embedding *job.Embedding
	// Files are the artifacts, each a file the run wrote under WorkDir.
	Files []File
}

// File is one artifact and where the run left it.
type File struct {
	job.Artifact
	Local string // path of the file on disk
}
