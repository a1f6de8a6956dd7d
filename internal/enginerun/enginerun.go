// Package enginerun runs one job on an engine as the worker does, for the tests of an
// engine: a job validated by the catalog as the API does, with its params as the job store
// gives them back (every number a float64), a fresh work folder, the tool's processes
// under engine/proc, and the run log and progress recorded. It imports catalog, engine,
// engine/proc, align and job.
package enginerun

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/chaperone-bio/chaperone/align"
	"github.com/chaperone-bio/chaperone/catalog"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/proc"
	"github.com/chaperone-bio/chaperone/job"
)

// DesignJob validates a design request (its JSON body) with the default catalog and
// returns its job as a worker would lease it.
func DesignJob(t testing.TB, req string) *job.Job {
	t.Helper()
	var r catalog.DesignRequest
	if err := catalog.Decode([]byte(req), &r); err != nil {
		t.Fatal(err)
	}
	j, err := catalog.Default().NewDesign(&r)
	if err != nil {
		t.Fatal(err)
	}
	return Leased(t, j)
}

// PredictJob validates a predict request (its JSON body) with the default catalog and
// returns its job as a worker would lease it.
func PredictJob(t testing.TB, req string) *job.Job {
	t.Helper()
	var r catalog.PredictRequest
	if err := catalog.Decode([]byte(req), &r); err != nil {
		t.Fatal(err)
	}
	j, err := catalog.Default().NewPredict(&r)
	if err != nil {
		t.Fatal(err)
	}
	return Leased(t, j)
}

// Leased is j as a worker would lease it: with an ID, and its params as the job store
// gives them back.
func Leased(t testing.TB, j *job.Job) *job.Job {
	t.Helper()
	b, err := json.Marshal(j.Params)
	if err != nil {
		t.Fatal(err)
	}
	j.Params = nil
	if err := json.Unmarshal(b, &j.Params); err != nil {
		t.Fatal(err)
	}
	j.ID = job.NewID()
	return j
}

// Result is one run and what it left.
type Result struct {
	Out     *engine.Output
	Err     error
	WorkDir string
	Recorder
}

// Recorder is what runs leave for the worker: the run log and the progress reported. Its
// Report and Exec are an engine.Run's.
type Recorder struct {
	Log Log

	mu      sync.Mutex
	reports []job.Progress
}

// Report records p.
func (r *Recorder) Report(p job.Progress) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reports = append(r.reports, p)
}

// Reports is the progress reported, in order.
func (r *Recorder) Reports() []job.Progress {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]job.Progress(nil), r.reports...)
}

// Stages is the stages of the progress reported, in order, each once per stretch.
func (r *Recorder) Stages() []string {
	var out []string
	for _, p := range r.Reports() {
		if len(out) == 0 || out[len(out)-1] != p.Stage {
			out = append(out, p.Stage)
		}
	}
	return out
}

// Exec runs a command in workDir under engine/proc, its output into the log.
func (r *Recorder) Exec(workDir string) func(context.Context, engine.Command) error {
	return func(ctx context.Context, c engine.Command) error { return proc.Exec(ctx, workDir, &r.Log, c) }
}

// Run runs j on e to its end, with tools.
func Run(t testing.TB, e engine.Engine, j *job.Job, tools engine.Tools) *Result {
	t.Helper()
	return RunAligned(t, e, j, tools, nil)
}

// RunAligned is Run with the alignments the alignment stage searched for j
// (engine.Run.Alignments).
func RunAligned(t testing.TB, e engine.Engine, j *job.Job, tools engine.Tools, alignments []align.Result) *Result {
	t.Helper()
	r := &Result{WorkDir: t.TempDir()}
	r.Out, r.Err = e.Run(context.Background(), &engine.Run{
		Job: j, WorkDir: r.WorkDir, Tools: tools, Alignments: alignments, Log: &r.Log, Report: r.Report, Exec: r.Exec(r.WorkDir),
	})
	return r
}

// MustRun is Run, failing the test with the log when the run fails.
func MustRun(t testing.TB, e engine.Engine, j *job.Job, tools engine.Tools) *Result {
	t.Helper()
	r := Run(t, e, j, tools)
	if r.Err != nil {
		t.Fatalf("run: %v\nlog:\n%s", r.Err, r.Log.String())
	}
	return r
}

// Log is a run log that the streaming goroutine and the engine may both write.
type Log struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *Log) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Main runs a test binary's tests with a stand-in built once: build puts it into a
// temporary folder, *path tells the tests where it is, and the folder goes when they end.
// It returns the exit code for os.Exit.
func Main(m *testing.M, build func(dir string) (string, error), path *string) int {
	dir, err := os.MkdirTemp("", "stand-in-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if *path, err = build(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}
