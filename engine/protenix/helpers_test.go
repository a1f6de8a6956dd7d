package protenix

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chaperone-bio/chaperone/align"
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

// source is where fakeSearch says it searched.
var source = align.Source{Server: "https://msa.example.org", Mode: "env", Pairing: "pairgreedy"}

// searchedFor makes up what the alignment stage gives a job: the result of each of its
// searches (fakeSearch).
func searchedFor(j *job.Job) []align.Result {
	var out []align.Result
	for _, s := range j.Searches {
		out = append(out, fakeSearch(s.Chains...))
	}
	return out
}

// fakeSearch is what the alignment stage hands the engine for a target's chains, in
// ColabFold's layout (align/doc.go) with made-up hits. Distinct chain i, numbered 101+i,
// gets an unpaired A3M of its UniRef block (the chain, a hit, a hit with an insertion)
// followed by its environmental block (the chain again, a hit). Two or more distinct chains
// also get paired A3Ms of the chain and three rows, row i of every chain from one
// organism; row 3 is a gap row in every chain but the first, as pairgreedy pads an
// organism that only some chains have.
func fakeSearch(chains ...string) align.Result {
	r := align.Result{Source: source}
	for _, c := range chains {
		if !slices.Contains(r.Chains, c) {
			r.Chains = append(r.Chains, c)
		}
	}
	for i, seq := range r.Chains {
		id := 101 + i
		r.Unpaired = append(r.Unpaired, fmt.Sprintf(">%d\n%s\n>UniRef100_A0A%d01\t131\t0.820\n%s\n>UniRef100_A0A%d02\t97\t0.610\n%s\n"+
			">%d\n%s\n>MGYP%09d\t88\t0.540\n%s\n", id, seq, i, variant(seq, 1), i, withInsertion(variant(seq, 2)), id, seq, i, variant(seq, 3)))
	}
	if len(r.Chains) < 2 {
		return r
	}
	for i, seq := range r.Chains {
		last := variant(seq, 6)
		if i > 0 {
			last = strings.Repeat("-", len(seq))
		}
		r.Paired = append(r.Paired, fmt.Sprintf(">%d\n%s\n>UniRef100_P%d1\t120\t0.700\n%s\n>UniRef100_P%d2\t110\t0.650\n%s\n>UniRef100_P%d3\t90\t0.500\n%s\n",
			101+i, seq, i, variant(seq, 4), i, variant(seq, 5), i, last))
	}
	return r
}

// variant is a homolog of seq for a made-up alignment, different for every k ≥ 1.
func variant(seq string, k int) string {
	b := []byte(seq)
	for i := k % 3; i < len(b); i += 2 + k {
		b[i] = "ACDEFGHIKLMNPQRSTVWY"[(i*7+k)%20]
	}
	return string(b)
}

// withInsertion puts two inserted residues (lower case in A3M) after the third.
func withInsertion(row string) string { return row[:3] + "gk" + row[3:] }

// harness is engine runs against a stand-in, with the alignments the alignment stage
// hands them.
type harness struct {
	t          *testing.T
	engine     *Engine
	alignments []align.Result
	workDir    string
	enginerun.Recorder
}

// newHarness is a harness of protenix-v2's engine.
func newHarness(t *testing.T, alignments ...align.Result) *harness {
	return newHarnessOf(t, New(Config{}), alignments...)
}

func newHarnessOf(t *testing.T, e *Engine, alignments ...align.Result) *harness {
	return &harness{t: t, engine: e, alignments: alignments}
}

func (h *harness) run(ctx context.Context, j *job.Job) (*engine.Output, error) {
	h.t.Helper()
	h.workDir = h.t.TempDir()
	tools := engine.Tools{h.engine.Name(): standIns[h.engine.Name()]}
	return h.engine.Run(ctx, &engine.Run{
		Job: j, WorkDir: h.workDir, Tools: tools, Alignments: h.alignments, Log: &h.Log,
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
