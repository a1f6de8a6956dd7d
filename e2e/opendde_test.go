package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chaperone-bio/chaperone/app"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/protenix"
	"github.com/chaperone-bio/chaperone/engine/protenix/protenixtest"
)

// withOpenDDE runs opendde and opendde-abag on the real engines, with the stand-in as
// their tool and root as OpenDDE's data folder.
func withOpenDDE(t *testing.T, root string) option {
	path := protenixStandIn(t, protenixtest.OpenDDE)
	return func(c *app.Config) {
		cfg := protenix.Config{OpenDDERoot: root}
		c.Engines = []engine.Engine{protenix.NewOpenDDE(cfg), protenix.NewOpenDDEAbAg(cfg)}
		c.Tools = engine.Tools{"opendde": path}
	}
}

// openDDERoot is an OpenDDE data folder, with the antibody-antigen checkpoint if abag.
func openDDERoot(t *testing.T, abag bool) string {
	t.Helper()
	root := t.TempDir()
	if !abag {
		return root
	}
	if err := os.MkdirAll(filepath.Join(root, "checkpoint"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "checkpoint", "opendde_abag.pt"), []byte("weights"), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

func TestOpenDDERunsASequence(t *testing.T) {
	t.Parallel()
	s := startServer(t, withOpenDDE(t, openDDERoot(t, true)))
	for _, model := range []string{"opendde", "opendde-abag"} {
		t.Run(model, func(t *testing.T) {
			id := s.create("/v1/predictions", map[string]any{"model": model, "sequence": "MKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQ",
				"params": map[string]any{"diffusion_samples": 3, "output_format": "pdb"}})
			j := s.waitStatus(id, "succeeded")
			mustf(t, j["progress"] == 1.0 && j["done"] == 1.0, "finished job %v", j)
			rows, arts := s.rowsOf(id)
			row := rows["target_1"]
			plddt := row["plddt"].(float64)
			mustf(t, row["status"] == "ok" && row["samples"] == 3.0 && row["msa"] == true && plddt > 0 && plddt <= 1 && row["runtime_s"].(float64) > 0,
				"row %v", row)
			byPath := artifactsOf(arts)
			for _, path := range []string{"target_1.pdb", "target_1_sample_1.pdb", "target_1_sample_2.pdb"} {
				mustf(t, byPath[path] != nil && byPath[path]["type"] == "structure", "artifact %s missing: %v", path, byPath)
			}
			scores := rankingScores(t, s, byPath, "target_1", 3)
			mustf(t, scores[0] >= scores[1] && scores[1] >= scores[2] && row["confidence_score"] == scores[0],
				"samples in the order %v, row confidence_score %v", scores, row["confidence_score"])
			pdb := string(s.get(byPath["target_1.pdb"]["url"].(string)).expect(http.StatusOK).Body)
			mustf(t, strings.HasPrefix(pdb, "ATOM ") && strings.HasSuffix(pdb, "END\n"), "PDB %.80q", pdb)
			logs := string(s.get("/v1/jobs/" + id + "/logs").expect(http.StatusOK).Body)
			for _, want := range []string{"--model_name opendde_v1", "--seeds 101", "--dtype bf16", "--device cpu"} {
				mustf(t, strings.Contains(logs, want), "the log lacks %q:\n%s", want, logs)
			}
			mustf(t, strings.Contains(logs, "--load_checkpoint_path") == (model == "opendde-abag"), "checkpoint option of %s:\n%s", model, logs)
			mustf(t, !strings.Contains(logs, "--msa_server_mode"), "opendde was given Protenix's --msa_server_mode:\n%s", logs)
		})
	}
}

func TestOpenDDEInputForms(t *testing.T) {
	t.Parallel()
	s := startServer(t, withOpenDDE(t, openDDERoot(t, false)))
	tests := []struct {
		name   string
		body   map[string]any
		chains float64
		msa    bool
	}{
		{"FASTA of an antibody and its antigen", map[string]any{"model": "opendde",
			"input": ">H|protein\nEVQLVESGGGLVQPGGSLRLSCAAS\n>L|protein\nDIQMTQSPSSLSASVGDRVTITC\n>X|protein\nMKTAYIAKQRQISFVKSHFSRQ\n"}, 3, true},
		{"YAML with a modification and copies", map[string]any{"model": "opendde",
			"input": "sequences:\n  - protein:\n      id: [A, B]\n      sequence: MKTAYIAK\n      msa: empty\n      modifications:\n        - {position: 3, ccd: TPO}\n"}, 2, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := s.create("/v1/predictions", tt.body)
			s.waitStatus(id, "succeeded")
			rows, _ := s.rowsOf(id)
			row := rows["target_1"]
			mustf(t, row["status"] == "ok" && row["n_chains"] == tt.chains && row["msa"] == tt.msa && row["iptm"] != nil, "row %v", row)
		})
	}
}

func TestOpenDDETargetsWithFailures(t *testing.T) {
	t.Parallel()
	s := startServer(t, withOpenDDE(t, openDDERoot(t, false)))
	id := s.create("/v1/predictions", map[string]any{"model": "opendde", "params": map[string]any{"use_msa_server": false}, "targets": []map[string]any{
		{"name": "good", "content": ">A\nMKTAYIAKQRQISFVKSHFSRQ\n"},
		{"name": "fail-me", "content": ">A\nMKTAYIAK\n"},
		{"name": "oom-big", "content": ">A\nMKTAYIAK\n"},
	}})
	s.waitStatus(id, "succeeded")
	rows, _ := s.rowsOf(id)
	mustf(t, rows["good"]["status"] == "ok" && rows["fail-me"]["status"] == "failed" && rows["oom-big"]["status"] == "failed", "rows %v", rows)
	mustf(t, strings.HasPrefix(rows["fail-me"]["error"].(string), "opendde failed on it: Could not parse ligand SMILES"), "row %v", rows["fail-me"])

	all := s.create("/v1/predictions", map[string]any{"model": "opendde", "targets": []map[string]any{
		{"name": "fail-me", "content": ">A|protein\nMKTAYIAK\n"}, {"name": "oom-big", "content": ">A|protein\nMKTAYIAR\n"}}})
	j := s.waitStatus(all, "failed")
	mustf(t, strings.HasPrefix(j["error"].(string), "opendde predicted none of the 2 target(s)"), "error %q", j["error"])
}

func TestOpenDDECancelStopsTheProcessTree(t *testing.T) {
	t.Parallel()
	cancelStopsTheProcessTree(t, startServer(t, withOpenDDE(t, openDDERoot(t, false))), "opendde")
}

// TestOpenDDEAbAgNeedsItsCheckpoint: without opendde_abag.pt in OpenDDE's data folder,
// opendde is offered and opendde-abag is not, and its 503 says what is missing without the
// server's paths.
func TestOpenDDEAbAgNeedsItsCheckpoint(t *testing.T) {
	t.Parallel()
	root := openDDERoot(t, false)
	s := startServer(t, withOpenDDE(t, root))
	models := s.get("/v1/models").expect(http.StatusOK).json()
	for _, m := range models["models"].([]any) {
		m := m.(map[string]any)
		mustf(t, (m["id"] == "opendde") == (m["available"] == true), "%s available %v", m["id"], m["available"])
	}
	detail := s.post("/v1/predictions", map[string]any{"model": "opendde-abag", "sequence": "MKTAYIAK"}).problem(http.StatusServiceUnavailable, "unavailable")
	mustf(t, strings.Contains(detail, "opendde_abag.pt") && !strings.Contains(detail, root), "503 detail %q", detail)
}

// TestOpenDDERefusals is the table of inputs opendde and opendde-abag refuse at submit.
func TestOpenDDERefusals(t *testing.T) {
	t.Parallel()
	s := startServer(t, withOpenDDE(t, openDDERoot(t, true)))
	input := func(model, text string) string {
		b, _ := json.Marshal(map[string]any{"model": model, "input": text})
		return string(b)
	}
	wantRefused(t, s, []refusal{
		{"a ligand", input("opendde", ">A|protein\nMKTAY\n>L|smiles\nCCO\n"), []string{"chain L is a ligand, which opendde does not take"}},
		{"an ion", input("opendde-abag", "sequences:\n  - protein: {id: A, sequence: MKTAY}\n  - ligand: {id: M, ccd: MG}\n"), []string{"chain M is a ligand, which opendde-abag does not take"}},
		{"DNA", input("opendde", ">A|protein\nMK\n>D|dna\nACGT\n"), []string{"chain D is DNA, which opendde does not take"}},
		{"RNA", input("opendde-abag", ">A|protein\nMK\n>R|rna\nACGU\n"), []string{"chain R is RNA, which opendde-abag does not take"}},
		{"selenocysteine", input("opendde", ">A|protein\nMKUAY\n"), []string{"residue 3 is U, which opendde does not read"}},
		{"cyclic", input("opendde", "sequences:\n  - protein: {id: A, sequence: MKTAY, cyclic: true}\n"), []string{"chain A is cyclic, which opendde does not take"}},
	})
}
