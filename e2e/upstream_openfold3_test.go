package e2e

import (
	"context"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/app"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/openfold3"
	"github.com/chaperone-bio/chaperone/engine/openfold3/openfold3test"
	"github.com/chaperone-bio/chaperone/internal/realtools"
)

// TestUpstreamOpenFold3 runs an openfold3 job over HTTP on the real run_openfold of the pin,
// with OpenFold3's own full-size model at random weights on the CPU, and then the same job
// on the stand-in: the real run must succeed with OpenFold3's scores and structures gemmi
// reads, and every file the stand-in writes must be where the real tool writes it.
//
// The worker's $OPENFOLD_CACHE holds a runner.yml that run_openfold merges under the
// engine's runner YAML (run_openfold.py:209-221): it switches off the full confidence files
// and asks for a dtype OpenFold3 refuses (validator.py:165), so the job succeeds with its
// confidences artifact only because the engine keeps that file out of the run.
//
// gemmi is the tier environment's (tier_packages of the pin): Debian's gemmi 0.5.7 builds no
// model from OpenFold3's mmCIF, which has no _atom_site.occupancy (biotite's writer).
func TestUpstreamOpenFold3(t *testing.T) {
	// Not parallel: it sets HOME, OMP_NUM_THREADS and OPENFOLD_CACHE for the tool.
	env := realtools.Require(t, "run_openfold")
	dir := realtools.Isolate(t)
	// One thread for torch: on a machine whose cores are busy with other tests, OpenMP's
	// threads spin waiting for each other, and the prediction step that takes 4 s on an
	// idle 2-core machine took over 100.
	t.Setenv("OMP_NUM_THREADS", "1")
	cache := filepath.Join(dir, "openfold_cache")
	t.Setenv("OPENFOLD_CACHE", cache)
	if err := os.MkdirAll(cache, 0o755); err != nil {
		t.Fatal(err)
	}
	hostile := "output_writer_settings:\n  write_full_confidence_scores: false\n  full_confidence_output_dtype: float64\n"
	if err := os.WriteFile(filepath.Join(cache, "runner.yml"), []byte(hostile), 0o644); err != nil {
		t.Fatal(err)
	}

	started := time.Now()
	ckpt := filepath.Join(dir, "random.pt")
	script := filepath.Join("..", "engine", "openfold3", "testdata", "random_checkpoint.py")
	if out, err := exec.Command(env.Python(), script, ckpt).CombinedOutput(); err != nil {
		t.Fatalf("building OpenFold3's model at random weights: %v\n%s", err, out)
	}
	t.Logf("random checkpoint: %s", time.Since(started).Round(time.Second))

	const seq = "MKTAYIAKQRQI"
	req := map[string]any{"model": "openfold3", "sequence": seq,
		"params": map[string]any{"use_msa_server": false, "recycling_steps": 1, "sampling_steps": 10}}
	real := &listingEngine{Engine: openfold3.New(openfold3.Config{})}
	s := startServer(t, withListingEngine(real, env.Bin("run_openfold"), ckpt))
	id := s.create("/v1/predictions", req)
	s.waitFor(id, 10*time.Minute, func(j map[string]any) bool { return j["status"] != "queued" })
	running := time.Now()
	j := s.waitFor(id, 15*time.Minute, func(j map[string]any) bool { return j["status"] != "queued" && j["status"] != "running" })
	t.Logf("job: %s running, %s since the test started", time.Since(running).Round(time.Second), time.Since(started).Round(time.Second))
	if j["status"] != "succeeded" {
		t.Fatalf("job %v\n%s", j, s.get("/v1/jobs/"+id+"/logs").expect(http.StatusOK).Body)
	}

	rows, arts := s.rowsOf(id)
	row := rows["target_1"]
	plddt, _ := row["plddt"].(float64)
	mustf(t, row["status"] == "ok" && row["n_residues"] == float64(len(seq)) && row["samples"] == 1.0 && row["msa"] == false, "row %v", row)
	mustf(t, plddt > 0 && plddt <= 1 && row["ptm"] != nil && row["confidence_score"] != nil, "OpenFold3's scores missing from row %v", row)
	byPath := artifactsByPath(t, arts)
	agg := artifactJSON(t, s, byPath["target_1/target_1_model_0_confidences_aggregated.json"])
	mustf(t, agg["avg_plddt"].(float64)/100 == plddt && agg["sample_ranking_score"] == row["confidence_score"], "row %v, file %v", row, agg)
	mustf(t, byPath["target_1/target_1_model_0_confidences.json"] != nil,
		"no full confidences: the runner.yml in $OPENFOLD_CACHE reached the run (artifacts %v)", sortedPaths(byPath))
	structures := 0
	for path, a := range byPath {
		if a["type"] != "structure" {
			continue
		}
		structures++
		file := filepath.Join(dir, filepath.Base(path))
		if err := os.WriteFile(file, s.get(a["url"].(string)).expect(http.StatusOK).Body, 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(env.Python(), "-c", gemmiCount, file).CombinedOutput()
		mustf(t, err == nil && strings.TrimSpace(string(out)) == "chains A residues 12", "gemmi on %s: %v %s", path, err, out)
	}
	mustf(t, structures == 1, "%d structures in %v", structures, sortedPaths(byPath))

	// The same job on the stand-in: what it writes, the real tool writes too.
	standInDir := t.TempDir()
	tool, err := openfold3test.Build(standInDir)
	if err != nil {
		t.Fatal(err)
	}
	fake := &listingEngine{Engine: openfold3.New(openfold3.Config{})}
	ss := startServer(t, withListingEngine(fake, tool, ckpt))
	sid := ss.create("/v1/predictions", req)
	ss.waitFor(sid, time.Minute, func(j map[string]any) bool { return j["status"] == "succeeded" })
	_, fakeArts := ss.rowsOf(sid)
	fakeAgg := artifactJSON(t, ss, artifactsByPath(t, fakeArts)["target_1/target_1_model_0_confidences_aggregated.json"])
	for k := range fakeAgg {
		mustf(t, agg[k] != nil, "the stand-in writes %s in the aggregated confidences, OpenFold3 does not: %v", k, agg)
	}
	mustf(t, len(fake.files) > 0, "the stand-in wrote nothing")
	for _, f := range fake.files {
		mustf(t, slices.Contains(real.files, f), "the stand-in writes out/%s, OpenFold3 does not; OpenFold3 writes %v", f, real.files)
	}
	t.Logf("OpenFold3 wrote %v; the stand-in %v", real.files, fake.files)
}

// gemmiCount prints the chains and residue count of the structure file it is given.
const gemmiCount = `import sys, gemmi
st = gemmi.read_structure(sys.argv[1])
model = st[0]
print("chains", ",".join(c.name for c in model), "residues", sum(len(c) for c in model))
`

// listingEngine is the openfold3 engine that keeps, after each run, the files its tool left
// under out/, relative to it.
type listingEngine struct {
	*openfold3.Engine
	mu    sync.Mutex
	files []string
}

func (e *listingEngine) Run(ctx context.Context, run *engine.Run) (*engine.Output, error) {
	out, err := e.Engine.Run(ctx, run)
	root := filepath.Join(run.WorkDir, "out")
	var files []string
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(root, p)
			files = append(files, rel)
		}
		return nil
	})
	slices.Sort(files)
	e.mu.Lock()
	e.files = files
	e.mu.Unlock()
	return out, err
}

func withListingEngine(e *listingEngine, tool, checkpoint string) option {
	return func(c *app.Config) {
		c.Engines = []engine.Engine{e}
		c.Tools = engine.Tools{"run_openfold": tool, openfold3.CheckpointTool: checkpoint}
	}
}

func sortedPaths(m map[string]map[string]any) []string {
	var paths []string
	for p := range m {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	return paths
}
