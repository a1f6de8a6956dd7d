package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/app"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/openfold3"
	"github.com/chaperone-bio/chaperone/engine/openfold3/openfold3test"
)

// withOpenFold3 runs openfold3 on the real engine, with the stand-in run_openfold as its
// tool and checkpoint as its weights, instead of on the test engine.
func withOpenFold3(tool, checkpoint string) option {
	return func(c *app.Config) {
		c.Engines = []engine.Engine{openfold3.New(openfold3.Config{})}
		c.Tools = engine.Tools{"run_openfold": tool, openfold3.CheckpointTool: checkpoint}
	}
}

// TestOpenFold3 drives openfold3 over HTTP on the real engine and the stand-in, built once
// for its subtests.
func TestOpenFold3(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tool, err := openfold3test.Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	ckpt := filepath.Join(dir, "of3-ob-2025-06-30-174k.pt")
	if err := os.WriteFile(ckpt, []byte("weights"), 0o644); err != nil {
		t.Fatal(err)
	}
	start := func(t *testing.T) *server { return startServer(t, withOpenFold3(tool, ckpt)) }
	t.Run("a sequence, and again with the alignment searched once", func(t *testing.T) {
		t.Parallel()
		s := start(t)
		models := s.get("/v1/models").expect(http.StatusOK).json()
		for _, m := range models["models"].([]any) {
			m := m.(map[string]any)
			mustf(t, (m["id"] == "openfold3") == (m["available"] == true), "%s available %v", m["id"], m["available"])
		}
		const seq = "MKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQ"
		id := s.create("/v1/predictions", map[string]any{"model": "openfold3", "sequence": seq})
		j := s.waitStatus(id, "succeeded")
		mustf(t, j["stage"] == "writing" && j["progress"] == 1.0 && j["total"] == 1.0, "finished job %v", j)
		rows, arts := s.rowsOf(id)
		row := rows["target_1"]
		mustf(t, row["status"] == "ok" && row["n_chains"] == 1.0 && row["n_residues"] == 33.0 && row["samples"] == 1.0 && row["msa"] == true,
			"row %v", row)
		plddt, _ := row["plddt"].(float64)
		mustf(t, plddt > 0 && plddt <= 1 && row["plddt"] == row["complex_plddt"] && row["iptm"] == nil && row["ptm"] != nil &&
			row["confidence_score"] != nil && row["runtime_s"].(float64) > 0, "row scores %v", row)
		byPath := artifactsByPath(t, arts)
		for path, typ := range map[string]string{"target_1.cif": "structure", "target_1/target_1_model_0_confidences.json": "confidence",
			"target_1/target_1_model_0_confidences_aggregated.json": "confidence"} {
			mustf(t, byPath[path] != nil && byPath[path]["type"] == typ && byPath[path]["target"] == "target_1", "artifact %s of type %s: %v", path, typ, byPath)
		}
		cif := s.get(byPath["target_1.cif"]["url"].(string)).expect(http.StatusOK)
		mustf(t, strings.HasPrefix(string(cif.Body), "data_target_1") && strings.Contains(string(cif.Body), " MET A 1 A "), "structure %.80q", cif.Body)
		agg := artifactJSON(t, s, byPath["target_1/target_1_model_0_confidences_aggregated.json"])
		for _, k := range []string{"avg_plddt", "gpde", "ptm", "iptm", "disorder", "has_clash", "sample_ranking_score", "chain_ptm", "chain_pair_iptm"} {
			mustf(t, agg[k] != nil, "the aggregated confidences lack %s: %v", k, agg)
		}
		mustf(t, agg["sample_ranking_score"] == row["confidence_score"] && agg["avg_plddt"].(float64)/100 == plddt, "row %v, file %v", row, agg)
		logs := string(s.get("/v1/jobs/" + id + "/logs").expect(http.StatusOK).Body)
		for _, want := range []string{"chain A searched before the run on server " + s.msa.URL,
			"--use_msa_server false --use_templates false", "--num_diffusion_samples 1", "seeds [42]", "Failed Queries:      0"} {
			mustf(t, strings.Contains(logs, want), "the log lacks %q:\n%s", want, logs)
		}

		again := s.create("/v1/predictions", map[string]any{"model": "openfold3", "sequence": seq})
		s.waitStatus(again, "succeeded")
		logs = string(s.get("/v1/jobs/" + again + "/logs").expect(http.StatusOK).Body)
		mustf(t, strings.Contains(logs, "chain A searched before the run on server "+s.msa.URL), "the second job's log:\n%s", logs)
		mustf(t, s.msa.Searches(seq) == 1, "the chain was searched %d times for two jobs; want 1", s.msa.Searches(seq))
	})

	t.Run("input forms", func(t *testing.T) {
		t.Parallel()
		s := start(t)
		tests := []struct {
			name   string
			body   map[string]any
			chains float64
			logs   []string
		}{
			{"FASTA", map[string]any{"input": ">sp|P69905|HBA_HUMAN\nMVLSPADKTNVKAAWGKV\n>beta\nMVHLTPEEKSAV\n", "params": map[string]any{"use_msa_server": false}}, 2,
				[]string{"target_1 chains A (protein): single-sequence (use_msas false)", "target_1 chains B (protein)"}},
			{"YAML with ligands and DNA", map[string]any{"input": "sequences:\n  - protein: {id: [P, Q], sequence: MKTAYIAKQR, msa: empty}\n" +
				"  - ligand: {id: L, smiles: 'CC(=O)O'}\n  - ligand: {id: M, ccd: ATP}\n  - dna: {id: D, sequence: ACGTAC}\n"}, 5,
				[]string{"target_1 chains P,Q (protein)", "target_1 chains D (dna)"}},
			{"an inline alignment", map[string]any{"input": "sequences:\n  - protein:\n      id: A\n      sequence: MKTAYIAK\n" +
				"      msa: |\n        >query\n        MKTAYIAK\n        >hit\n        MKT-YIsAK\n"}, 1,
				[]string{"target_1 chains A (protein): main e1/colabfold_main.a3m (2 rows)"}},
		}
		for _, tt := range tests {
			tt.body["model"] = "openfold3"
			id := s.create("/v1/predictions", tt.body)
			s.waitStatus(id, "succeeded")
			rows, arts := s.rowsOf(id)
			mustf(t, rows["target_1"]["status"] == "ok" && rows["target_1"]["n_chains"] == tt.chains, "%s: row %v", tt.name, rows["target_1"])
			mustf(t, artifactsByPath(t, arts)["target_1.cif"] != nil, "%s: artifacts %v", tt.name, arts)
			logs := string(s.get("/v1/jobs/" + id + "/logs").expect(http.StatusOK).Body)
			for _, want := range tt.logs {
				mustf(t, strings.Contains(logs, want), "%s: the log lacks %q:\n%s", tt.name, want, logs)
			}
		}
	})

	t.Run("targets with a failed target", func(t *testing.T) {
		t.Parallel()
		s := start(t)
		id := s.create("/v1/predictions", map[string]any{"model": "openfold3", "targets": []map[string]any{
			{"name": "lysozyme", "content": ">A|protein|empty\nKVFGRCELAAAMKRHGLDNYRGYSLGNWVCAAKFESNFNTQATNRNTDGSTDYGILQINSRWWCNDG\n"},
			{"name": "fail-me", "content": ">A|protein|empty\nMKTAYIAK\n"},
			{"name": "oom-big", "content": ">A|protein|empty\nMKTAYIAK\n"},
		}})
		s.waitStatus(id, "succeeded")
		rows, arts := s.rowsOf(id)
		mustf(t, rows["lysozyme"]["status"] == "ok", "rows %v", rows)
		mustf(t, rows["fail-me"]["status"] == "failed" && rows["fail-me"]["error"] == "OpenFold3 failed it: ValueError: Unknown CCD code ZZZ for chain L",
			"failed row %v", rows["fail-me"])
		mustf(t, rows["oom-big"]["status"] == "failed" && strings.HasPrefix(rows["oom-big"]["error"].(string), "OpenFold3 ran out of GPU memory predicting it"),
			"oom row %v", rows["oom-big"])
		for _, a := range arts {
			mustf(t, a.(map[string]any)["target"] == "lysozyme", "artifact of a failed target: %v", a)
		}
	})

	t.Run("every target failing", func(t *testing.T) {
		t.Parallel()
		s := start(t)
		id := s.create("/v1/predictions", map[string]any{"model": "openfold3", "targets": []map[string]any{
			{"name": "fail-a", "content": ">A|protein|empty\nMK\n"}, {"name": "oom-b", "content": ">A|protein|empty\nMK\n"}}})
		j := s.waitStatus(id, "failed")
		mustf(t, strings.HasPrefix(j["error"].(string), "run_openfold predicted none of the 2 target(s): fail-a: OpenFold3 failed it: ValueError"),
			"error %q", j["error"])
	})

	t.Run("PDB output", func(t *testing.T) {
		t.Parallel()
		s := start(t)
		id := s.create("/v1/predictions", map[string]any{"model": "openfold3", "input": ">A|protein|empty\nMKTAYIAK\n>B|dna\nACGT\n",
			"params": map[string]any{"output_format": "pdb"}})
		s.waitStatus(id, "succeeded")
		_, arts := s.rowsOf(id)
		byPath := artifactsByPath(t, arts)
		mustf(t, byPath["target_1.pdb"] != nil && byPath["target_1.cif"] == nil, "artifacts %v", arts)
		pdb := string(s.get(byPath["target_1.pdb"]["url"].(string)).expect(http.StatusOK).Body)
		mustf(t, strings.HasPrefix(pdb, "ATOM      1  CA  MET A   1") && strings.Contains(pdb, " DA B   1"), "PDB %.200q", pdb)
	})

	t.Run("three samples in rank order", func(t *testing.T) {
		t.Parallel()
		s := start(t)
		id := s.create("/v1/predictions", map[string]any{"model": "openfold3", "input": ">A|protein|empty\nMKTAYIAK\n>B|protein|empty\nGSHMLE\n",
			"params": map[string]any{"diffusion_samples": 3}})
		s.waitStatus(id, "succeeded")
		rows, arts := s.rowsOf(id)
		row := rows["target_1"]
		mustf(t, row["samples"] == 3.0 && row["iptm"] != nil, "row %v", row)
		byPath := artifactsByPath(t, arts)
		prev := 2.0
		for k, structure := range []string{"target_1.cif", "target_1_sample_1.cif", "target_1_sample_2.cif"} {
			mustf(t, byPath[structure] != nil && byPath[structure]["type"] == "structure", "no %s in %v", structure, arts)
			agg := artifactJSON(t, s, byPath[fmt.Sprintf("target_1/target_1_model_%d_confidences_aggregated.json", k)])
			score := agg["sample_ranking_score"].(float64)
			mustf(t, score <= prev, "sample %d scores %v, above the one before (%v)", k, score, prev)
			if k == 0 {
				mustf(t, score == row["confidence_score"], "the row's confidence_score %v is not the best sample's %v", row["confidence_score"], score)
			}
			prev = score
		}
	})

	t.Run("cancel stops the process tree", func(t *testing.T) {
		t.Parallel()
		s := start(t)
		id := s.create("/v1/predictions", map[string]any{"model": "openfold3", "targets": []map[string]any{{"name": "slow", "content": ">A|protein|empty\nMKTAYIAK\n"}}})
		pid := waitForPIDFile(t, s.dir, id)
		s.waitFor(id, 20*time.Second, func(j map[string]any) bool { return j["stage"] == "inference" })
		s.post("/v1/jobs/"+id+"/cancel", nil).expect(http.StatusOK)
		s.waitStatus(id, "canceled")
		waitProcessGone(t, pid, 10*time.Second)
	})

	t.Run("without the checkpoint the model is unavailable", func(t *testing.T) {
		t.Parallel()
		missing := filepath.Join(t.TempDir(), "weights", "of3-ob-2025-06-30-174k.pt")
		s := startServer(t, withOpenFold3(tool, missing))
		detail := s.post("/v1/predictions", map[string]any{"model": "openfold3", "sequence": "MKTAYIAK"}).problem(http.StatusServiceUnavailable, "unavailable")
		mustf(t, strings.Contains(detail, "No live worker can run model openfold3: weights missing: the OpenFold3 checkpoint of3-ob-2025-06-30-174k.pt") &&
			!strings.Contains(detail, missing) && !strings.Contains(detail, dir), "detail %q", detail)
		for _, m := range s.get("/v1/models").expect(http.StatusOK).json()["models"].([]any) {
			m := m.(map[string]any)
			mustf(t, m["id"] != "openfold3" || m["available"] == false, "openfold3 offered without its checkpoint: %v", m)
		}
	})
}

// TestOpenFold3RefusedInputs is the table of inputs openfold3 must refuse with a 400 that
// names the problem, before any availability check (no worker here has the tool).
func TestOpenFold3RefusedInputs(t *testing.T) {
	t.Parallel()
	s := startServer(t, withOpenFold3(filepath.Join(t.TempDir(), "run_openfold"), ""))
	const prot = "sequences:\n  - protein: {id: A, sequence: MKTAYIAKQR}\n"
	body := func(input string, params ...string) string {
		b, _ := json.Marshal(map[string]any{"model": "openfold3", "input": input})
		if len(params) > 0 {
			return strings.TrimSuffix(string(b), "}") + `, "params": ` + params[0] + "}"
		}
		return string(b)
	}
	tests := []struct {
		name, body string
		detail     []string
	}{
		{"a ligand of several CCD codes", body(prot + "  - ligand: {id: L, ccd: [NAG, NAG]}\n"),
			[]string{"ligand L: OpenFold3 takes one CCD code per ligand chain, not 2 (NAG, NAG)"}},
		{"DNA written like a protein chain", body("sequences:\n  - protein: {id: A, sequence: ACGT}\n  - dna: {id: D, sequence: ACGT}\n"),
			[]string{`chain D is dna written as "ACGT", the same text as a protein chain`}},
		{"constraints", body(prot + "  - ligand: {id: L, smiles: CCO}\nconstraints:\n  - contact: {token1: [A, 1], token2: [L, C1]}\n"),
			[]string{"the input has constraints, which openfold3 does not take; models that do: boltz2"}},
		{"templates", body(prot + "templates:\n  - cif: |\n      data_t\n      _atom_site.id 1\n"), []string{"the input has templates, which openfold3 does not take"}},
		{"affinity", body(prot + "  - ligand: {id: L, smiles: CCO}\nproperties:\n  - affinity: {binder: L}\n"),
			[]string{"the input asks for affinity, which openfold3 does not take"}},
		{"a cyclic chain", body("sequences:\n  - protein: {id: A, sequence: MK, cyclic: true}\n"), []string{"chain A is cyclic, which openfold3 does not take"}},
		{"two-character chains in PDB output", body("sequences:\n  - protein: {id: AB, sequence: MK}\n", `{"output_format": "pdb"}`),
			[]string{"the PDB format holds one character per chain id"}},
		{"more residues than the model takes", body("sequences:\n  - protein: {id: [A, B], sequence: " + strings.Repeat("A", 600) + "}\n"),
			[]string{"openfold3 takes at most 1024 (max_residues)"}},
		{"an unknown param", body(prot, `{"num_seeds": 2}`), []string{"num_seeds"}},
		{"a fraction of samples", body(prot, `{"diffusion_samples": 1.5}`), []string{"diffusion_samples"}},
		{"an unknown output format", body(prot, `{"output_format": "mmtf"}`), []string{"output_format", "cif, pdb"}},
		{"a protein letter that is not an amino acid", body("sequences:\n  - protein: {id: A, sequence: MKTJ}\n"), []string{"'J' is not an amino-acid letter"}},
		{"an MSA path", body("sequences:\n  - protein: {id: A, sequence: MK, msa: /data/a.a3m}\n"), []string{`"/data/a.a3m" is a path to a file`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			detail := s.post("/v1/predictions", tt.body).problem(http.StatusBadRequest, "invalid-input")
			for _, want := range tt.detail {
				mustf(t, strings.Contains(detail, want), "detail %q lacks %q", detail, want)
			}
		})
	}
}

// artifactsByPath indexes a manifest's artifacts by path.
func artifactsByPath(t *testing.T, arts []any) map[string]map[string]any {
	t.Helper()
	byPath := map[string]map[string]any{}
	for _, a := range arts {
		a := a.(map[string]any)
		byPath[a["path"].(string)] = a
	}
	return byPath
}

// artifactJSON downloads a JSON artifact.
func artifactJSON(t *testing.T, s *server, artifact map[string]any) map[string]any {
	t.Helper()
	mustf(t, artifact != nil, "no such artifact")
	return jsonOf(t, string(s.get(artifact["url"].(string)).expect(http.StatusOK).Body))
}
