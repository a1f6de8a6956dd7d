package e2e

import (
	"encoding/json"
	"math"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"github.com/chaperone-bio/chaperone/internal/testpython"
)

// standInPLDDT is the stand-in ESMFold2's mean pLDDT of sample k over n residues (see its
// esm/models/esmfold2), plus 0.1 when a chain had an alignment.
func standInPLDDT(n, k int, msa bool) float64 {
	sum := 0.0
	for i := range n {
		sum += 0.5 + 0.01*float64(i%40) + 0.02*float64(k)
	}
	if msa {
		sum += 0.1 * float64(n)
	}
	return sum / float64(n)
}

func near(a any, b float64) bool { f, ok := a.(float64); return ok && math.Abs(f-b) < 1e-5 }

func TestESMFold2RanksSamplesByPTM(t *testing.T) {
	t.Parallel()
	s := startServer(t, withPyDriver(t))
	for _, model := range []string{"esmfold2", "esmfold2-fast"} {
		id := s.create("/v1/predictions", map[string]any{"model": model, "sequence": "MKTAYIAKQRQISF",
			"params": map[string]any{"diffusion_samples": 3}})
		s.waitStatus(id, "succeeded")
		rows, arts := s.rowsOf(id)
		row := rows["target_1"]
		// The stand-in's samples score pTM 0.6, 0.8, 0.5: sample 1 is best, then 0, then 2.
		mustf(t, row["status"] == "ok" && row["samples"] == 3.0 && row["n_chains"] == 1.0 && row["n_residues"] == 14.0 && row["msa"] == false,
			"%s row %v", model, row)
		mustf(t, near(row["ptm"], 0.8) && near(row["confidence_score"], 0.8) && row["iptm"] == nil && near(row["plddt"], standInPLDDT(14, 1, false)),
			"%s row scores %v", model, row)
		urls := map[string]string{}
		for _, a := range arts {
			a := a.(map[string]any)
			urls[a["path"].(string)] = a["url"].(string)
		}
		for _, path := range []string{"target_1.cif", "target_1_sample_1.cif", "target_1_sample_2.cif", "target_1/pae.npz", "target_1/confidence.json"} {
			mustf(t, urls[path] != "", "%s: no artifact %s in %v", model, path, urls)
		}
		mustf(t, strings.HasPrefix(string(s.get(urls["target_1.cif"]).expect(http.StatusOK).Body), "data_target_1"), "%s: best structure", model)
		var conf []map[string]any
		if err := json.Unmarshal(s.get(urls["target_1/confidence.json"]).expect(http.StatusOK).Body, &conf); err != nil {
			t.Fatal(err)
		}
		mustf(t, len(conf) == 3 && conf[0]["sample"] == 1.0 && conf[1]["sample"] == 0.0 && conf[2]["sample"] == 2.0, "%s: rank order %v", model, conf)

		// The best sample's PAE (sample 1: |i-j|/4 + 1), read with numpy.
		python := testpython.Require(t, "numpy")
		out, err := exec.Command(python, "-c", `import numpy, sys
a = numpy.load(sys.argv[1])["pae"]
print(a.dtype, a.shape, a[0, 4], a[3, 3])`, s.download(urls["target_1/pae.npz"], "pae.npz")).CombinedOutput()
		mustf(t, err == nil && strings.TrimSpace(string(out)) == "float32 (14, 14) 2.0 1.0", "%s: numpy read the PAE as %s (%v)", model, out, err)
	}
}

func TestESMFold2FoldsAComplexWithAnInlineAlignmentAsPDB(t *testing.T) {
	t.Parallel()
	s := startServer(t, withPyDriver(t))
	target := "version: 1\nsequences:\n  - protein:\n      id: [A, B]\n      sequence: MKTAYIAKQR\n" +
		"      msa: |\n        >query\n        MKTAYIAKQR\n        >hit\n        MKTAYLAKQR\n  - protein: {id: C, sequence: GSGSG}\n"
	id := s.create("/v1/predictions", map[string]any{"model": "esmfold2", "targets": []any{map[string]any{"name": "dimer", "content": target}},
		"params": map[string]any{"output_format": "pdb"}})
	s.waitStatus(id, "succeeded")
	rows, arts := s.rowsOf(id)
	row := rows["dimer"]
	mustf(t, row["status"] == "ok" && row["n_chains"] == 3.0 && row["n_residues"] == 25.0 && row["msa"] == true && row["samples"] == 1.0,
		"row %v", row)
	mustf(t, near(row["ptm"], 0.6) && near(row["iptm"], 0.4) && near(row["plddt"], standInPLDDT(25, 0, true)), "row scores %v", row)
	var pdb string
	for _, a := range arts {
		if a := a.(map[string]any); a["path"] == "dimer.pdb" {
			pdb = string(s.get(a["url"].(string)).expect(http.StatusOK).Body)
		}
	}
	mustf(t, strings.Count(pdb, "\nATOM  ")+1 == 25 && strings.HasPrefix(pdb, "ATOM  "), "dimer.pdb:\n%s", pdb)
}

func TestESMFold2FailsATargetNotTheJob(t *testing.T) {
	t.Parallel()
	s := startServer(t, withPyDriver(t))
	id := s.create("/v1/predictions", map[string]any{"model": "esmfold2", "targets": []any{
		map[string]any{"name": "good", "content": ">A|protein\nMKTAYIAKQR\n"},
		map[string]any{"name": "bad", "content": ">A|protein\nMEMWALLKQR\n"},
	}})
	s.waitStatus(id, "succeeded")
	rows, _ := s.rowsOf(id)
	mustf(t, rows["good"]["status"] == "ok" && rows["bad"]["status"] == "failed" && strings.Contains(rows["bad"]["error"].(string), "out of memory"),
		"rows %v", rows)
}

func TestESMFold2RequestsItCannotTakeAre400(t *testing.T) {
	t.Parallel()
	s := startServer(t, withPyDriver(t))
	msa := "version: 1\nsequences:\n  - protein:\n      id: A\n      sequence: MKTAYIAKQR\n      msa: |\n        >query\n        MKTAYIAKQR\n"
	for _, tc := range []struct {
		name string
		body map[string]any
		want string
	}{
		{"an alignment for esmfold2-fast", map[string]any{"model": "esmfold2-fast", "targets": []any{map[string]any{"name": "t", "content": msa}}}, "chain A has an alignment, which esmfold2-fast does not take"},
		{"a ligand", map[string]any{"model": "esmfold2", "targets": []any{map[string]any{"name": "t",
			"content": "version: 1\nsequences:\n  - protein: {id: A, sequence: MKTAYIAKQR}\n  - ligand: {id: L, ccd: SAH}\n"}}}, "ligand"},
		{"an alignment in CSV", map[string]any{"model": "esmfold2", "targets": []any{map[string]any{"name": "t",
			"content": "version: 1\nsequences:\n  - protein:\n      id: A\n      sequence: MKTAYIAKQR\n      msa: |\n        key,sequence\n        -1,MKTAYIAKQR\n"}}},
			"esmfold2 reads alignments in A3M"},
		{"a modified residue as PDB", map[string]any{"model": "esmfold2", "params": map[string]any{"output_format": "pdb"},
			"targets": []any{map[string]any{"name": "t", "content": "version: 1\nsequences:\n  - protein:\n      id: A\n      sequence: MKTAYIAKQR\n" +
				"      modifications:\n        - {position: 3, ccd: SEP}\n"}}},
			"chain A has a modified residue (SEP), which esmfold2 cannot write as PDB"},
	} {
		detail := s.post("/v1/predictions", tc.body).problem(http.StatusBadRequest, "invalid-input")
		mustf(t, strings.Contains(detail, tc.want), "%s: detail %q; want %q", tc.name, detail, tc.want)
	}
}

func TestESMFold2FoldsWithTheAlignmentsTheStageSearched(t *testing.T) {
	t.Parallel()
	s := startServer(t, withPyDriver(t))
	const seq = "MKTAYIAKQR"
	for i := range 2 {
		id := s.create("/v1/predictions", map[string]any{"model": "esmfold2", "sequence": seq, "params": map[string]any{"use_msa_server": true}})
		s.waitStatus(id, "succeeded")
		rows, _ := s.rowsOf(id)
		row := rows["target_1"]
		mustf(t, row["msa"] == true && near(row["plddt"], standInPLDDT(10, 0, true)), "job %d row %v", i+1, row)
		logs := string(s.get("/v1/jobs/" + id + "/logs").expect(http.StatusOK).Body)
		// The stand-in server's hits: a substitution, an insertion and a deletion (uniref),
		// and a truncation (environmental), with the query's row once.
		for _, want := range []string{"alignment of target_1 chain A: searched by the alignment stage (server " + s.msa.URL, "chain A reads 4 rows, the first " + seq} {
			mustf(t, strings.Contains(logs, want), "job %d: the log lacks %q:\n%s", i+1, want, logs)
		}
	}
	mustf(t, s.msa.Searches(seq) == 1, "%d searches on the server for two jobs; want 1", s.msa.Searches(seq))
}
