package pydriver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/proc"
	"github.com/chaperone-bio/chaperone/engine/pydriver/pydrivertest"
	"github.com/chaperone-bio/chaperone/engine/toolkit/npy"
	"github.com/chaperone-bio/chaperone/internal/execfile"
	"github.com/chaperone-bio/chaperone/job"
)

// waitTimeout bounds every wait of these tests on the driver.
const waitTimeout = 30 * time.Second

// log is a run log that a test can wait on for a line.
type log struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	seen chan struct{} // closed when want has been written
	want string
}

func newLog(want string) *log { return &log{seen: make(chan struct{}), want: want} }

func (l *log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	if l.want != "" && strings.Contains(l.buf.String(), l.want) {
		l.want = ""
		close(l.seen)
	}
	return len(p), nil
}

func (l *log) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// open starts a session of eng with the stand-in interpreter, as a worker slot would.
func open(t testing.TB, eng *Engine, env ...string) (*session, engine.Tools) {
	t.Helper()
	tools := engine.Tools{eng.Name(): pydrivertest.Interpreter(t, t.TempDir(), env...)}
	dir := t.TempDir()
	sess, err := eng.Open(t.Context(), engine.Slot{Tools: tools, Dir: dir,
		Start: func(c engine.Command) (engine.Process, error) { return proc.Start(dir, c) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	return sess.(*session), tools
}

// embedJob is an embedding job as the catalog accepts it.
func embedJob(model string, params map[string]any, seqs ...string) *job.Job {
	j := &job.Job{ID: "job1", Kind: job.EmbedKind, Model: model, RunModel: model, Total: len(seqs),
		Params: map[string]any{"pool": "mean", "format": "npz", "fast": false}}
	for k, v := range params {
		j.Params[k] = v
	}
	for i, s := range seqs {
		j.Input.Sequences = append(j.Input.Sequences, job.NamedSequence{ID: fmt.Sprintf("seq%d", i+1), Sequence: s})
	}
	return j
}

func newRun(t testing.TB, j *job.Job, log *log) *engine.Run {
	dir := t.TempDir()
	return &engine.Run{Job: j, WorkDir: dir, Log: log, Report: func(job.Progress) {},
		Exec: func(ctx context.Context, c engine.Command) error { return proc.Exec(ctx, dir, log, c) }}
}

func TestEmbeddingsAreTheModelsLastHiddenStatesWithoutBoundaryTokens(t *testing.T) {
	t.Parallel()
	seqs := []string{"MKTAYIAKQR", "ACDEFGHIKLMNPQRSTVWY", "MKV", "ACDEFGHIKLMNPQRSTVWYA"}
	for _, tc := range []struct {
		eng   *Engine
		model string
		pool  string
	}{
		{ESM(), "esmc-300m", "mean"},
		{ESM(), "esmc-6b", "max"},
		{Transformers(), "saprot-650m", "cls"},
		{Transformers(), "saprot-1.3b", "mean"},
	} {
		t.Run(tc.model+"/"+tc.pool, func(t *testing.T) {
			t.Parallel()
			sess, _ := open(t, tc.eng)
			run := newRun(t, embedJob(tc.model, map[string]any{"pool": tc.pool}, seqs...), newLog(""))
			out, err := sess.Run(t.Context(), run)
			if err != nil {
				t.Fatalf("%v\n%s", err, run.Log)
			}
			m, _ := tc.eng.model(tc.model)
			e := out.Embedding
			if e.DModel != m.dModel || e.Pool != tc.pool || e.Format != "npz" || len(e.Sequences) != len(seqs) || len(out.Files) != len(seqs)+1 {
				t.Fatalf("embedding %+v with %d files", e, len(out.Files))
			}
			for i, s := range e.Sequences {
				if s.ID != fmt.Sprintf("seq%d", i+1) || s.Length != len(seqs[i]) || s.File != s.ID+".npz" {
					t.Errorf("sequence %d: %+v", i, s)
				}
				pydrivertest.CheckNPZ(t, filepath.Join(run.WorkDir, s.File), m.loader == "saprot", seqs[i], tc.pool, m.dModel)
			}
		})
	}
}

func TestASessionLoadsAModelOnceForManyJobs(t *testing.T) {
	t.Parallel()
	sess, _ := open(t, ESM())
	for i := range 3 {
		log := newLog("")
		if _, err := sess.Run(t.Context(), newRun(t, embedJob("esmc-300m", nil, "MKTAYIAKQR", "MKV"), log)); err != nil {
			t.Fatalf("job %d: %v\n%s", i+1, err, log)
		}
		if !strings.Contains(log.String(), "== chaperone: esm 3.4.3+standin, models loaded: ") {
			t.Errorf("job %d: the log does not name the package's version:\n%s", i+1, log)
		}
		// What the model prints on stdout reaches the log, not the protocol.
		if !strings.Contains(log.String(), "standin: a line on stdout") {
			t.Errorf("job %d: the model's stdout is not in the log:\n%s", i+1, log)
		}
	}
	if n := sess.loadCount(); n != 1 {
		t.Errorf("three jobs of one model loaded it %d times; want once", n)
	}
	if got := sess.Loaded(); fmt.Sprint(got) != "[esmc-300m]" {
		t.Errorf("Loaded() = %v; want [esmc-300m]", got)
	}
}

func TestAModelThatDoesNotFitFreesTheOthers(t *testing.T) {
	t.Parallel()
	sess, _ := open(t, ESM(), "STANDIN_MAX_RESIDENT=1")
	for i, model := range []string{"esmc-300m", "esmc-600m", "esmc-300m"} {
		run := newRun(t, embedJob(model, nil, "MKV"), newLog(""))
		if _, err := sess.Run(t.Context(), run); err != nil {
			t.Fatalf("job %d (%s): %v\n%s", i+1, model, err, run.Log)
		}
		if got := sess.Loaded(); fmt.Sprint(got) != "["+model+"]" {
			t.Errorf("after job %d Loaded() = %v; want only %s", i+1, got, model)
		}
	}
	if n := sess.loadCount(); n != 3 {
		t.Errorf("loads = %d; want 3 (each change of model in a memory that holds one)", n)
	}
}

func TestAFailedSequenceFailsTheJobByNameAndTheDriverLivesOn(t *testing.T) {
	t.Parallel()
	sess, _ := open(t, ESM())
	for _, tc := range []struct{ seq, want string }{
		{pydrivertest.Fail + "MKV", "failed on sequence seq2: ValueError: stand-in: the model refused"},
		{pydrivertest.OOM + "MKV", "failed on sequence seq2: out of memory"},
	} {
		log := newLog("")
		_, err := sess.Run(t.Context(), newRun(t, embedJob("esmc-300m", nil, "MKV", tc.seq, "MKTAYIAKQR"), log))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("job with %s: %v; want an error containing %q", tc.seq, err, tc.want)
		}
		if !strings.Contains(log.String(), "Traceback (most recent call last)") {
			t.Errorf("job with %s: the log has no traceback:\n%s", tc.seq, log)
		}
		if err := sess.Err(); err != nil {
			t.Fatalf("the session died of a failed sequence: %v", err)
		}
	}
	run := newRun(t, embedJob("esmc-300m", nil, "MKV"), newLog(""))
	if _, err := sess.Run(t.Context(), run); err != nil {
		t.Errorf("a job after the failures: %v", err)
	}
}

func TestADriverThatDiesFailsItsJobAndTheSessionWithIt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		seq     string
		kill    bool   // kill the driver once it hangs
		wantErr string // in the job's error
		wantLog string // in the job's log
	}{
		{"crashed", pydrivertest.Crash + "MKV", false, "killed by SIGSEGV", "Fatal Python error: Segmentation fault"},
		{"killed", pydrivertest.Hang + "MKV", true, "killed by SIGKILL", pydrivertest.Hanging},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sess, _ := open(t, ESM())
			log := newLog(pydrivertest.Hanging)
			if tc.kill {
				go func() {
					select {
					case <-log.seen:
						syscall.Kill(sess.proc.(*proc.Process).Pid(), syscall.SIGKILL)
					case <-time.After(waitTimeout):
					}
				}()
			}
			_, err := sess.Run(t.Context(), newRun(t, embedJob("esmc-300m", nil, tc.seq), log))
			if err == nil || !strings.Contains(err.Error(), "driver ended during the job") || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Run = %v; want the driver's end (%s)", err, tc.wantErr)
			}
			if !strings.Contains(log.String(), tc.wantLog) {
				t.Errorf("the job's log lacks %q:\n%s", tc.wantLog, log)
			}
			if sess.Err() == nil {
				t.Error("the session takes jobs after its driver died")
			}
		})
	}
}

func TestCancelAndTheRuntimeCapStopAHungDriver(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		ctx  func(t *testing.T, log *log) context.Context
		want error
	}{
		{"cancel", func(t *testing.T, log *log) context.Context {
			ctx, cancel := context.WithCancel(t.Context())
			go func() {
				select {
				case <-log.seen:
				case <-time.After(waitTimeout):
				}
				cancel()
			}()
			return ctx
		}, context.Canceled},
		{"cap", func(t *testing.T, _ *log) context.Context {
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
			t.Cleanup(cancel)
			return ctx
		}, context.DeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sess, _ := open(t, ESM())
			log := newLog(pydrivertest.Hanging)
			ctx := tc.ctx(t, log)
			_, err := sess.Run(ctx, newRun(t, embedJob("esmc-300m", nil, pydrivertest.Hang+"MKV"), log))
			if !errors.Is(err, tc.want) {
				t.Errorf("Run = %v; want %v", err, tc.want)
			}
			select {
			case <-sess.proc.Exited():
			case <-time.After(waitTimeout):
				t.Fatal("the hung driver still runs after Run returned")
			}
			if sess.Err() == nil {
				t.Error("the session takes jobs after its driver was stopped")
			}
		})
	}
}

func TestCheckImportsThePackageWithoutLoadingWeights(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	eng := ESM()
	tools := engine.Tools{"esm": pydrivertest.Interpreter(t, dir, "STANDIN_MAX_RESIDENT=-1")}
	if err := eng.Check(t.Context(), tools); err != nil {
		t.Fatalf("Check with the stand-in: %v", err)
	}
	// Debian's Python has numpy but not esm; with -S (no site packages) it has neither, and
	// the driver then fails on numpy before it would reach esm: either way esm is not
	// installed, and the check says so, with its advice once.
	noNumpy := filepath.Join(dir, "python-S")
	if err := execfile.Write(noNumpy, "#!/bin/sh\nexec /usr/bin/python3 -S \"$@\"\n"); err != nil {
		t.Fatal(err)
	}
	for _, python := range []string{"/usr/bin/python3", noNumpy} {
		err := eng.Check(t.Context(), engine.Tools{"esm": python})
		var ce *engine.CheckError
		if !errors.As(err, &ce) || ce.Public != "the esm package is not installed" ||
			!strings.HasPrefix(ce.Detail, "esm is not installed for "+python+"; install esm with torch (pip install") ||
			strings.Contains(ce.Detail, "numpy") || strings.Count(ce.Detail, "pip install") != 1 {
			t.Errorf("Check with %s, which lacks esm = %#v; want esm not installed, and how to install it once", python, err)
		}
	}
	missing := engine.Tools{"transformers": filepath.Join(dir, "nowhere", "python")}
	if err := Transformers().Check(t.Context(), missing); err == nil || !strings.Contains(err.Error(), missing["transformers"]) {
		t.Errorf("Check with a missing interpreter = %v; want an error naming its path", err)
	}
}

func TestRunServesOneJobWithADriverOfItsOwn(t *testing.T) {
	t.Parallel()
	eng := Transformers()
	log := newLog("")
	run := newRun(t, embedJob("saprot-650m", nil, "MKTAYIAKQR", "MKV"), log)
	run.Tools = engine.Tools{"transformers": pydrivertest.Interpreter(t, t.TempDir())}
	out, err := eng.Run(t.Context(), run)
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	pydrivertest.CheckNPZ(t, filepath.Join(run.WorkDir, "seq1.npz"), true, "MKTAYIAKQR", "mean", 1280)
	if len(out.Files) != 3 || out.Files[2].Path != "manifest.json" {
		t.Errorf("files %v; want two npz and manifest.json", out.Files)
	}
	var manifest struct {
		Model     string `json:"model"`
		DType     string `json:"dtype"`
		DModel    int    `json:"d_model"`
		Sequences []struct {
			ID     string           `json:"id"`
			File   string           `json:"file"`
			Arrays map[string][]int `json:"arrays"`
		} `json:"sequences"`
	}
	b, err := os.ReadFile(filepath.Join(run.WorkDir, "manifest.json"))
	if err == nil {
		err = json.Unmarshal(b, &manifest)
	}
	if err != nil || manifest.Model != "saprot-650m" || manifest.DType != "float32" || manifest.DModel != 1280 || len(manifest.Sequences) != 2 ||
		manifest.Sequences[1].File != "seq2.npz" || !reflect.DeepEqual(manifest.Sequences[1].Arrays, map[string][]int{"per_residue": {3, 1280}, "pooled": {1280}}) {
		t.Errorf("manifest.json %s (%v): want the model, float32 and each file's shapes", b, err)
	}
}

func TestAFoldTakesTheJobsSeedAndWritesThePAEAskedFor(t *testing.T) {
	t.Parallel()
	log := newLog("")
	run := newRun(t, catalogJob(t, job.PredictKind, `{"model": "esmfold2", "name": "x", "sequence": "MKTAYIAK",
		"params": {"seed": 7, "write_pae": true}}`), log)
	run.Tools = engine.Tools{"esm": pydrivertest.Interpreter(t, t.TempDir())}
	out, err := ESM().Run(t.Context(), run)
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	if !strings.Contains(log.String(), "standin: fold seed 7") {
		t.Errorf("the fold was not seeded with 7:\n%s", log)
	}
	i := slices.IndexFunc(out.Files, func(f engine.File) bool { return f.Path == "target_1_pae.npz" })
	if i < 0 || out.Files[i].Type != job.ArtifactPAE {
		t.Fatalf("no target_1_pae.npz of type pae in %v", out.Files)
	}
	arrays, err := npy.ReadNPZ(out.Files[i].Local)
	if err != nil || arrays["pae"] == nil || !reflect.DeepEqual(arrays["pae"].Shape, []int{8, 8}) {
		t.Errorf("target_1_pae.npz: %v, %v; want pae of 8 x 8 tokens", arrays, err)
	}
}
