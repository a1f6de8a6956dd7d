package protenix

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/protenix/protenixtest"
	"github.com/chaperone-bio/chaperone/internal/enginerun"
	"github.com/chaperone-bio/chaperone/job"
)

// The stand-ins, built once for the package's tests, by tool.
var standIns = map[string]string{}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "protenix-stand-in-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := 1
	for _, tool := range []string{protenixtest.Protenix, protenixtest.OpenDDE} {
		if standIns[tool], err = protenixtest.Build(dir, tool); err != nil {
			break
		}
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

// harness is engine runs against a stand-in, sharing one alignment cache.
type harness struct {
	t        *testing.T
	engine   *Engine
	cacheDir string
	workDir  string
	enginerun.Recorder
}

// newHarness is a harness of protenix-v2's engine.
func newHarness(t *testing.T) *harness { return newHarnessOf(t, New(Config{MSAServerURL: server})) }

func newHarnessOf(t *testing.T, e *Engine) *harness {
	return &harness{t: t, engine: e, cacheDir: t.TempDir()}
}

func (h *harness) run(ctx context.Context, j *job.Job) (*engine.Output, error) {
	h.t.Helper()
	h.workDir = h.t.TempDir()
	tools := engine.Tools{h.engine.Name(): standIns[h.engine.Name()]}
	return h.engine.Run(ctx, &engine.Run{
		Job: j, WorkDir: h.workDir, CacheDir: h.cacheDir, Tools: tools, Log: &h.Log,
		Report: h.Report, Exec: h.Exec(h.workDir),
	})
}

func (h *harness) mustRun(j *job.Job) *engine.Output {
	h.t.Helper()
	out, err := h.run(context.Background(), j)
	if err != nil {
		h.t.Fatalf("run: %v\nlog:\n%s", err, h.Log.String())
	}
	return out
}

// args is the command line the stand-in was given in the last run, from its first line of
// output.
func (h *harness) args() string {
	h.t.Helper()
	prefix := "[" + h.engine.Name() + " stand-in] pred "
	last := ""
	for line := range strings.Lines(h.Log.String()) {
		if rest, ok := strings.CutPrefix(line, prefix); ok {
			last = strings.TrimSpace(rest)
		}
	}
	if last == "" {
		h.t.Fatalf("the stand-in did not run:\n%s", h.Log.String())
	}
	return last
}

// input is the input JSON the engine wrote in the last run.
func (h *harness) input() []inputJob {
	h.t.Helper()
	var jobs []inputJob
	b, err := os.ReadFile(filepath.Join(h.workDir, "input", inputName+".json"))
	if err == nil {
		err = json.Unmarshal(b, &jobs)
	}
	if err != nil {
		h.t.Fatal(err)
	}
	return jobs
}

func paths(files []engine.File) map[string]string {
	m := map[string]string{}
	for _, f := range files {
		m[f.Path] = f.Type
	}
	return m
}
