package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/app"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/rfd3"
	"github.com/chaperone-bio/chaperone/engine/rfd3/rfd3test"
	"github.com/chaperone-bio/chaperone/internal/enginerun"

	"github.com/chaperone-bio/chaperone/internal/testpython"
)

// The real-package tier for rfd3 (make realtools): rc-foundry's own code reads what the
// engine writes for this package's design requests, and designs through the server with a
// checkpoint of random weights built from rfd3's own config.

// rfd3Requests are the rfd3 requests of this package's design tests.
func rfd3Requests() map[string]map[string]any {
	reqs := map[string]map[string]any{
		"clamped binder":   {"protocol": "rfd3-binder", "structure": designTarget(""), "contig": "30,/0,A1-20"},
		"clamped scaffold": {"protocol": "rfd3-scaffold", "structure": designTarget(""), "contig": "A1-10,20"},
		"seeded binder":    {"protocol": "rfd3-binder", "structure": designTarget(""), "contig": "20-40,/0,A1-30"},
	}
	for protocol, body := range designRequests() {
		if strings.HasPrefix(protocol, "rfd3-") {
			reqs[protocol] = map[string]any{"protocol": protocol, "structure": body["structure"], "contig": body["contig"]}
		}
	}
	return reqs
}

// TestUpstreamRFD3AcceptsTheDesignTestsInputs runs the rfd3 engine on each request with
// the stand-in as its tool, in work folders the test keeps, and has rfd3 read what the
// engine wrote as `rfd3 design inputs=spec.json prevalidate_inputs=True` does.
func TestUpstreamRFD3AcceptsTheDesignTestsInputs(t *testing.T) {
	env, _ := rfd3test.Upstream(t)
	tools := designTools(t)
	var dirs []string
	names := map[string]string{}
	for name, body := range rfd3Requests() {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		j := enginerun.DesignJob(t, string(b))
		work := t.TempDir()
		r := &enginerun.Result{WorkDir: work}
		if _, err := rfd3.New().Run(context.Background(), &engine.Run{Job: j, WorkDir: work, Tools: tools, Log: &r.Log, Report: r.Report, Exec: r.Exec(work)}); err != nil {
			t.Fatalf("%s: %v\n%s", name, err, r.Log.String())
		}
		dirs, names[work] = append(dirs, work), fmt.Sprintf("%s (%s)", name, body["contig"])
	}
	var results []struct {
		Dir      string   `json:"dir"`
		Examples []string `json:"examples"`
		Error    string   `json:"error"`
	}
	rfd3test.Script(t, env, &results, append([]string{"validate"}, dirs...)...)
	accepted := 0
	for _, r := range results {
		if r.Error != "" || len(r.Examples) != 1 {
			t.Errorf("%s: rfd3 refuses the engine's inputs: %s", names[r.Dir], r.Error)
			continue
		}
		accepted++
	}
	t.Logf("rfd3 accepted %d of %d inputs", accepted, len(dirs))
	mustf(t, len(results) == len(dirs), "%d results for %d folders", len(results), len(dirs))
}

// TestUpstreamRFD3DesignsThroughTheServer runs a design job through the server over HTTP on
// the real rfd3 with a small checkpoint of random weights where foundry looks for it, in a
// data folder whose name has ",", "=" and spaces, reads every artifact with gemmi, and
// checks the stand-in serves the same layout.
func TestUpstreamRFD3DesignsThroughTheServer(t *testing.T) {
	env, home := rfd3test.Upstream(t)
	python := testpython.Require(t, "gemmi")
	ckpts := filepath.Join(home, "checkpoints")
	if err := os.MkdirAll(ckpts, 0o755); err != nil {
		t.Fatal(err)
	}
	var made struct{ Parameters int }
	rfd3test.Script(t, env, &made, "make-checkpoint", filepath.Join(ckpts, "rfd3_latest.ckpt"))
	t.Logf("checkpoint of %d random parameters", made.Parameters)
	t.Setenv("FOUNDRY_CHECKPOINT_DIRS", ckpts)

	request := map[string]any{"protocol": "rfd3-binder", "structure": designTarget(""), "contig": "20-30,/0,A1-30",
		"params": map[string]any{"num_designs": 2, "num_timesteps": 4, "seed": 5}}
	// The work folders are under the data folder, whose name Hydra's override grammar would
	// misread (a comma makes a sweep, "=" does not parse) if the engine named paths in it.
	real := startServer(t, func(c *app.Config) {
		c.Engines, c.Tools = []engine.Engine{rfd3.New()}, engine.Tools{"rfd3": env.Bin("rfd3")}
		c.DataDir = filepath.Join(t.TempDir(), "data a,b=c d")
	})
	started := time.Now()
	id := real.create("/v1/designs", request)
	statuses := []string{}
	j := real.waitFor(id, 10*time.Minute, func(j map[string]any) bool {
		if s := j["status"].(string); len(statuses) == 0 || statuses[len(statuses)-1] != s {
			statuses = append(statuses, s)
		}
		return j["status"] != "queued" && j["status"] != "running"
	})
	t.Logf("the design ran in %s; statuses %v", time.Since(started).Round(time.Second), statuses)
	mustf(t, j["status"] == "succeeded", "job %v", j)
	mustf(t, slices.Contains(statuses, "running"), "statuses %v never showed running", statuses)
	res := real.get("/v1/jobs/" + id + "/results").expect(http.StatusOK).json()
	// The lines the engine's progress follows (rfd3/engine.py:136), one per design; no
	// diffusion step is logged outside low-memory mode.
	log := string(real.get("/v1/jobs/" + id + "/logs").expect(http.StatusOK).Body)
	for m := range 2 {
		want := fmt.Sprintf("Outputs for spec_design_0_model_%d written to ", m)
		mustf(t, strings.Contains(log, want), "the run log lacks %q:\n%s", want, log)
	}
	mustf(t, !strings.Contains(log, "[chunked] step"), "the run logged diffusion steps:\n%s", log)

	// Every artifact, parsed by gemmi (structures) and Python's json (metrics).
	dir := t.TempDir()
	var files []string
	for _, a := range res["artifacts"].([]any) {
		a := a.(map[string]any)
		p := filepath.Join(dir, strings.ReplaceAll(a["path"].(string), "/", "_"))
		if err := os.WriteFile(p, real.get(a["url"].(string)).expect(http.StatusOK).Body, 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	out, err := exec.Command(python, "-c", gemmiReader, strings.Join(files, "\n")).CombinedOutput()
	if err != nil {
		t.Fatalf("gemmi: %v\n%s", err, out)
	}
	var parsed map[string]struct {
		Chains  map[string]int `json:"chains"`
		Metrics map[string]any `json:"metrics"`
	}
	if err := json.Unmarshal(out, &parsed); err != nil {
		t.Fatalf("gemmi's reading %q: %v", out, err)
	}
	designs := res["designs"].([]any)
	mustf(t, len(designs) == 2 && len(parsed) == 4, "%d designs, %d artifacts parsed: %v", len(designs), len(parsed), parsed)
	for _, d := range designs {
		d := d.(map[string]any)
		cif := parsed[filepath.Join(dir, strings.ReplaceAll(d["file"].(string), "/", "_"))]
		seq := d["sequence"].(string)
		// Chain A is designed (20-30 residues), chain B the kept A1-30 of the target.
		mustf(t, len(seq) >= 20 && len(seq) <= 30 && cif.Chains["A"] == len(seq) && cif.Chains["B"] == 30,
			"design %s: sequence %q, chains %v", d["id"], seq, cif.Chains)
		meta := parsed[filepath.Join(dir, "designs_"+d["id"].(string)+".json")]
		mustf(t, reflect.DeepEqual(d["metrics"], meta.Metrics) && meta.Metrics["num_residues"] == float64(len(seq)+30),
			"design %s: metrics %v, the JSON's %v", d["id"], d["metrics"], meta.Metrics)
	}

	// The stand-in serves the same artifacts, and its metrics are rfd3's keys.
	standIn := startServer(t, withDesignEngines(t))
	sid := standIn.create("/v1/designs", request)
	standIn.waitFor(sid, time.Minute, func(j map[string]any) bool { return j["status"] == "succeeded" })
	sres := standIn.get("/v1/jobs/" + sid + "/results").expect(http.StatusOK).json()
	mustf(t, reflect.DeepEqual(artifactLayout(sres), artifactLayout(res)), "the stand-in's artifacts %v, the real rfd3's %v", artifactLayout(sres), artifactLayout(res))
	realMetrics := designs[0].(map[string]any)["metrics"].(map[string]any)
	for k := range sres["designs"].([]any)[0].(map[string]any)["metrics"].(map[string]any) {
		mustf(t, realMetrics[k] != nil, "the stand-in's metric %s is not rfd3's (%v)", k, sortedKeys(realMetrics))
	}
}

// artifactLayout is each artifact's path and type.
func artifactLayout(res map[string]any) []string {
	var out []string
	for _, a := range res["artifacts"].([]any) {
		a := a.(map[string]any)
		out = append(out, a["path"].(string)+" "+a["type"].(string))
	}
	slices.Sort(out)
	return out
}

// gemmiReader reads each file of argv[1] (one a line): an mmCIF structure with gemmi (its
// residues per chain), a JSON document with json (its metrics).
const gemmiReader = `
import gemmi, json, sys
out = {}
for path in sys.argv[1].splitlines():
    if path.endswith(".json"):
        out[path] = {"metrics": json.load(open(path))["metrics"]}
    else:
        s = gemmi.read_structure(path)
        out[path] = {"chains": {c.name: len(c) for c in s[0]}}
print(json.dumps(out))
`
