package boltzgen

// The real-package tier (internal/realtools): the pinned BoltzGen release's own code, on
// the CPU. BoltzGen 0.3.2 cannot design without CUDA (cli/boltzgen.py:921,942), so the tier
// runs what needs none: `boltzgen run --help` (the self-check), doctor's version, and
// `boltzgen check`, the real spec parser (data/parse/schema.py), on every input the engine
// writes.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/chaperone-bio/chaperone/catalog"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/boltzgen/boltzgentest"
	"github.com/chaperone-bio/chaperone/engine/pins"
	"github.com/chaperone-bio/chaperone/internal/realtools"
	"github.com/chaperone-bio/chaperone/job"
)

// realBoltzGen is the pinned release's environment; it skips the test outside the tier.
func realBoltzGen(t *testing.T) realtools.Env {
	t.Helper()
	return realtools.Require(t, "boltzgen")
}

// isolated is an environment for the real tool in which it can fetch nothing and leaves
// nothing behind: its home and caches in a temporary folder, Hugging Face offline.
func isolated(t *testing.T) []string {
	t.Helper()
	home := t.TempDir()
	return append(os.Environ(), "HOME="+home, "XDG_CACHE_HOME="+filepath.Join(home, "cache"), "HF_HOME="+filepath.Join(home, "hf"),
		"HF_HUB_OFFLINE=1", "MPLCONFIGDIR="+filepath.Join(home, "mpl"))
}

// realCommand runs a program of the environment, isolated, and returns its output.
func realCommand(t *testing.T, env realtools.Env, dir string, name string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(env.Bin(name), args...)
	cmd.Env, cmd.Dir = isolated(t), dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestUpstreamSelfCheckAndDoctor: the engine's self-check passes against the real
// `boltzgen run --help`, and doctor reports the pinned release as installed and tested.
func TestUpstreamSelfCheckAndDoctor(t *testing.T) {
	env := realBoltzGen(t)
	tools := engine.Tools{"boltzgen": env.Bin("boltzgen")}
	e := New(Config{Binders: catalog.Default().Binders(), GPU: true})
	if err := e.Check(context.Background(), tools); err != nil {
		t.Fatalf("self-check against the real boltzgen: %v", err)
	}
	t.Setenv("HF_HUB_CACHE", t.TempDir())
	d := e.Diagnose(context.Background(), tools)
	if d.Version != pins.For("boltzgen").Version || !d.VersionTested() {
		t.Errorf("doctor: version %q (%s), tested %v; want the pin %s as tested", d.Version, d.VersionUnknown, d.Tested, pins.For("boltzgen").Version)
	}
	// An empty cache: both the checkpoints and the molecules are missing.
	for _, w := range d.Weights {
		if w.State != engine.WeightsMissing {
			t.Errorf("doctor on an empty cache: %s is %s", w.Name, w.State)
		}
	}
	if len(d.Weights) != 2 {
		t.Errorf("doctor reports %d weights, want the model repo and the molecules: %+v", len(d.Weights), d.Weights)
	}
}

// TestUpstreamMolsAreWhereDoctorLooks: doctor looks for the molecules file where the real
// BoltzGen resolves its default --moldir, in an offline Hugging Face cache.
func TestUpstreamMolsAreWhereDoctorLooks(t *testing.T) {
	env := realBoltzGen(t)
	hub := t.TempDir()
	t.Setenv("HF_HUB_CACHE", hub)
	snapshot := filepath.Join(hub, "datasets--boltzgen--inference-data", "snapshots", "0000000000000000000000000000000000000000")
	if err := os.MkdirAll(snapshot, 0o755); err != nil {
		t.Fatal(err)
	}
	// huggingface_hub offline finds a file through refs/main and the snapshot it names.
	if err := os.MkdirAll(filepath.Join(hub, "datasets--boltzgen--inference-data", "refs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(hub, "datasets--boltzgen--inference-data", "refs", "main"), []byte(filepath.Base(snapshot)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(snapshot, "mols.zip"), []byte("placeholder"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := New(Config{}).Diagnose(context.Background(), engine.Tools{"boltzgen": env.Bin("boltzgen")})
	i := slices.IndexFunc(d.Weights, func(w engine.Weights) bool { return strings.Contains(w.Name, "inference-data") })
	if i < 0 || d.Weights[i].State != engine.WeightsPresent {
		t.Fatalf("doctor: the molecules are not present: %+v", d.Weights)
	}
	// BoltzGen's own resolution of its default moldir (cli/boltzgen.py:1360-1388), with the
	// same cache, reaches the same file.
	script := "import sys, argparse\nfrom boltzgen.cli.boltzgen import get_artifact_path, ARTIFACTS\n" +
		"a = argparse.Namespace(force_download=False, models_token=None, cache=None)\n" +
		"print(get_artifact_path(a, ARTIFACTS['moldir'][0], repo_type='dataset', verbose=False))\n"
	cmd := exec.Command(env.Python(), "-c", script)
	cmd.Env = append(isolated(t), "HF_HUB_CACHE="+hub)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("BoltzGen resolving its moldir: %v\n%s", err, out)
	}
	if got, want := strings.TrimSpace(lastLine(string(out))), filepath.Join(snapshot, "mols.zip"); got != want {
		t.Errorf("BoltzGen's moldir is %s, doctor checks %s", got, want)
	}
}

// TestUpstreamCannotRunWithoutCUDA proves on this CPU-only machine what the engine's check
// says: the real pipeline fails at its configuration, before any model, asking torch.cuda
// for the device (cli/boltzgen.py:921); and the engine of a worker without a GPU offers
// nothing, with that reason.
func TestUpstreamCannotRunWithoutCUDA(t *testing.T) {
	env := realBoltzGen(t)
	err := New(Config{Binders: catalog.Default().Binders()}).Check(context.Background(), engine.Tools{"boltzgen": env.Bin("boltzgen")})
	if engine.PublicReason(err) != NoGPU {
		t.Errorf("the engine without a GPU: Check = %v, want %q", err, NoGPU)
	}
	probe, perr := realCommand(t, env, t.TempDir(), "python", "-c", "import torch; print(torch.cuda.is_available())")
	if perr != nil || strings.TrimSpace(lastLine(probe)) != "False" {
		t.Skipf("this machine has CUDA (%v %s): the CPU failure cannot be shown here", perr, probe)
	}
	mols := sharedMols(t, env)
	work := t.TempDir()
	spec := filepath.Join(work, "spec.yaml")
	if err := os.WriteFile(spec, []byte("entities:\n  - protein: {id: B, sequence: 12..20}\n  - ligand: {id: L, ccd: SAH}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := realCommand(t, env, work, "boltzgen", "configure", spec, "--output", filepath.Join(work, "out"), "--moldir", mols,
		"--use_kernels", "false", "--devices", "1")
	if err == nil {
		t.Fatalf("boltzgen configure succeeded without CUDA:\n%s", out)
	}
	if !strings.Contains(out, "get_device_capability") || !strings.Contains(out, "cli/boltzgen.py\", line 921") {
		t.Errorf("boltzgen configure failed, but not at torch.cuda.get_device_capability (cli/boltzgen.py:921):\n%s", out)
	}
	t.Logf("BoltzGen without CUDA: %s", lastLine(out))
}

// TestUpstreamHelpListsEveryOptionOfTheStandIn: the stand-in accepts no option that the
// real `boltzgen run` lacks, so tests against it cannot pass a command line the real tool
// would refuse.
func TestUpstreamHelpListsEveryOptionOfTheStandIn(t *testing.T) {
	env := realBoltzGen(t)
	real, err := realCommand(t, env, t.TempDir(), "boltzgen", "run", "--help")
	if err != nil {
		t.Fatalf("boltzgen run --help: %v\n%s", err, real)
	}
	fake, err := exec.Command(standIn, "run", "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("the stand-in's run --help: %v\n%s", err, fake)
	}
	realOptions, fakeOptions := helpOptions(real), helpOptions(string(fake))
	if len(fakeOptions) == 0 {
		t.Fatalf("the stand-in's help lists no option:\n%s", fake)
	}
	for _, o := range fakeOptions {
		if !slices.Contains(realOptions, o) {
			t.Errorf("the stand-in accepts %s, which the real boltzgen run lacks", o)
		}
	}
	for _, o := range realOptions {
		if !slices.Contains(fakeOptions, o) {
			t.Errorf("the real boltzgen run has %s, which the stand-in refuses", o)
		}
	}
	// The real usage line's choices of --protocol are the catalog's BoltzGen protocols.
	for _, p := range catalog.Default().Protocols {
		if p.Model == "boltzgen" && !strings.Contains(real, p.ID) {
			t.Errorf("the real boltzgen run has no protocol %s", p.ID)
		}
	}
}

var helpOption = regexp.MustCompile(`(?m)^\s+(--[a-z_]+)`)

// helpOptions are the options an argparse help lists, each at the start of its line.
func helpOptions(help string) []string {
	var opts []string
	for _, m := range helpOption.FindAllStringSubmatch(help, -1) {
		if !slices.Contains(opts, m[1]) {
			opts = append(opts, m[1])
		}
	}
	slices.Sort(opts)
	return opts
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// Every test of the tier shares one molecules folder, built once (a few seconds of
// biotite and RDKit) and removed by TestMain.
var (
	molsOnce sync.Once
	molsDir  string
	molsErr  error
)

// sharedMols is a molecules folder in BoltzGen's format (testdata/mols.py) with its
// canonical residues, the codes our specs name and the residues of our test structures.
func sharedMols(t *testing.T, env realtools.Env) string {
	t.Helper()
	molsOnce.Do(func() {
		if molsDir, molsErr = os.MkdirTemp("", "boltzgen-mols-"); molsErr != nil {
			return
		}
		args := []string{mustAbs(t, filepath.Join("testdata", "mols.py")), filepath.Join(molsDir, "mols"),
			"SAH", "WHL", "UNK", "DA", "DC", "DG", "DT", "DN", "A", "C", "G", "U", "N"}
		for name, text := range map[string]string{"bio.cif": readRepoFile(t, "bio/testdata/structures/target.cif"),
			"bio.pdb": readRepoFile(t, "bio/testdata/structures/target.pdb"), "e2e.pdb": boltzgentest.DesignTarget(""), "engine.cif": targetCIF} {
			p := filepath.Join(molsDir, name)
			if molsErr = os.WriteFile(p, []byte(text), 0o644); molsErr != nil {
				return
			}
			args = append(args, p)
		}
		var out string
		if out, molsErr = realCommand(t, env, molsDir, "python", args...); molsErr != nil {
			molsErr = fmt.Errorf("building the molecules: %v\n%s", molsErr, out)
		}
	})
	if molsErr != nil {
		t.Fatal(molsErr)
	}
	return filepath.Join(molsDir, "mols")
}

func removeSharedMols() {
	if molsDir != "" {
		os.RemoveAll(molsDir)
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// writeInputs has the engine write a job's inputs as it would for a run, in work/inputs,
// and returns the spec's path.
func writeInputs(t *testing.T, j *job.Job, work string) string {
	t.Helper()
	steps, err := newEngine().plan(&engine.Run{Job: j, WorkDir: work, Log: io.Discard, Report: func(job.Progress) {}}, work)
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	d := steps.(*design)
	if err := d.WriteInputs(); err != nil {
		t.Fatalf("WriteInputs: %v", err)
	}
	return d.specPath()
}

// checkBanner is the line `boltzgen check` prints before each spec (cli/boltzgen.py:1249).
var checkBanner = regexp.MustCompile(`\*+ Checking design spec: (.+?) \*+`)

// boltzgenCheck runs the real `boltzgen check` on the specs and returns, per spec, ""
// when BoltzGen accepted it (parsed it and wrote its <stem>.cif) or its error. check stops
// at the first spec it refuses, so it runs again on the specs after that one.
func boltzgenCheck(t *testing.T, env realtools.Env, mols string, specs []string) map[string]string {
	t.Helper()
	results := map[string]string{}
	out := t.TempDir()
	for rest := specs; len(rest) > 0; {
		args := append(append([]string{"check"}, rest...), "--moldir", mols, "--output", out)
		text, err := realCommand(t, env, t.TempDir(), "boltzgen", args...)
		last := ""
		sc := bufio.NewScanner(strings.NewReader(text))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if m := checkBanner.FindStringSubmatch(sc.Text()); m != nil {
				last = m[1]
			}
		}
		for _, s := range rest {
			if _, err := os.Stat(filepath.Join(out, strings.TrimSuffix(filepath.Base(s), ".yaml")+".cif")); err == nil {
				results[s] = ""
			}
		}
		if err == nil {
			break
		}
		i := slices.Index(rest, last)
		if i < 0 {
			t.Fatalf("boltzgen check failed before any spec: %v\n%s", err, text)
		}
		results[last] = lastLine(text)
		rest = rest[i+1:]
	}
	for _, s := range specs {
		if _, ok := results[s]; !ok {
			results[s] = "boltzgen check wrote no structure for it"
		}
	}
	return results
}

// boltzgenRefusals runs BoltzGen's spec check on specs it must refuse (testdata/check.py,
// which goes on past a refusal) and returns, per spec, its error, or "" when it accepted it.
func boltzgenRefusals(t *testing.T, env realtools.Env, mols string, specs []string) map[string]string {
	t.Helper()
	args := append([]string{mustAbs(t, filepath.Join("testdata", "check.py")), mols, t.TempDir()}, specs...)
	out, err := realCommand(t, env, t.TempDir(), "python", args...)
	if err != nil {
		t.Fatalf("testdata/check.py: %v\n%s", err, out)
	}
	results := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		for _, s := range specs {
			switch {
			case line == "ok "+s:
				results[s] = ""
			case strings.HasPrefix(line, "refused "+s+": "):
				results[s] = strings.TrimPrefix(line, "refused "+s+": ")
			}
		}
	}
	for _, s := range specs {
		if _, ok := results[s]; !ok {
			t.Fatalf("testdata/check.py said nothing of %s:\n%s", s, out)
		}
	}
	return results
}
