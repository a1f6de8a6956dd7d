package e2e

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/app"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/protenix"
	"github.com/chaperone-bio/chaperone/internal/realtools"
	"github.com/chaperone-bio/chaperone/internal/testpython"
)

// protenixTierScripts are the protenix engine's scripts of the real-package tier.
var protenixTierScripts = filepath.Join("..", "engine", "protenix", "testdata", "upstream")

// TestUpstreamProtenixEndToEnd runs a prediction through the server over HTTP with the real
// `protenix pred` of the pinned release on the CPU: protenix-v2 built from Protenix's own
// configs with random weights (testdata/upstream/checkpoint.py, 1.9 GB, loaded strictly),
// the CCD of the standard residues (ccd.py), and nothing downloaded. The job must succeed
// with the tool's scores in its row, and every structure it returns must parse in gemmi.
func TestUpstreamProtenixEndToEnd(t *testing.T) {
	env := realtools.Require(t, "protenix")
	python := testpython.Require(t, "gemmi")
	home := realtools.Isolate(t)
	root := filepath.Join(home, "protenix")
	t.Setenv("PROTENIX_ROOT_DIR", root)
	// The CCD and the checkpoint take minutes to build and never change while the pin and
	// our scripts do not: they are made once and linked into this run's root.
	start := time.Now()
	scripts := []string{filepath.Join(protenixTierScripts, "ccd.py"), filepath.Join(protenixTierScripts, "checkpoint.py")}
	built := env.Fixture(t, "protenix-v2-root", scripts, func(dir string) {
		layernorm := []string{"LAYERNORM_TYPE=torch"}
		env.Run(t, layernorm, scripts[0], filepath.Join(dir, "common"))
		if err := os.MkdirAll(filepath.Join(dir, "checkpoint"), 0o755); err != nil {
			t.Fatal(err)
		}
		env.Run(t, layernorm, scripts[1], filepath.Join(dir, "checkpoint", "protenix-v2.pt"))
	})
	for _, sub := range []string{"common", "checkpoint"} {
		if err := os.MkdirAll(filepath.Join(root, sub), 0o755); err != nil {
			t.Fatal(err)
		}
		files, err := os.ReadDir(filepath.Join(built, sub))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if err := os.Symlink(filepath.Join(built, sub, f.Name()), filepath.Join(root, sub, f.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Logf("random protenix-v2 checkpoint and CCD ready in %s", time.Since(start).Round(time.Second))

	s := startServer(t, func(c *app.Config) {
		// Nothing is searched (msa: empty); a search would fail at once.
		c.Engines = []engine.Engine{protenix.New(protenix.Config{})}
		c.Tools = engine.Tools{"protenix": env.Bin("protenix")}
	})
	start = time.Now()
	input := "sequences:\n  - protein:\n      id: A\n      sequence: MKTAYIAKQRQ\n      msa: empty\n"
	id := s.create("/v1/predictions", map[string]any{"model": "protenix-v2", "name": "tiny", "input": input,
		"params": map[string]any{"recycling_steps": 1, "sampling_steps": 2, "diffusion_samples": 1}})
	statuses := map[string]bool{}
	j := s.waitFor(id, 15*time.Minute, func(j map[string]any) bool {
		statuses[j["status"].(string)] = true
		return j["status"] == "succeeded" || j["status"] == "failed"
	})
	logs := string(s.get("/v1/jobs/" + id + "/logs").expect(http.StatusOK).Body)
	mustf(t, j["status"] == "succeeded", "job %v\nlog:\n%s", j, realtools.LastLines(logs, 40))
	mustf(t, statuses["running"], "the job was never seen running: %v", statuses)
	t.Logf("the job ran in %s", time.Since(start).Round(time.Second))

	rows, arts := s.rowsOf(id)
	mustf(t, len(rows) == 1, "rows %v", rows)
	for _, row := range rows {
		plddt, _ := row["plddt"].(float64)
		_, ranked := row["confidence_score"].(float64)
		mustf(t, row["status"] == "ok" && row["n_residues"] == 11.0 && row["samples"] == 1.0 && plddt > 0 && plddt <= 1 && ranked,
			"row %v", row)
	}
	structures := 0
	for _, a := range arts {
		a := a.(map[string]any)
		path := filepath.Join(t.TempDir(), filepath.Base(a["path"].(string)))
		body := s.get(a["url"].(string)).expect(http.StatusOK).Body
		if err := os.WriteFile(path, body, 0o644); err != nil {
			t.Fatal(err)
		}
		if a["type"] != "structure" {
			continue
		}
		structures++
		out, err := exec.Command(python, "-c", gemmiChains, path).CombinedOutput()
		mustf(t, err == nil && strings.TrimSpace(string(out)) == "A 11", "gemmi read %s: %v %s", a["path"], err, out)
	}
	mustf(t, structures > 0, "no structure among the artifacts %v", arts)
}

// gemmiChains prints the chains of a structure file and their residues, as gemmi reads it.
const gemmiChains = `
import sys, gemmi
st = gemmi.read_structure(sys.argv[1])
assert st[0].count_atom_sites() > 0
print(" ".join(f"{ch.name} {len(ch)}" for ch in st[0]))
`
