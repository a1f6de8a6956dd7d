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
	"github.com/chaperone-bio/chaperone/engine/boltz"
	"github.com/chaperone-bio/chaperone/engine/boltz/boltztest"
	"github.com/chaperone-bio/chaperone/internal/realtools"
	"github.com/chaperone-bio/chaperone/internal/testpython"
)

// TestUpstreamBoltzPrediction runs a boltz2 job end to end through the server over HTTP
// on the real, pinned Boltz: a Boltz-2 of random weights (boltztest.Cache) on the CPU. The
// job is created, runs and succeeds; its row carries Boltz's scores, every structure it
// returns reads in gemmi, and Boltz's arrays, which the job did not ask for (write_pae),
// stay out. The worker passes its environment to boltz, so the test sets BOLTZ_CACHE
// there and is not parallel.
func TestUpstreamBoltzPrediction(t *testing.T) {
	env := realtools.Require(t, "boltz")
	python := testpython.Require(t, "gemmi")
	boltztest.Isolate(t, boltztest.Cache(t, env, true))
	started := time.Now()
	s := startServer(t, func(c *app.Config) {
		c.Engines = []engine.Engine{boltz.New(boltz.Config{})}
		c.Tools = engine.Tools{"boltz": env.Bin("boltz")}
	})
	id := s.create("/v1/predictions", map[string]any{"sequence": "MKTAYIAKQRQI", "params": map[string]any{
		"use_msa_server": false, "recycling_steps": 1, "sampling_steps": 10, "diffusion_samples": 2}})
	// Generous bounds: the whole tier shares the machine's two cores.
	j := s.waitFor(id, 10*time.Minute, func(j map[string]any) bool { return j["status"] != "queued" })
	mustf(t, j["status"] == "running", "the job left the queue as %v", j)
	j = s.waitFor(id, 10*time.Minute, func(j map[string]any) bool { return j["status"] != "running" })
	mustf(t, j["status"] == "succeeded", "job %v\nlog:\n%s", j, s.get("/v1/jobs/"+id+"/logs").Body)
	t.Logf("boltz2 on the real Boltz %s through the server: %.0f s from start to succeeded", env.Pin.Version, time.Since(started).Seconds())

	rows, arts := s.rowsOf(id)
	row := rows["target_1"]
	mustf(t, row["status"] == "ok" && row["samples"] == 2.0 && row["n_residues"] == 12.0, "row %v", row)
	for _, k := range []string{"plddt", "ptm", "confidence_score", "complex_plddt", "complex_iplddt", "complex_pde", "complex_ipde"} {
		_, ok := row[k].(float64)
		mustf(t, ok, "the row lacks Boltz's %s: %v", k, row)
	}
	structures := 0
	dir := t.TempDir()
	for _, a := range arts {
		a := a.(map[string]any)
		path := a["path"].(string)
		mustf(t, !strings.HasSuffix(path, ".npz"), "write_pae was not asked for, yet the job has %s", path)
		if a["type"] != "structure" {
			continue
		}
		structures++
		file := filepath.Join(dir, path)
		if err := os.WriteFile(file, s.get(a["url"].(string)).expect(http.StatusOK).Body, 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(python, "-c", "import gemmi, sys; st = gemmi.read_structure(sys.argv[1]); "+
			"print(len(st), sum(1 for _ in st[0].all()))", file).CombinedOutput()
		mustf(t, err == nil && !strings.HasPrefix(string(out), "0 "), "gemmi read %s as %s (%v)", path, out, err)
	}
	mustf(t, structures == 2, "%d structures, want the best and one more sample: %v", structures, arts)
}
