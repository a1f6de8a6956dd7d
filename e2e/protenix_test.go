package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/app"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/protenix"
	"github.com/chaperone-bio/chaperone/engine/protenix/protenixtest"
)

// The stand-ins of protenix and opendde are built once per test binary; TestMain removes
// them.
var protenixStandIns struct {
	once  sync.Once
	dir   string
	paths map[string]string
	err   error
}

func protenixStandIn(t *testing.T, tool string) string {
	t.Helper()
	p := &protenixStandIns
	p.once.Do(func() {
		p.paths = map[string]string{}
		if p.dir, p.err = os.MkdirTemp("", "e2e-protenix-"); p.err != nil {
			return
		}
		for _, tool := range []string{protenixtest.Protenix, protenixtest.OpenDDE} {
			if p.paths[tool], p.err = protenixtest.Build(p.dir, tool); p.err != nil {
				return
			}
		}
	})
	if p.err != nil {
		t.Fatal(p.err)
	}
	return p.paths[tool]
}

func removeProtenixStandIns() {
	if protenixStandIns.dir != "" {
		os.RemoveAll(protenixStandIns.dir)
	}
}

// withProtenix runs protenix-v2 on the real engine, with the stand-in as its tool.
func withProtenix(t *testing.T) option {
	path := protenixStandIn(t, protenixtest.Protenix)
	return func(c *app.Config) {
		c.Engines = []engine.Engine{protenix.New(protenix.Config{})}
		c.Tools = engine.Tools{"protenix": path}
	}
}

// artifactsOf maps a job's artifacts by path.
func artifactsOf(arts []any) map[string]map[string]any {
	byPath := map[string]map[string]any{}
	for _, a := range arts {
		a := a.(map[string]any)
		byPath[a["path"].(string)] = a
	}
	return byPath
}

// rankingScores reads the ranking_score of each sample's summary the job lists, best first.
func rankingScores(t *testing.T, s *server, byPath map[string]map[string]any, target string, samples int) []float64 {
	t.Helper()
	var scores []float64
	for k := range samples {
		path := fmt.Sprintf("%s/%s_summary_confidence_sample_%d.json", target, target, k)
		mustf(t, byPath[path] != nil && byPath[path]["type"] == "confidence", "artifact %s missing: %v", path, byPath)
		var conf map[string]any
		if err := json.Unmarshal(s.get(byPath[path]["url"].(string)).expect(http.StatusOK).Body, &conf); err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{"plddt", "gpde", "ptm", "iptm", "chain_ptm", "chain_pair_iptm", "has_clash", "ranking_score"} {
			mustf(t, conf[key] != nil, "summary %s lacks %s", path, key)
		}
		scores = append(scores, conf["ranking_score"].(float64))
	}
	return scores
}

func TestProtenixRunsASequence(t *testing.T) {
	t.Parallel()
	s := startServer(t, withProtenix(t))
	models := s.get("/v1/models").expect(http.StatusOK).json()
	for _, m := range models["models"].([]any) {
		m := m.(map[string]any)
		mustf(t, (m["id"] == "protenix-v2") == (m["available"] == true), "%s available %v", m["id"], m["available"])
	}

	id := s.create("/v1/predictions", map[string]any{"model": "protenix-v2", "sequence": "MKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQ",
		"params": map[string]any{"diffusion_samples": 3}})
	j := s.waitStatus(id, "succeeded")
	mustf(t, j["stage"] == "writing" && j["progress"] == 1.0 && j["done"] == 1.0 && j["total"] == 1.0, "finished job %v", j)
	rows, arts := s.rowsOf(id)
	row := rows["target_1"]
	mustf(t, row["status"] == "ok" && row["n_chains"] == 1.0 && row["n_residues"] == 33.0 && row["samples"] == 3.0 && row["msa"] == true,
		"row %v", row)
	plddt := row["plddt"].(float64)
	mustf(t, row["iptm"] == nil && plddt > 0 && plddt <= 1 && row["runtime_s"].(float64) > 0, "row scores %v", row)

	byPath := artifactsOf(arts)
	for path, typ := range map[string]string{"target_1.cif": "structure", "target_1_sample_1.cif": "structure", "target_1_sample_2.cif": "structure",
		"target_1/target_1_full_data_sample_0.json": "pae"} {
		mustf(t, byPath[path] != nil && byPath[path]["type"] == typ, "artifact %s of type %s missing: %v", path, typ, byPath)
	}
	scores := rankingScores(t, s, byPath, "target_1", 3)
	mustf(t, scores[0] >= scores[1] && scores[1] >= scores[2] && row["confidence_score"] == scores[0],
		"samples in the order %v, row confidence_score %v: want best first", scores, row["confidence_score"])
	cif := s.get(byPath["target_1.cif"]["url"].(string)).expect(http.StatusOK)
	mustf(t, strings.HasPrefix(string(cif.Body), "data_target_1"), "best structure %.60q", cif.Body)

	logs := string(s.get("/v1/jobs/" + id + "/logs").expect(http.StatusOK).Body)
	// The chain was searched by the alignment stage and read by the tool from its files.
	for _, want := range []string{"--model_name protenix-v2", "--seeds 101", "--sample 3",
		"chain A: searched before the run (server " + s.msa.URL, "N_msa 4", "[Rank 0] target_1 [seed:101] succeeded"} {
		mustf(t, strings.Contains(logs, want), "the log lacks %q:\n%s", want, logs)
	}
	mustf(t, !strings.Contains(logs, "msa_server"), "the tool was told of an MSA server:\n%s", logs)

	again := s.create("/v1/predictions", map[string]any{"model": "protenix-v2", "sequence": "MKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQ"})
	s.waitStatus(again, "succeeded")
	logs = string(s.get("/v1/jobs/" + again + "/logs").expect(http.StatusOK).Body)
	mustf(t, strings.Contains(logs, "N_msa 4") && s.msa.Searches("MKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQ") == 1,
		"the second job: %d searches of its chain, log:\n%s", s.msa.Searches("MKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQ"), logs)
}

func TestProtenixInputForms(t *testing.T) {
	t.Parallel()
	s := startServer(t, withProtenix(t))
	yamlInput := "sequences:\n  - protein:\n      id: A\n      sequence: MVTPEGNVSLVDESLLVGVTDEDRAVRSAHQFYERLIG\n      msa: empty\n" +
		"      modifications:\n        - {position: 2, ccd: SEP}\n" +
		"  - dna:\n      id: [C, D]\n      sequence: GATTACA\n" +
		"  - ligand:\n      id: L\n      smiles: 'N[C@@H](Cc1ccc(O)cc1)C(=O)O'\n" +
		"  - ligand:\n      id: M\n      ccd: MG\n"
	tests := []struct {
		name   string
		body   map[string]any
		chains float64
		check  func(row map[string]any, paths map[string]map[string]any) bool
	}{
		{"YAML with DNA, ligand, ion and a modification", map[string]any{"model": "protenix-v2", "input": yamlInput}, 5,
			func(row map[string]any, _ map[string]map[string]any) bool {
				return row["msa"] == false && row["iptm"] != nil
			}},
		{"FASTA with Boltz headers", map[string]any{"model": "protenix-v2", "input": ">A|protein|empty\nMKTAYIAKQR\n>B|rna\nACGUACGU\n>C|ccd\nSAH\n"}, 3,
			func(row map[string]any, _ map[string]map[string]any) bool { return row["n_residues"] == 19.0 }},
		{"plain FASTA, single-sequence, as PDB", map[string]any{"model": "protenix-v2", "input": ">sp|P69905|HBA_HUMAN\nMVLSPADKTNVKAAWGKV\n>beta\nMVHLTPEEKSAV\n",
			"params": map[string]any{"use_msa_server": false, "output_format": "pdb", "diffusion_samples": 2}}, 2,
			func(row map[string]any, paths map[string]map[string]any) bool {
				return row["msa"] == false && paths["target_1.pdb"] != nil && paths["target_1_sample_1.pdb"] != nil && paths["target_1.cif"] == nil
			}},
		{"YAML with an inline alignment", map[string]any{"model": "protenix-v2", "input": "sequences:\n  - protein:\n      id: [A, B]\n      sequence: MKTAYIAK\n" +
			"      msa: |\n        >query\n        MKTAYIAK\n        >hit\n        MKT-YIsAK\n"}, 2,
			func(row map[string]any, _ map[string]map[string]any) bool {
				return row["msa"] == true && row["n_residues"] == 16.0
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := s.create("/v1/predictions", tt.body)
			s.waitStatus(id, "succeeded")
			rows, arts := s.rowsOf(id)
			row := rows["target_1"]
			mustf(t, row["status"] == "ok" && row["n_chains"] == tt.chains && tt.check(row, artifactsOf(arts)), "row %v, artifacts %v", row, arts)
			if p := artifactsOf(arts)["target_1.pdb"]; p != nil {
				pdb := string(s.get(p["url"].(string)).expect(http.StatusOK).Body)
				mustf(t, strings.HasPrefix(pdb, "ATOM ") && strings.Contains(pdb, " A   1 ") && strings.HasSuffix(pdb, "END\n"), "PDB %q", pdb)
			}
		})
	}
}

func TestProtenixTargetsWithFailures(t *testing.T) {
	t.Parallel()
	s := startServer(t, withProtenix(t))
	id := s.create("/v1/predictions", map[string]any{"model": "protenix-v2", "params": map[string]any{"use_msa_server": false}, "targets": []map[string]any{
		{"name": "lysozyme", "content": ">A\nKVFGRCELAAAMKRHGLDNYRGYSLGNWVCAAKFESNFNTQATNRNTDGSTDYGILQINSRWWCNDG\n"},
		{"name": "fail-me", "content": ">A\nMKTAYIAK\n"},
		{"name": "oom-big", "content": ">A\nMKTAYIAK\n"},
		{"content": "sequences:\n  - protein: {id: [A, B], sequence: GSGSGSGS}\n"},
	}})
	j := s.waitStatus(id, "succeeded")
	mustf(t, j["total"] == 4.0, "total %v", j["total"])
	rows, arts := s.rowsOf(id)
	mustf(t, len(rows) == 4 && rows["lysozyme"]["status"] == "ok" && rows["target_4"]["status"] == "ok" && rows["target_4"]["n_chains"] == 2.0, "rows %v", rows)
	mustf(t, rows["fail-me"]["status"] == "failed" &&
		rows["fail-me"]["error"] == "protenix failed on it: Could not parse ligand SMILES: simulated featurisation failure", "failed row %v", rows["fail-me"])
	mustf(t, rows["oom-big"]["status"] == "failed" && strings.Contains(rows["oom-big"]["error"].(string), "CUDA out of memory"), "oom row %v", rows["oom-big"])
	for _, a := range arts {
		target := a.(map[string]any)["target"]
		mustf(t, target == "lysozyme" || target == "target_4", "artifact of a failed target: %v", a)
	}

	all := s.create("/v1/predictions", map[string]any{"model": "protenix-v2", "targets": []map[string]any{
		{"name": "fail-a", "content": ">A|protein|empty\nMKTAYIAK\n"}, {"name": "oom-b", "content": ">A|protein|empty\nMKTAYIAK\n"}}})
	j = s.waitStatus(all, "failed")
	mustf(t, strings.HasPrefix(j["error"].(string), "protenix predicted none of the 2 target(s): fail-a: protenix failed on it: Could not parse"),
		"error %q", j["error"])
}

func TestProtenixCancelStopsTheProcessTree(t *testing.T) {
	t.Parallel()
	cancelStopsTheProcessTree(t, startServer(t, withProtenix(t)), "protenix-v2")
}

// cancelStopsTheProcessTree cancels a job of model on a slow target of the stand-in once it
// is in inference: its process tree, with a helper that ignores SIGTERM, must go.
func cancelStopsTheProcessTree(t *testing.T, s *server, model string) {
	id := s.create("/v1/predictions", map[string]any{"model": model, "targets": []map[string]any{{"name": "slow", "content": ">A|protein|empty\nMKTAYIAK\n"}}})
	pid := waitForPIDFile(t, s.dir, id)
	s.waitFor(id, 20*time.Second, func(j map[string]any) bool { return j["stage"] == "inference" })
	s.post("/v1/jobs/"+id+"/cancel", nil).expect(http.StatusOK)
	s.waitStatus(id, "canceled")
	waitProcessGone(t, pid, 10*time.Second)
}

// TestProtenixRefusals is the table of inputs protenix-v2 refuses at submit with a 400
// whose detail says why.
func TestProtenixRefusals(t *testing.T) {
	t.Parallel()
	s := startServer(t, withProtenix(t))
	const prot = "sequences:\n  - protein: {id: A, sequence: MKTAYIAKQR}\n"
	const lig = "  - ligand: {id: L, smiles: CCO}\n"
	input := func(text string, params ...string) string {
		b, _ := json.Marshal(map[string]any{"model": "protenix-v2", "input": text})
		if len(params) > 0 {
			return strings.TrimSuffix(string(b), "}") + `, "params": ` + params[0] + "}"
		}
		return string(b)
	}
	wantRefused(t, s, []refusal{
		{"selenocysteine", input("sequences:\n  - protein: {id: A, sequence: MKUAY}\n"), []string{"chain A: residue 3 is U, which protenix-v2 does not read"}},
		{"pyrrolysine", input(">A|protein\nMKOAY\n"), []string{"residue 3 is O"}},
		{"affinity", input(prot + lig + "properties:\n  - affinity: {binder: L}\n"), []string{"the input asks for affinity, which protenix-v2 does not take; models that do: boltz2"}},
		{"constraints", input(prot + lig + "constraints:\n  - contact: {token1: [A, 1], token2: [L, C1]}\n"), []string{"the input has constraints, which protenix-v2 does not take"}},
		{"templates", input(prot + "templates:\n  - cif: |\n      data_t\n      _atom_site.id 1\n"), []string{"the input has templates, which protenix-v2 does not take"}},
		{"cyclic", input("sequences:\n  - protein: {id: A, sequence: MKTAY, cyclic: true}\n"), []string{"chain A is cyclic, which protenix-v2 does not take"}},
		{"two-character chains in PDB output", input("sequences:\n  - protein: {id: AB, sequence: MK}\n", `{"output_format": "pdb"}`), []string{"the PDB format holds one character per chain id"}},
		{"more residues than the model takes", input("sequences:\n  - protein: {id: [A, B], sequence: " + strings.Repeat("A", 600) + "}\n"), []string{"protenix-v2 takes at most 1024"}},
	})
}

// refusal is a request a model must refuse with a 400 whose detail holds every one of detail.
type refusal struct {
	name, body string
	detail     []string
}

func wantRefused(t *testing.T, s *server, refusals []refusal) {
	for _, r := range refusals {
		t.Run(r.name, func(t *testing.T) {
			detail := s.post("/v1/predictions", r.body).problem(http.StatusBadRequest, "invalid-input")
			for _, want := range r.detail {
				mustf(t, strings.Contains(detail, want), "detail %q lacks %q", detail, want)
			}
		})
	}
}
