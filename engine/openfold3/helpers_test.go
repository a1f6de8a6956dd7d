package openfold3

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/chaperone-bio/chaperone/align"
	"github.com/chaperone-bio/chaperone/catalog"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/openfold3/openfold3test"
	"github.com/chaperone-bio/chaperone/internal/enginerun"
	"github.com/chaperone-bio/chaperone/job"
)

// standIn is the path of the stand-in run_openfold and ckpt a checkpoint file for it,
// made once for the package's tests.
var standIn, ckpt string

func TestMain(m *testing.M) {
	os.Exit(enginerun.Main(m, func(dir string) (string, error) {
		ckpt = filepath.Join(dir, checkpointName)
		if err := os.WriteFile(ckpt, []byte("weights"), 0o644); err != nil {
			return "", err
		}
		return openfold3test.Build(dir)
	}, &standIn))
}

// tools points the engine at the stand-in and the checkpoint.
func tools() engine.Tools { return engine.Tools{"run_openfold": standIn, CheckpointTool: ckpt} }

// harness runs jobs on one engine against the stand-in.
type harness struct {
	t       *testing.T
	engine  *Engine
	workDir string
	enginerun.Recorder
}

func newHarness(t *testing.T, cfg Config) *harness {
	return &harness{t: t, engine: New(cfg)}
}

// newJob validates a request as the API does, with openfold3 as its model unless it names
// one, and returns its job as a worker would lease it.
func newJob(t *testing.T, req string) *job.Job {
	t.Helper()
	var r catalog.PredictRequest
	if err := catalog.Decode([]byte(req), &r); err != nil {
		t.Fatal(err)
	}
	if r.Model == "" {
		r.Model = "openfold3" // the params, seed among them, are openfold3's
	}
	j, err := catalog.Default().NewPredict(&r)
	if err != nil {
		t.Fatal(err)
	}
	return enginerun.Leased(t, j)
}

// run runs a job in a fresh work folder with the alignments the alignment stage would
// have searched for it (searchedFor).
func (h *harness) run(j *job.Job) (*engine.Output, error) {
	h.t.Helper()
	return h.runWith(j, searchedFor(j))
}

// runWith runs a job in a fresh work folder with the given searched alignments.
func (h *harness) runWith(j *job.Job, alignments []align.Result) (*engine.Output, error) {
	h.t.Helper()
	h.workDir = h.t.TempDir()
	h.Log = enginerun.Log{}
	return h.engine.Run(context.Background(), &engine.Run{
		Job: j, WorkDir: h.workDir, Tools: tools(), Alignments: alignments, Log: &h.Log,
		Report: h.Report, Exec: h.Exec(h.workDir),
	})
}
