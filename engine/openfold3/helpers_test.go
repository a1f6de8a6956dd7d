package openfold3

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/chaperone-bio/chaperone/catalog"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/openfold3/openfold3test"
	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/worker/proc"
)

// standIn is the path of the stand-in run_openfold and ckpt a checkpoint file for it,
// made once for the package's tests.
var standIn, ckpt string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "openfold3-stand-in-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := 1
	standIn, err = openfold3test.Build(dir)
	if err == nil {
		ckpt = filepath.Join(dir, checkpointName)
		err = os.WriteFile(ckpt, []byte("weights"), 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
	} else {
		code = m.Run()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

const server = "https://msa.example.org"

// tools points the engine at the stand-in and the checkpoint.
func tools() engine.Tools { return engine.Tools{"run_openfold": standIn, CheckpointTool: ckpt} }

// lockedBuffer is a log that the streaming goroutine and the engine may both write.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// harness runs jobs on one engine against the stand-in, sharing an alignment cache.
type harness struct {
	t        *testing.T
	engine   *Engine
	cacheDir string
	log      lockedBuffer
	mu       sync.Mutex
	reports  []job.Progress
	workDir  string
}

func newHarness(t *testing.T, cfg Config) *harness {
	if cfg.MSAServerURL == "" {
		cfg.MSAServerURL = server
	}
	return &harness{t: t, engine: New(cfg), cacheDir: t.TempDir()}
}

// newJob validates a request as the API does and returns its job with params as the
// store gives them back (numbers from JSON are float64).
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
	b, _ := json.Marshal(j.Params)
	j.Params = nil
	if err := json.Unmarshal(b, &j.Params); err != nil {
		t.Fatal(err)
	}
	j.ID = "0123456789abcdef0123456789abcdef"
	return j
}

// run runs a job in a fresh work folder.
func (h *harness) run(j *job.Job) (*engine.Output, error) {
	h.t.Helper()
	h.workDir = h.t.TempDir()
	h.log = lockedBuffer{}
	return h.engine.Run(context.Background(), &engine.Run{
		Job: j, WorkDir: h.workDir, CacheDir: h.cacheDir, Tools: tools(), Log: &h.log,
		Report: func(p job.Progress) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.reports = append(h.reports, p)
		},
		Exec: func(ctx context.Context, c engine.Command) error { return proc.Exec(ctx, h.workDir, &h.log, c) },
	})
}
