// Package conformance is the test suite every engine passes, as store/storetest is for
// stores: given an engine and a stand-in for its tool, Run proves the contract that the
// worker and the API rely on, whatever the tool:
//
//   - Check passes with the stand-in, and fails with an *engine.CheckError when the tool is
//     missing (not on PATH, or not at the path --tool gives) and when its --help lacks any
//     option the engine passes to it: its Detail is a message an operator can act on (the
//     path, the option), its Public names no path of the server, for API callers;
//   - a canceled run ends at once and leaves no process of the tool's tree running;
//   - a target the tool failed on is a failed row with an error, and the job still
//     succeeds when another target succeeded;
//   - nothing is trusted from the exit status: a tool that exits 0 without writing its
//     files fails the job, and one that exits non-zero after writing every file does not;
//   - the engine's input rules (engine.InputRules), if it has any, accept the job it runs;
//   - every result is well formed: one row per target in order, every artifact listed once
//     (paths compared without case), relative, and a file of the run's work folder, and
//     every file a design or an embedding names is a listed artifact; progress stays within
//     the stage vocabulary and 0..1.
//
// What a new engine provides, in its own test (see engine/boltz for one):
//
//	func TestConformance(t *testing.T) { // not parallel: the suite sets PATH for a moment
//		conformance.Run(t, conformance.Harness{
//			Engine: New(Config{...}),
//			Tools:  engine.Tools{"<name>": standInPath}, // the stand-in of the engine's tool
//			OK:     job that the stand-in runs to success on every target,
//			Mixed:  job of which the stand-in fails the targets Failing and runs the others,
//			Failing: []string{...},
//			Hang:   job the stand-in keeps working on, with child processes, until stopped,
//			Busy:   a line of the run log that shows the tool busy with Hang,
//		})
//	}
//
// The stand-in is the executable at Tools[Engine.Name()]; the suite wraps it in small shell
// scripts to make it lie about its exit status or hide an option from its --help, so it
// must be an executable that honours the tool's real command line. Jobs are given as the
// catalog accepted them; the suite passes their params through JSON as the job store does,
// so the engine sees every number as a float64. Runs use engine/proc.Exec, as the worker
// does. The suite imports engine, engine/proc, job, bio and internal/execfile (it is test
// code: only tests import it).
package conformance

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/align"
	"github.com/chaperone-bio/chaperone/bio"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/proc"
	"github.com/chaperone-bio/chaperone/internal/execfile"
	"github.com/chaperone-bio/chaperone/job"
)

// Harness is what an engine's test gives the suite.
type Harness struct {
	Engine engine.Engine
	// Tools points the engine at its stand-in: Tools[Engine.Name()] is the stand-in of the
	// engine's tool.
	Tools engine.Tools
	// OK is a job the stand-in runs to success on every target. Give it the params that
	// make the engine pass the most options to its tool: the suite checks that Check
	// requires each option the engine passed in this run.
	OK *job.Job
	// Mixed is a prediction job of which the stand-in fails the targets named in Failing
	// and runs the others to success; nil for an engine whose results have no rows.
	Mixed   *job.Job
	Failing []string
	// Hang is a job the stand-in keeps working on, in a tree of processes, until it is
	// stopped; Busy is a line of the run log that shows the tool busy with it.
	Hang *job.Job
	Busy string
	// Alignments gives each run the alignments the alignment stage would have searched
	// for its job (job.Job.Searches), as a worker's lease brings them; nil for an engine
	// whose jobs have no searches.
	Alignments func(*job.Job) []align.Result
}

// Timeouts of the suite: a run of the stand-in, and how long a canceled run may take to
// end and its processes to go (proc.Grace is 2 s between SIGTERM and SIGKILL).
const (
	runTimeout    = 2 * time.Minute
	cancelTimeout = 15 * time.Second
)

// Run runs the suite. Call it from a test that is not parallel: the check of a tool that
// is missing from PATH empties PATH before the other subtests start in parallel.
func Run(t *testing.T, h Harness) {
	if h.Engine == nil || h.Tools[h.Engine.Name()] == "" || h.OK == nil || h.Hang == nil || h.Busy == "" {
		t.Fatal("conformance: the harness needs Engine, Tools with the stand-in of the engine's tool, OK, Hang and Busy")
	}
	s := &suite{h: h, name: h.Engine.Name(), standIn: h.Tools[h.Engine.Name()]}
	t.Run("CheckFailsWhenTheToolIsNotOnPath", s.checkNotOnPath)
	t.Run("CheckPassesWithTheStandIn", s.checkPasses)
	t.Run("CheckFailsWhenTheToolIsNotAtItsPath", s.checkNotAtPath)
	t.Run("CheckRequiresEveryOptionPassed", s.checkRequiresOptions)
	t.Run("RunsAJob", s.runsAJob)
	t.Run("AFailedTargetIsAFailedRow", s.failedTarget)
	t.Run("ExitZeroWithoutFilesFails", s.exitZeroWithoutFiles)
	t.Run("ExitNonZeroAfterEveryFileSucceeds", s.exitNonZeroAfterFiles)
	t.Run("CancelStopsTheProcessTree", s.cancel)
}

type suite struct {
	h       Harness
	name    string // the engine's and its tool's name
	standIn string
}

// tools is the harness's tools with the engine's tool at path.
func (s *suite) tools(path string) engine.Tools {
	tools := maps.Clone(s.h.Tools)
	tools[s.name] = path
	return tools
}

func (s *suite) checkNotOnPath(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	tools := s.tools("")
	delete(tools, s.name)
	err := s.h.Engine.Check(t.Context(), tools)
	if err == nil || !strings.Contains(err.Error(), "--tool "+s.name+"=PATH") {
		t.Errorf("Check without the tool on PATH = %v; want an error that says to give its path with --tool %s=PATH", err, s.name)
	}
	publicWithout(t, err)
}

// publicWithout checks that a failed Check says what is public apart from the operator's
// detail, and that the public part names none of the server's paths: not the harness's
// tools, nor any of paths.
func publicWithout(t *testing.T, err error, paths ...string) {
	t.Helper()
	var ce *engine.CheckError
	if !errors.As(err, &ce) || ce.Public == "" {
		t.Errorf("Check failed with %v (%T); want an *engine.CheckError with a Public reason", err, err)
		return
	}
	for _, p := range paths {
		if strings.Contains(ce.Public, p) {
			t.Errorf("Check's public reason %q names the server's path %s", ce.Public, p)
		}
	}
	if strings.Contains(ce.Public, "/") {
		t.Errorf("Check's public reason %q looks like it names a path", ce.Public)
	}
}

func (s *suite) checkPasses(t *testing.T) {
	t.Parallel()
	if err := s.h.Engine.Check(t.Context(), s.h.Tools); err != nil {
		t.Errorf("Check with the stand-in: %v", err)
	}
}

func (s *suite) checkNotAtPath(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), s.name)
	err := s.h.Engine.Check(t.Context(), s.tools(missing))
	if err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("Check with --tool %s=%s, which does not exist = %v; want an error naming the path", s.name, missing, err)
	}
	publicWithout(t, err, missing)
}

// checkRequiresOptions records the options the engine passes in a run of OK, then hides
// each from the stand-in's --help: Check must fail, naming it.
func (s *suite) checkRequiresOptions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	argv := filepath.Join(dir, "argv")
	recorder := script(t, dir, "recorder", fmt.Sprintf(`printf '%%s\n' "$@" >> %s; exec %s "$@"`, quote(argv), quote(s.standIn)))
	r := s.run(t, t.Context(), s.h.OK, s.tools(recorder))
	if r.err != nil {
		t.Fatalf("OK through a recording wrapper: %v\n%s", r.err, r.log.String())
	}
	b, err := os.ReadFile(argv)
	if err != nil {
		t.Fatal(err)
	}
	var options []string
	for arg := range strings.Lines(string(b)) {
		arg, _, _ = strings.Cut(strings.TrimSpace(arg), "=")
		if strings.HasPrefix(arg, "-") && len(arg) > 1 && !strings.ContainsAny(arg[1:2], "0123456789.") && !slices.Contains(options, arg) {
			options = append(options, arg)
		}
	}
	if len(options) == 0 {
		t.Skip("the engine passes its tool no options")
	}
	for i, opt := range options {
		// \b keeps --steps from matching inside --steps_extra; GNU sed reads it.
		hider := script(t, dir, fmt.Sprintf("hides-%d", i), fmt.Sprintf(`%s "$@" 2>&1 | sed -e 's/%s\b//g'`, quote(s.standIn), opt))
		err := s.h.Engine.Check(t.Context(), s.tools(hider))
		if err == nil || !strings.Contains(err.Error(), opt) {
			t.Errorf("Check with a tool whose --help lacks %s = %v; want an error naming %s", opt, err, opt)
		}
		publicWithout(t, err, hider, dir)
	}
}

func (s *suite) runsAJob(t *testing.T) {
	t.Parallel()
	if rules, ok := s.h.Engine.(engine.InputRules); ok && s.h.OK.Kind == job.PredictKind {
		complexes, err := bio.Complexes(s.h.OK.Input)
		if err != nil {
			t.Fatalf("OK: %v", err)
		}
		for _, cx := range complexes {
			if err := rules.CheckInput(s.h.OK.RunModel, cx, s.h.OK.Params); err != nil {
				t.Errorf("OK: the engine's own input rules refuse target %s: %v", cx.Name, err)
			}
		}
	}
	r := s.run(t, t.Context(), s.h.OK, s.h.Tools)
	r.wantEveryTargetOK(t, "OK", s.h.OK)
	if len(r.out.Rows)+len(r.out.Designs) == 0 && r.out.Embedding == nil {
		t.Error("OK: the output has no rows, designs or embedding")
	}
}

func (s *suite) failedTarget(t *testing.T) {
	t.Parallel()
	if s.h.Mixed == nil {
		t.Skip("no Mixed job: the engine's results have no rows")
	}
	r := s.run(t, t.Context(), s.h.Mixed, s.h.Tools)
	if r.err != nil {
		t.Fatalf("Mixed: the job failed though some targets succeeded: %v\n%s", r.err, r.log.String())
	}
	r.checkOutput(t, s.h.Mixed)
	ok := 0
	for _, row := range r.out.Rows {
		failing := slices.Contains(s.h.Failing, row.ID)
		switch {
		case failing && (row.Status != job.RowFailed || row.Error == ""):
			t.Errorf("Mixed: target %s, which the tool failed on, has the row %+v; want status failed and an error", row.ID, row)
		case !failing && row.Status != job.RowOK:
			t.Errorf("Mixed: target %s has the row %+v; want status ok", row.ID, row)
		case !failing:
			ok++
		}
	}
	if ok == 0 || len(s.h.Failing) == 0 {
		t.Errorf("Mixed must hold targets that succeed and targets that fail; rows %+v", r.out.Rows)
	}
}

func (s *suite) exitZeroWithoutFiles(t *testing.T) {
	t.Parallel()
	liar := script(t, t.TempDir(), "liar", fmt.Sprintf(`case " $* " in *" --help "*) exec %s "$@";; esac; echo "done, trust me"; exit 0`, quote(s.standIn)))
	r := s.run(t, t.Context(), s.h.OK, s.tools(liar))
	if r.err == nil {
		t.Errorf("a tool that exits 0 without writing anything: the job succeeded with %+v", r.out)
	}
}

func (s *suite) exitNonZeroAfterFiles(t *testing.T) {
	t.Parallel()
	grumpy := script(t, t.TempDir(), "grumpy", fmt.Sprintf(`%s "$@"; echo "Segmentation fault at exit"; exit 1`, quote(s.standIn)))
	r := s.run(t, t.Context(), s.h.OK, s.tools(grumpy))
	r.wantEveryTargetOK(t, "a tool that exits 1 after writing every file", s.h.OK)
}

func (s *suite) cancel(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan struct{})
	r := s.start(t, s.h.Hang, s.h.Tools)
	go func() {
		defer close(done)
		r.wait(ctx)
	}()
	r.log.waitFor(t, s.h.Busy, runTimeout)
	tree := processesMarked(r.marker)
	if len(tree) == 0 {
		t.Fatalf("no process of the run is running once the log shows %q", s.h.Busy)
	}
	cancel()
	select {
	case <-done:
		if !errors.Is(r.err, context.Canceled) {
			t.Errorf("Run after cancel = %v, want an error that is context.Canceled", r.err)
		}
	case <-time.After(cancelTimeout):
		t.Fatal("Run did not return after cancel")
	}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(cancelTimeout); ; <-tick.C {
		left := processesMarked(r.marker)
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes %v of the canceled run (of %v) are still running", left, tree)
		}
	}
}

// script writes an executable shell script.
func script(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := execfile.Write(p, "#!/bin/sh\n"+body+"\n"); err != nil {
		t.Fatal(err)
	}
	return p
}

// quote quotes s for the shell.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// runResult is one run of the engine and what it left.
type runResult struct {
	engine  engine.Engine
	run     *engine.Run
	marker  string // in the environment of every process the run starts
	log     *logBuffer
	mu      sync.Mutex
	reports []job.Progress
	out     *engine.Output
	err     error
}

// run runs j to its end.
func (s *suite) run(t *testing.T, ctx context.Context, j *job.Job, tools engine.Tools) *runResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, runTimeout)
	defer cancel()
	r := s.start(t, j, tools)
	r.wait(ctx)
	return r
}

// start prepares a run of j as the worker would: params as the store gives them back,
// fresh work and cache folders, the run's processes under proc.Exec and marked.
func (s *suite) start(t *testing.T, j *job.Job, tools engine.Tools) *runResult {
	t.Helper()
	stored := *j
	b, err := json.Marshal(j.Params)
	if err != nil {
		t.Fatal(err)
	}
	stored.Params = nil
	if err := json.Unmarshal(b, &stored.Params); err != nil {
		t.Fatal(err)
	}
	if stored.ID == "" {
		stored.ID = job.NewID()
	}
	id := make([]byte, 8)
	_, _ = rand.Read(id)
	r := &runResult{engine: s.h.Engine, log: &logBuffer{}, marker: "CHAPERONE_CONFORMANCE_RUN=" + hex.EncodeToString(id)}
	workDir := t.TempDir()
	var alignments []align.Result
	if s.h.Alignments != nil {
		alignments = s.h.Alignments(&stored)
	}
	r.run = &engine.Run{Job: &stored, WorkDir: workDir, Tools: tools, Alignments: alignments, Log: r.log,
		Report: func(p job.Progress) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.reports = append(r.reports, p)
		},
		Exec: func(ctx context.Context, c engine.Command) error {
			c.Env = append(c.Env[:len(c.Env):len(c.Env)], r.marker)
			return proc.Exec(ctx, workDir, r.log, c)
		},
	}
	return r
}

func (r *runResult) wait(ctx context.Context) {
	r.out, r.err = r.engine.Run(ctx, r.run)
}

// wantEveryTargetOK wants the run of j to have succeeded on every target.
func (r *runResult) wantEveryTargetOK(t *testing.T, what string, j *job.Job) {
	t.Helper()
	if r.err != nil {
		t.Fatalf("%s: the job failed: %v\n%s", what, r.err, r.log.String())
	}
	r.checkOutput(t, j)
	for _, row := range r.out.Rows {
		if row.Status != job.RowOK {
			t.Errorf("%s: row %+v did not succeed", what, row)
		}
	}
}

// checkOutput checks the output of a successful run of j against the contract.
func (r *runResult) checkOutput(t *testing.T, j *job.Job) {
	t.Helper()
	out := r.out
	listed := map[string]bool{}
	lower := map[string]string{}
	for _, f := range out.Files {
		p := f.Path
		switch {
		case p == "" || strings.HasPrefix(p, "/") || path.Clean(p) != p || p == ".." || strings.HasPrefix(p, "../"):
			t.Errorf("artifact path %q is not a clean relative path", p)
		case lower[strings.ToLower(p)] != "":
			t.Errorf("artifact path %q is listed twice (as %q before; paths compare without case)", p, lower[strings.ToLower(p)])
		}
		listed[p], lower[strings.ToLower(p)] = true, p
		if f.Target == "" || !slices.Contains([]string{job.ArtifactStructure, job.ArtifactConfidence, job.ArtifactPAE, job.ArtifactAffinity,
			job.ArtifactEmbedding, job.ArtifactTable, job.ArtifactMetrics, job.ArtifactLog}, f.Type) {
			t.Errorf("artifact %+v lacks a target or has a type outside the vocabulary", f.Artifact)
		}
		rel, err := filepath.Rel(r.run.WorkDir, f.Local)
		if err != nil || !filepath.IsLocal(rel) {
			t.Errorf("artifact %s is the file %s, outside the work folder %s", p, f.Local, r.run.WorkDir)
		} else if info, err := os.Lstat(f.Local); err != nil || !info.Mode().IsRegular() {
			t.Errorf("artifact %s: the file %s is no regular file (%v)", p, f.Local, err)
		}
	}
	for _, d := range out.Designs {
		if !listed[d.File] {
			t.Errorf("design %s names the file %q, which is no listed artifact", d.ID, d.File)
		}
	}
	if e := out.Embedding; e != nil {
		for _, sq := range e.Sequences {
			if !listed[sq.File] {
				t.Errorf("embedded sequence %s names the file %q, which is no listed artifact", sq.ID, sq.File)
			}
		}
	}
	if j.Kind == job.PredictKind {
		var ids []string
		for _, row := range out.Rows {
			ids = append(ids, row.ID)
			switch row.Status {
			case job.RowOK:
				if row.Error != "" || row.Scores == nil || row.Scores.PLDDT < 0 || row.Scores.PLDDT > 1 {
					t.Errorf("row %s is ok but has an error or lacks scores with plddt in 0..1: %+v (scores %+v)", row.ID, row, row.Scores)
				}
			case job.RowFailed:
				if row.Error == "" {
					t.Errorf("row %s failed without an error", row.ID)
				}
			default:
				t.Errorf("row %s has the status %q", row.ID, row.Status)
			}
		}
		if want := targetNames(j.Input); !slices.Equal(ids, want) {
			t.Errorf("rows %v, want one per target in order: %v", ids, want)
		}
		for _, f := range out.Files {
			if !slices.Contains(ids, f.Target) {
				t.Errorf("artifact %s belongs to %q, which is no target", f.Path, f.Target)
			}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.reports {
		if p.Stage != "" && !slices.Contains(job.Stages, p.Stage) {
			t.Errorf("progress stage %q is outside the vocabulary %v", p.Stage, job.Stages)
		}
		if f := p.Fraction; f != nil && (*f < 0 || *f > 1) {
			t.Errorf("progress fraction %v is outside 0..1", *f)
		}
	}
}

// targetNames are the names of a prediction's targets, as bio.Complexes names them.
func targetNames(in job.Input) []string {
	if len(in.Targets) == 0 {
		return []string{bio.SingleTarget}
	}
	names := make([]string, len(in.Targets))
	for i, t := range in.Targets {
		names[i] = t.Name
	}
	return names
}

// processesMarked lists the live processes whose environment holds marker.
func processesMarked(marker string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !slices.ContainsFunc(bytes.Split(env, []byte{0}), func(v []byte) bool { return string(v) == marker }) {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

// logBuffer is a run log that the streaming goroutine and the engine both write, and that
// a test can wait on.
type logBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	changed chan struct{} // closed and replaced at every write
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.changed != nil {
		close(l.changed)
		l.changed = nil
	}
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// waitFor waits until the log holds s.
func (l *logBuffer) waitFor(t *testing.T, s string, timeout time.Duration) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		l.mu.Lock()
		found := strings.Contains(l.b.String(), s)
		if l.changed == nil {
			l.changed = make(chan struct{})
		}
		changed := l.changed
		l.mu.Unlock()
		if found {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("the log did not show %q within %s:\n%s", s, timeout, l.String())
		}
	}
}
