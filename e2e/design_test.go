package e2e

import (
	"net/http"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/app"
	"github.com/chaperone-bio/chaperone/catalog"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/boltzgen"
	"github.com/chaperone-bio/chaperone/engine/boltzgen/boltzgentest"
	"github.com/chaperone-bio/chaperone/engine/rfd3"
	"github.com/chaperone-bio/chaperone/engine/rfd3/rfd3test"
)

// The stand-ins of boltzgen and rfd3 are built once per test binary; TestMain removes them.
var (
	designStandInsOnce sync.Once
	designStandInsDir  string
	designStandIns     engine.Tools
	designStandInsErr  error
)

func designTools(t *testing.T) engine.Tools {
	t.Helper()
	designStandInsOnce.Do(func() {
		if designStandInsDir, designStandInsErr = os.MkdirTemp("", "e2e-design-"); designStandInsErr != nil {
			return
		}
		designStandIns = engine.Tools{}
		if designStandIns["boltzgen"], designStandInsErr = boltzgentest.Build(designStandInsDir); designStandInsErr != nil {
			return
		}
		designStandIns["rfd3"], designStandInsErr = rfd3test.Build(designStandInsDir)
	})
	if designStandInsErr != nil {
		t.Fatal(designStandInsErr)
	}
	return designStandIns
}

func removeDesignStandIns() {
	if designStandInsDir != "" {
		os.RemoveAll(designStandInsDir)
	}
}

// withDesignEngines runs boltzgen and rfd3 on their real engines, with the stand-ins as
// their tools.
func withDesignEngines(t *testing.T) option {
	tools := designTools(t)
	return func(c *app.Config) {
		c.Engines = []engine.Engine{boltzgen.New(boltzgen.Config{Binders: catalog.Default().Binders(), GPU: true}), rfd3.New()}
		c.Tools = tools
	}
}

// designTarget is the design tests' PDB target (boltzgentest.DesignTarget); behaviour, when
// set, is an rfd3 stand-in behaviour.
func designTarget(behaviour string) string {
	if behaviour == "" {
		return boltzgentest.DesignTarget("")
	}
	return boltzgentest.DesignTarget(rfd3test.Marker + behaviour)
}

const fileSpec = "entities:\n  - protein: {id: H, sequence: 20..30}\n  - file:\n      path: target.pdb\n      include:\n        - chain: {id: A}\n"

// designRequests is one request per protocol that runs as written; the README shows the
// same shapes.
func designRequests() map[string]map[string]any {
	return map[string]map[string]any{
		"protein-anything": {"spec": fileSpec, "structure": designTarget(""), "params": map[string]any{"num_designs": 4, "budget": 2}},
		"peptide-anything": {"spec": "sequences:\n  - protein: {id: A, sequence: MKTAYIAKQRQISFVKSHFSRQ}\n", "params": map[string]any{"num_designs": 3, "budget": 2}},
		"nanobody-anything": {"spec": "entities:\n  - protein: {id: N, sequence: 110..130}\n  - file:\n      path: target.pdb\n" +
			"      include:\n        - chain: {id: A}\n      binding_types:\n        - chain: {id: A, binding: 20..30}\n",
			"structure": designTarget(""), "params": map[string]any{"num_designs": 2, "budget": 1}},
		"antibody-anything":      {"spec": "sequences:\n  - protein: {id: A, sequence: MKTAYIAKQRQISFVKSHFSRQ}\n", "params": map[string]any{"num_designs": 2, "budget": 2}},
		"protein-small_molecule": {"spec": "sequences:\n  - ligand: {id: L, ccd: SAH}\n", "params": map[string]any{"num_designs": 3, "budget": 3}},
		"protein-redesign": {"spec": "entities:\n  - file:\n      path: target.pdb\n      design:\n        - chain: {id: A, res_index: 10..20}\n",
			"structure": designTarget(""), "params": map[string]any{"num_designs": 2, "budget": 2}},
		"rfd3-binder":    {"structure": designTarget(""), "contig": "40-60,/0,A1-51", "params": map[string]any{"num_designs": 3}},
		"rfd3-scaffold":  {"structure": designTarget(""), "contig": "A1-10,8-12,A30-40", "params": map[string]any{"num_designs": 2, "num_timesteps": 20}},
		"rfd3-na-binder": {"structure": designTarget(""), "contig": "B1-12,/0,C1-12,/0,60-80", "params": map[string]any{"num_designs": 2}},
	}
}

func TestEveryDesignProtocolRuns(t *testing.T) {
	t.Parallel()
	s := startServer(t, withDesignEngines(t))
	for protocol, body := range designRequests() {
		t.Run(protocol, func(t *testing.T) {
			body["protocol"] = protocol
			id := s.create("/v1/designs", body)
			j := s.waitFor(id, 60*time.Second, func(j map[string]any) bool { return j["status"] != "queued" && j["status"] != "running" })
			mustf(t, j["status"] == "succeeded" && j["progress"] == 1.0 && j["stage"] == "writing", "job %v", j)
			res := s.get("/v1/jobs/" + id + "/results").expect(http.StatusOK).json()
			designs := res["designs"].([]any)
			params := body["params"].(map[string]any)
			want := params["num_designs"]
			if b, ok := params["budget"]; ok {
				want = b
			}
			mustf(t, len(designs) == want, "%d designs, want %v", len(designs), want)
			urls := map[string]string{}
			types := map[string]string{}
			for _, a := range res["artifacts"].([]any) {
				a := a.(map[string]any)
				urls[a["path"].(string)], types[a["path"].(string)] = a["url"].(string), a["type"].(string)
			}
			for i, d := range designs {
				d := d.(map[string]any)
				if strings.HasPrefix(protocol, "rfd3-") {
					mustf(t, d["rank"] == nil, "an rfd3 design with rank %v", d["rank"])
				} else {
					mustf(t, d["rank"] == float64(i+1), "design %d has rank %v", i, d["rank"])
				}
				seq, _ := d["sequence"].(string)
				mustf(t, len(seq) > 0 && d["metrics"] != nil, "design %v", d)
				cif := s.get(urls[d["file"].(string)]).expect(http.StatusOK)
				mustf(t, strings.HasPrefix(string(cif.Body), "data_") && types[d["file"].(string)] == "structure", "design file %s: %.40q", d["file"], cif.Body)
			}
			if !strings.HasPrefix(protocol, "rfd3-") {
				table := s.get(urls["final_designs_metrics.csv"]).expect(http.StatusOK)
				mustf(t, strings.HasPrefix(string(table.Body), "id,final_rank,designed_sequence,designed_chain_sequence"), "metrics table %.80q", table.Body)
			}
		})
	}
}

func TestDesignParamsAreClampedAndShown(t *testing.T) {
	t.Parallel()
	s := startServer(t, withDesignEngines(t), withLimits(func(l *catalog.Limits) { l.BoltzGenDesigns, l.RFD3Designs = 4, 3 }))
	tests := []struct {
		protocol string
		body     map[string]any
		want     map[string]any
	}{
		{"peptide-anything", map[string]any{"spec": "sequences:\n  - protein: {id: A, sequence: MKTAYIAK}\n", "params": map[string]any{"num_designs": 50, "budget": 9}},
			map[string]any{"num_designs": 4.0, "budget": 4.0, "fast": true}},
		{"rfd3-binder", map[string]any{"structure": designTarget(""), "contig": "30,/0,A1-20", "params": map[string]any{"num_designs": 0, "num_timesteps": 1, "seed": -5}},
			map[string]any{"num_designs": 1.0, "num_timesteps": 4.0, "seed": 0.0}},
		{"rfd3-scaffold", map[string]any{"structure": designTarget(""), "contig": "A1-10,20", "params": map[string]any{"num_designs": 99}},
			map[string]any{"num_designs": 3.0, "num_timesteps": 100.0, "seed": 42.0}},
	}
	for _, tt := range tests {
		tt.body["protocol"] = tt.protocol
		j := s.post("/v1/designs", tt.body).expect(http.StatusAccepted).json()
		mustf(t, reflect.DeepEqual(j["params"], tt.want), "%s params %v, want %v", tt.protocol, j["params"], tt.want)
		s.waitFor(j["id"].(string), 60*time.Second, func(j map[string]any) bool { return j["status"] == "succeeded" })
		designs := s.get("/v1/jobs/" + j["id"].(string) + "/results").expect(http.StatusOK).json()["designs"].([]any)
		mustf(t, float64(len(designs)) == tt.want["num_designs"], "%s: %d designs, want %v", tt.protocol, len(designs), tt.want["num_designs"])
	}
}

func TestTheSameRFD3SeedGivesTheSameDesigns(t *testing.T) {
	t.Parallel()
	s := startServer(t, withDesignEngines(t))
	designs := func(seed int) any {
		id := s.create("/v1/designs", map[string]any{"protocol": "rfd3-binder", "structure": designTarget(""), "contig": "20-40,/0,A1-30",
			"params": map[string]any{"num_designs": 2, "seed": seed}})
		s.waitFor(id, 60*time.Second, func(j map[string]any) bool { return j["status"] == "succeeded" })
		return s.get("/v1/jobs/" + id + "/results").expect(http.StatusOK).json()["designs"]
	}
	a, b, c := designs(11), designs(11), designs(12)
	mustf(t, reflect.DeepEqual(a, b), "seed 11 twice gave different designs:\n%v\n%v", a, b)
	mustf(t, !reflect.DeepEqual(a, c), "seeds 11 and 12 gave the same designs %v", a)
}

func TestACanceledDesignStopsAndKeepsItsStage(t *testing.T) {
	t.Parallel()
	s := startServer(t, withDesignEngines(t))
	id := s.create("/v1/designs", map[string]any{"protocol": "rfd3-scaffold", "structure": designTarget(rfd3test.Hang), "contig": "A1-10,20"})
	s.waitFor(id, 30*time.Second, func(j map[string]any) bool { return j["status"] == "running" })
	s.post("/v1/jobs/"+id+"/cancel", nil).expect(http.StatusOK)
	j := s.waitStatus(id, "canceled")
	mustf(t, j["stage"] == "designing", "a canceled design keeps its stage: %v", j)
}

func TestAFailedDesignRunShowsTheToolsMessage(t *testing.T) {
	t.Parallel()
	s := startServer(t, withDesignEngines(t))
	tests := []struct {
		body map[string]any
		want string
	}{
		{map[string]any{"protocol": "protein-anything", "spec": boltzgentest.Marker + boltzgentest.OOM + "\n" + fileSpec, "structure": designTarget("")},
			"torch.OutOfMemoryError: CUDA out of memory"},
		{map[string]any{"protocol": "rfd3-binder", "structure": designTarget(rfd3test.Invalid), "contig": "30,/0,A1-20"},
			"ComponentValidationError: Residue A999 not found in atom array."},
	}
	for _, tt := range tests {
		id := s.create("/v1/designs", tt.body)
		j := s.waitStatus(id, "failed")
		mustf(t, strings.Contains(j["error"].(string), tt.want), "error %q, want it to contain %q", j["error"], tt.want)
	}
}

func TestMalformedDesignsAreRefusedWithAClearReason(t *testing.T) {
	t.Parallel()
	s := startServer(t, withDesignEngines(t))
	target := designTarget("")
	tests := []struct {
		name string
		body map[string]any
		want string
	}{
		{"spec that is not YAML", map[string]any{"protocol": "protein-anything", "spec": "entities: [\n"}, "spec: line 1, column 11: YAML syntax"},
		{"spec with an unknown entity", map[string]any{"protocol": "protein-anything", "spec": "entities:\n  - peptide: {id: A}\n"}, "spec: line 2, column 5"},
		{"spec with a bad length", map[string]any{"protocol": "protein-anything", "spec": "entities:\n  - protein: {id: B, sequence: 140..80}\n"},
			"spec: line 2, column 32: entities[0].protein.sequence \"140..80\": the range 140..80 runs backwards"},
		{"spec naming an absolute path", map[string]any{"protocol": "protein-anything", "spec": "entities:\n  - file: {path: /data/t.cif}\n", "structure": target},
			"spec: line 2, column 18: entities[0].file.path \"/data/t.cif\" is an absolute path"},
		{"spec naming a file above its folder", map[string]any{"protocol": "nanobody-anything", "spec": "entities:\n  - file:\n      path: ../nanobody_scaffolds/7eow.yaml\n", "structure": target},
			"leaves the spec's folder"},
		{"spec naming a second file", map[string]any{"protocol": "protein-anything", "spec": fileSpec + "  - file: {path: other.pdb}\n", "structure": target},
			"names a second file, other.pdb, after target.pdb"},
		{"spec naming a file that was not sent", map[string]any{"protocol": "protein-anything", "spec": fileSpec}, "no structure was sent"},
		{"spec naming a chain the structure lacks", map[string]any{"protocol": "protein-anything", "structure": target,
			"spec": "entities:\n  - protein: {id: H, sequence: 20}\n  - file:\n      path: target.pdb\n      include:\n        - chain: {id: Z}\n"},
			"the structure has no chain Z; its chains are A (protein, residues 1-52, 52A, 53-60), B (dna, residues 1-12), C (dna, residues 1-12)"},
		{"spec too large", map[string]any{"protocol": "protein-anything", "spec": "entities:\n  - protein: {id: B, sequence: 2000}\n"},
			"describes designs of up to 2000 residues; boltzgen designs at most 1024 (max_residues)"},
		{"sequences form for protein-redesign", map[string]any{"protocol": "protein-redesign", "spec": "sequences:\n  - protein: {id: A, sequence: MK}\n"},
			"takes BoltzGen's entities form only"},
		{"structure that is not one", map[string]any{"protocol": "rfd3-binder", "structure": ">a\nMKT\n", "contig": "30"}, "structure: must be PDB text"},
		{"structure with a broken record", map[string]any{"protocol": "rfd3-binder", "structure": "ATOM      1  CA  GLU A  1x     0.000   0.000   0.000\n", "contig": "30"},
			`structure: line 1, column 23: residue number "1x" is not a number`},
		{"mmCIF cut inside a row", map[string]any{"protocol": "rfd3-binder", "contig": "30",
			"structure": "data_t\nloop_\n_atom_site.label_comp_id\n_atom_site.auth_asym_id\n_atom_site.auth_seq_id\nGLU A 1\nGLU A\n"},
			"structure: line 7: the _atom_site loop ends inside a row"},
		{"contig syntax", map[string]any{"protocol": "rfd3-binder", "structure": target, "contig": "A1-10,,30"}, `contig: segment 2 "": is empty`},
		{"contig naming a missing residue", map[string]any{"protocol": "rfd3-binder", "structure": target, "contig": "30,/0,A55-70"},
			"contig: segment 3 A55-70: chain A has no residue 61; its residues are 1-52, 52A, 53-60"},
		{"contig naming a missing chain", map[string]any{"protocol": "rfd3-scaffold", "structure": target, "contig": "D1-5,20"},
			"contig: segment 1 D1-5: the structure has no chain D"},
		{"contig over an insertion code", map[string]any{"protocol": "rfd3-scaffold", "structure": target, "contig": "A50-55,20"},
			"chain A has 2 residues numbered 52 (insertion codes none, A)"},
		{"contig without a nucleic acid for rfd3-na-binder", map[string]any{"protocol": "rfd3-na-binder", "structure": target, "contig": "A1-20,/0,60"},
			"keeps no residue of a DNA or RNA chain"},
		{"contig too large", map[string]any{"protocol": "rfd3-binder", "structure": target, "contig": "A1-40,/0,900-1000"},
			"describes up to 1040 residues; rfd3 designs at most 1024 (max_residues)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			detail := s.post("/v1/designs", tt.body).problem(http.StatusBadRequest, "invalid-input")
			mustf(t, strings.Contains(detail, tt.want), "detail %q, want it to contain %q", detail, tt.want)
		})
	}
}

func TestASpecErrorIsA400EvenWhenNoWorkerCanDesign(t *testing.T) {
	t.Parallel()
	s := startServer(t, withoutWorker())
	detail := s.post("/v1/designs", map[string]any{"protocol": "protein-anything", "spec": "entities:\n  - file: {path: ../t.cif}\n"}).
		problem(http.StatusBadRequest, "invalid-input")
	mustf(t, strings.Contains(detail, "spec: line 2, column 18"), "detail %q", detail)
	detail = s.post("/v1/designs", map[string]any{"protocol": "rfd3-binder", "structure": designTarget(""), "contig": "30,/0,A70-80"}).
		problem(http.StatusBadRequest, "invalid-input")
	mustf(t, strings.Contains(detail, "chain A has no residue 70"), "detail %q", detail)
	s.post("/v1/designs", map[string]any{"protocol": "protein-anything", "spec": fileSpec, "structure": designTarget("")}).
		problem(http.StatusServiceUnavailable, "unavailable")
}
