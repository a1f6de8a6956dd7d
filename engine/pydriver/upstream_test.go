package pydriver

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/pins"
	"github.com/chaperone-bio/chaperone/engine/proc"
	"github.com/chaperone-bio/chaperone/engine/pydriver/pydrivertest"
	"github.com/chaperone-bio/chaperone/internal/realtools"
	"github.com/chaperone-bio/chaperone/job"
)

// upstreamSession starts a session of eng with a real package's interpreter and tools, as
// a worker slot would, and returns it with its driver's process.
func upstreamSession(t *testing.T, eng *Engine, tools engine.Tools) (*session, *proc.Process) {
	t.Helper()
	dir := t.TempDir()
	var p *proc.Process
	s, err := eng.Open(t.Context(), engine.Slot{Tools: tools, Dir: dir, Start: func(c engine.Command) (engine.Process, error) {
		var err error
		p, err = proc.Start(dir, c)
		return p, err
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.(*session), p
}

// upstreamRun is newRun with the worker's tools.
func upstreamRun(t *testing.T, j *job.Job, log *log, tools engine.Tools) *engine.Run {
	run := newRun(t, j, log)
	run.Tools = tools
	return run
}

// TestUpstreamCheckAndDoctor: each engine's check passes on the pinned package without
// loading weights, doctor reports the pinned version as tested and a folder the operator
// named as present, and the repositories the engine names are the installed esm's own.
func TestUpstreamCheckAndDoctor(t *testing.T) {
	esm := realtools.Require(t, "esm")
	transformers := realtools.Require(t, "transformers")
	realtools.Isolate(t)
	folder := pydrivertest.TinyModel(t, esm, "esmc", pydrivertest.ESMC300M)
	for _, tc := range []struct {
		eng *Engine
		env realtools.Env
	}{{ESM(), esm}, {Transformers(), transformers}} {
		tools := engine.Tools{tc.eng.Name(): tc.env.Python(), "esmc-300m": folder, "saprot-650m": t.TempDir()}
		if err := tc.eng.Check(t.Context(), tools); err != nil {
			t.Fatalf("%s: check: %v", tc.eng.Name(), err)
		}
		d := tc.eng.Diagnose(t.Context(), tools)
		if d.Version != tc.env.Pin.Version || !d.VersionTested() {
			t.Errorf("%s: doctor read version %q (%s), tested %v; want the pinned %s", tc.eng.Name(), d.Version, d.VersionUnknown, d.Tested, tc.env.Pin.Version)
		}
		folders := 0
		for _, w := range d.Weights {
			switch {
			case slices.Equal(w.Models, []string{"esmc-300m"}):
				folders++
				if w.Path != folder || w.State != engine.WeightsPresent {
					t.Errorf("esmc-300m's folder: %+v; want %s present", w, folder)
				}
			case slices.Equal(w.Models, []string{"saprot-650m"}):
				folders++
				if w.State != engine.WeightsMissing || w.Note != "no config.json in it" {
					t.Errorf("an empty folder for saprot-650m: %+v; want missing, saying why", w)
				}
			}
		}
		if folders != 1 {
			t.Errorf("%s: doctor reported %d of its model's folders; want 1 (%+v)", tc.eng.Name(), folders, d.Weights)
		}
	}
	var repos map[string]string
	esm.RunJSON(t, &repos, pydrivertest.Upstream("constants.py"))
	eng := ESM()
	for id, repo := range repos {
		m, ok := eng.model(strings.TrimSuffix(id, " backbone"))
		switch {
		case !ok:
			t.Errorf("esm names %s, which the engine does not have", id)
		case strings.HasSuffix(id, " backbone"):
			if b, _ := eng.model(m.backbone); b.name != repo {
				t.Errorf("ESMFold2's backbone is %s in esm %s; the engine's %s loads %s", repo, pins.For("esm").Version, m.backbone, b.name)
			}
		case m.name != repo || !slices.Contains(m.repos, repo):
			t.Errorf("%s is %s in esm %s; the engine loads %s and doctor looks for %v", id, repo, pins.For("esm").Version, m.name, m.repos)
		}
	}
}

// TestUpstreamTheStandInsTakeWhatTheRealPackagesTake holds the stand-in packages of the
// other tests to the pinned releases: every parameter of everything the driver calls in a
// stand-in is one the real package takes, of the same kind (or the real one takes any
// keyword), so that a test on the stand-ins cannot pass a call the real package refuses.
func TestUpstreamTheStandInsTakeWhatTheRealPackagesTake(t *testing.T) {
	type param struct{ Name, Kind string }
	for _, tool := range []string{"esm", "transformers"} {
		env := realtools.Require(t, tool)
		var real, standIn map[string][]param
		env.RunJSON(t, &real, pydrivertest.Upstream("signatures.py"), tool)
		out, err := exec.Command(pydrivertest.Interpreter(t, t.TempDir()), pydrivertest.Upstream("signatures.py"), tool).Output()
		if err != nil {
			t.Fatalf("the stand-in %s: %v", tool, err)
		}
		if err := json.Unmarshal(out, &standIn); err != nil {
			t.Fatal(err)
		}
		for name, params := range standIn {
			anyKeyword := slices.ContainsFunc(real[name], func(p param) bool { return p.Kind == "VAR_KEYWORD" })
			for _, p := range params {
				if p.Kind == "VAR_KEYWORD" || p.Kind == "VAR_POSITIONAL" {
					continue
				}
				i := slices.IndexFunc(real[name], func(r param) bool { return r.Name == p.Name })
				switch {
				case i >= 0 && real[name][i].Kind == p.Kind:
				case i < 0 && anyKeyword && p.Kind != "POSITIONAL_ONLY":
				default:
					t.Errorf("%s %s: the stand-in takes %s (%s); the real one takes %v", tool, name, p.Name, p.Kind, real[name])
				}
			}
		}
	}
}

// TestUpstreamAWarmSessionOfTheRealPackage: one driver of the real esm serves many jobs,
// loading each model once; a load that runs out of memory frees the least recently used
// model and succeeds; a folder that holds a model of another width fails its job in words
// and the driver lives on; and a crash of the interpreter mid-job fails the job with
// Python's traceback in its log.
func TestUpstreamAWarmSessionOfTheRealPackage(t *testing.T) {
	env := realtools.Require(t, "esm")
	realtools.Isolate(t)
	t.Setenv("HF_HUB_OFFLINE", "1")
	tools := engine.Tools{"esm": env.Python(),
		"esmc-6b":   pydrivertest.TinyModel(t, env, "esmc", pydrivertest.ESMC6B),
		"esmc-300m": pydrivertest.TinyModel(t, env, "esmc", pydrivertest.ESMC300M),
		"esmc-600m": pydrivertest.TinyModel(t, env, "esmc", pydrivertest.ESMC600M),
	}
	sess, supervisor := upstreamSession(t, ESM(), tools)
	python := child(t, supervisor.Pid())
	embed := func(model string, report func(job.Progress), seqs ...string) (*log, error) {
		log := newLog("")
		run := upstreamRun(t, embedJob(model, nil, seqs...), log, tools)
		if report != nil {
			run.Report = report
		}
		_, err := sess.Run(t.Context(), run)
		return log, err
	}
	for i, model := range []string{"esmc-6b", "esmc-300m", "esmc-6b", "esmc-300m"} {
		if log, err := embed(model, nil, "MKTAYIAKQR", "MKV"); err != nil {
			t.Fatalf("job %d (%s): %v\n%s", i+1, model, err, log)
		}
	}
	if n := sess.loadCount(); n != 2 {
		t.Errorf("four jobs of two models loaded %d times; want 2", n)
	}
	if got := sess.Loaded(); fmt.Sprint(got) != "[esmc-6b esmc-300m]" {
		t.Errorf("Loaded() = %v; want [esmc-6b esmc-300m], least recently used first", got)
	}

	// The driver's address space is capped 150 MB above what it holds now: esmc-600m (130
	// MB of weights, read through a mapping of its file) cannot load beside the others, and
	// can once the least recently used, esmc-6b (320 MB), is freed.
	var unlimited unix.Rlimit
	if err := unix.Prlimit(python, unix.RLIMIT_AS, nil, &unlimited); err != nil {
		t.Fatal(err)
	}
	capped := unix.Rlimit{Cur: vmSize(t, python), Max: unlimited.Max}
	if err := unix.Prlimit(python, unix.RLIMIT_AS, &capped, nil); err != nil {
		t.Fatal(err)
	}
	log, err := embed("esmc-600m", nil, "MKTAYIAKQR")
	if err != nil {
		t.Fatalf("a job of esmc-600m under the cap: %v\n%s", err, log)
	}
	if !strings.Contains(log.String(), "out of memory loading esmc-600m; freeing esmc-6b") {
		t.Errorf("the load did not run out of memory and free esmc-6b:\n%s", log)
	}
	if got := sess.Loaded(); fmt.Sprint(got) != "[esmc-300m esmc-600m]" {
		t.Errorf("after the load Loaded() = %v; want [esmc-300m esmc-600m]", got)
	}
	if err := unix.Prlimit(python, unix.RLIMIT_AS, &unlimited, nil); err != nil {
		t.Fatal(err)
	}

	// A folder with a model of another width: the job fails saying so; the driver goes on.
	narrow := pydrivertest.TinyModel(t, env, "esmc", pydrivertest.Shape{Width: 64, Heads: 4, Layers: 2})
	tools["esmc-6b"] = narrow
	_, err = embed("esmc-6b", nil, "MKV")
	if want := narrow + " holds a model of width 64, not esmc-6b's 2560"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a job on a folder of the wrong model: %v; want %q", err, want)
	}
	if log, err := embed("esmc-300m", nil, "MKV"); err != nil || sess.Err() != nil {
		t.Fatalf("the driver did not go on after a refused folder: %v %v\n%s", err, sess.Err(), log)
	}

	// A crash mid-job: the interpreter is sent SIGSEGV once the first of two passes is done,
	// while it runs the second (long sequences, the second within a second of work).
	log, err = embed("esmc-300m", func(p job.Progress) {
		if p.Done == 1 {
			syscall.Kill(python, syscall.SIGSEGV)
		}
	}, strings.Repeat("MKTAYIAKQR", 100), strings.Repeat("MKTAYIAKQR", 140))
	if err == nil || !strings.Contains(err.Error(), "killed by SIGSEGV") {
		t.Errorf("a job whose interpreter crashed: %v; want the crash", err)
	}
	for _, want := range []string{"Fatal Python error: Segmentation fault", "driver.py", "in hidden"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the crashed job's log lacks %q:\n%s", want, realtools.LastLines(log.String(), 30))
		}
	}
	if sess.Err() == nil {
		t.Error("the session takes jobs after its driver crashed")
	}
}

// child is the process a supervisor started (engine/proc runs each command under one).
func child(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	var kid int
	if _, scanErr := fmt.Sscan(string(b), &kid); err != nil || scanErr != nil {
		t.Fatalf("the supervisor %d has no child: %v %v", pid, err, scanErr)
	}
	return kid
}

// vmSize is a process's address space in bytes (VmSize of /proc/PID/status).
func vmSize(t *testing.T, pid int) uint64 {
	t.Helper()
	status, err := os.ReadFile(filepath.Join("/proc", fmt.Sprint(pid), "status"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if kb, ok := strings.CutPrefix(line, "VmSize:"); ok {
			var n uint64
			fmt.Sscanf(strings.TrimSpace(kb), "%d", &n)
			return n << 10
		}
	}
	t.Fatalf("no VmSize in /proc/%d/status", pid)
	return 0
}
