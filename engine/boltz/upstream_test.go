package boltz

// The real-package tier (internal/realtools): the engine against the pinned Boltz itself,
// on the CPU, with a cache that boltztest.Cache builds (no weights are downloaded). These
// tests set environment variables for the tool, so none of them is parallel.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/chaperone-bio/chaperone/catalog"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/boltz/boltztest"
	"github.com/chaperone-bio/chaperone/internal/enginerun"
	"github.com/chaperone-bio/chaperone/internal/realtools"
	"github.com/chaperone-bio/chaperone/job"
)

// TestUpstreamCheckAndDoctor: the self-check passes on the real command line, and doctor
// reports the pinned version and Boltz's cache as download_boltz2 (main.py:198-258) needs
// it: an unpacked mols/ without mols.tar is not enough, since boltz predict downloads the
// tar all the same before every run.
func TestUpstreamCheckAndDoctor(t *testing.T) {
	env := realtools.Require(t, "boltz")
	cache := boltztest.Cache(t, env, false)
	boltztest.Isolate(t, cache)
	tools := engine.Tools{"boltz": env.Bin("boltz")}
	e := New(Config{})
	if err := e.Check(context.Background(), tools); err != nil {
		t.Fatalf("self-check with %s: %v", env.Bin("boltz"), err)
	}
	d := e.Diagnose(context.Background(), tools)
	if d.Tool != env.Bin("boltz") || d.Version != env.Pin.Version || !slices.Contains(d.Tested, d.Version) {
		t.Errorf("doctor found %q version %q (%s), tested %v; want %s %s", d.Tool, d.Version, d.VersionUnknown, d.Tested, env.Bin("boltz"), env.Pin.Version)
	}
	states := func() map[string]engine.WeightsState {
		m := map[string]engine.WeightsState{}
		for _, w := range e.Diagnose(context.Background(), tools).Weights {
			m[filepath.Base(w.Path)] = w.State
		}
		return m
	}
	all := map[string]engine.WeightsState{"boltz2_conf.ckpt": engine.WeightsPresent, "boltz2_aff.ckpt": engine.WeightsPresent,
		"mols.tar": engine.WeightsPresent}
	if got := states(); !mapsEqual(got, all) {
		t.Errorf("weights %v, want %v", got, all)
	}
	if err := os.Remove(filepath.Join(cache, "mols.tar")); err != nil {
		t.Fatal(err)
	}
	all["mols.tar"] = engine.WeightsMissing
	if got := states(); !mapsEqual(got, all) {
		t.Errorf("with mols/ but no mols.tar, weights %v, want %v", got, all)
	}
}

func mapsEqual(a, b map[string]engine.WeightsState) bool {
	return fmt.Sprint(a) == fmt.Sprint(b)
}

// TestUpstreamStandInOptions: the stand-in accepts exactly the options of the real
// `boltz predict`, so a test passing on the stand-in cannot pass an option Boltz refuses.
func TestUpstreamStandInOptions(t *testing.T) {
	env := realtools.Require(t, "boltz")
	boltztest.Isolate(t, t.TempDir())
	option := regexp.MustCompile(`(?m)^\s+(--[A-Za-z0-9_-]+)`)
	options := func(path string) []string {
		out, err := exec.Command(path, "predict", "--help").CombinedOutput()
		if err != nil {
			t.Fatalf("%s predict --help: %v\n%s", path, err, out)
		}
		var opts []string
		for _, m := range option.FindAllStringSubmatch(string(out), -1) {
			opts = append(opts, m[1])
		}
		slices.Sort(opts)
		return slices.Compact(opts) // the help text names some options again

	}
	real, stand := options(env.Bin("boltz")), options(standIn)
	if !slices.Equal(real, stand) {
		t.Errorf("options of boltz predict:\nreal     %v\nstand-in %v", real, stand)
	}
}

// corpus is every input of bio/testdata/inputs and of this engine's golden tests that the
// catalog accepts for boltz2, as the targets of one job, and the inputs it refuses (which
// never reach Boltz).
func corpus(t *testing.T) (targets []job.Target, refused []string) {
	t.Helper()
	var files []string
	for _, pattern := range []string{"../../bio/testdata/inputs/*", "testdata/yaml/*.in"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		set := "corpus"
		if strings.HasSuffix(f, ".in") {
			set = "engine"
		}
		name := set + "-" + strings.TrimSuffix(filepath.Base(f), filepath.Ext(f))
		if filepath.Ext(f) == ".fasta" { // beside a YAML of the same name
			name += "-fasta"
		}
		target := job.Target{Name: name, Content: string(b)}
		if _, err := catalog.Default().NewPredict(&catalog.PredictRequest{Model: "boltz2", Targets: []job.Target{target}}); err != nil {
			refused = append(refused, name)
			continue
		}
		targets = append(targets, target)
	}
	return targets, refused
}

// TestUpstreamInputsAccepted: Boltz's own reader processes every input the engine writes
// for the corpus (processed/records/<id>.json), with use_msa_server on and the alignments
// of the chains that need them searched ahead of the run, without calling a server and
// with every alignment's first row its chain's; with placeholder checkpoints: the run then
// fails loading the model, which these inputs do not need.
func TestUpstreamInputsAccepted(t *testing.T) {
	env := realtools.Require(t, "boltz")
	boltztest.Isolate(t, boltztest.Cache(t, env, false))
	targets, refused := corpus(t)
	body, err := json.Marshal(map[string]any{"model": "boltz2", "targets": targets, "params": map[string]any{"use_msa_server": true}})
	if err != nil {
		t.Fatal(err)
	}
	j := enginerun.PredictJob(t, string(body))
	r := enginerun.RunAligned(t, New(Config{}), j, engine.Tools{"boltz": env.Bin("boltz")}, stage(j))
	log := r.Log.String()
	records := filepath.Join(r.WorkDir, "out", "boltz_results_inputs", "processed", "records")
	processed := 0
	for _, tg := range targets {
		if _, err := os.Stat(filepath.Join(records, tg.Name+".json")); err != nil {
			t.Errorf("Boltz did not process %s: %v", tg.Name, err)
			continue
		}
		processed++
	}
	if strings.Contains(log, "Failed to process") || strings.Contains(log, "Downloading") || strings.Contains(log, "Calling MSA server") {
		t.Errorf("Boltz refused an input, wanted a download or searched:\n%s", log)
	}
	if len(j.Searches) == 0 || !strings.Contains(log, "searched by chaperone's alignment stage") {
		t.Errorf("no target of the corpus had alignments searched (%d searches):\n%s", len(j.Searches), log)
	}
	if !strings.Contains(log, fmt.Sprintf("Running structure prediction for %d inputs.", len(targets))) {
		t.Errorf("Boltz did not reach the prediction of every input:\n%s", log)
	}
	t.Logf("Boltz %s processed %d of %d inputs the engine wrote (refused at submit, never reaching Boltz: %v)",
		env.Pin.Version, processed, len(targets), refused)
}
