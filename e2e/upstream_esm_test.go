package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/app"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/pydriver"
	"github.com/chaperone-bio/chaperone/engine/pydriver/pydrivertest"
	"github.com/chaperone-bio/chaperone/internal/realtools"
	"github.com/chaperone-bio/chaperone/internal/testpython"
)

// embedSequences are an embedding job's sequences: three of like length that share one
// padded forward pass (and so test the padding mask) and one short one in a pass of its own.
var embedSequences = []map[string]any{
	{"id": "long", "sequence": "MKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQ"},
	{"id": "mid", "sequence": "ACDEFGHIKLMNPQRSTVWYACDEFGHIKLM"},
	{"id": "near", "sequence": "MSKGEELFTGVVPILVELDGDVNGHKFS"},
	{"id": "short", "sequence": "MKVLAAGIVG"},
}

// TestUpstreamEmbeddingsAreTheModelsOwn runs embedding jobs through the server over HTTP with
// the pinned esm and transformers on the CPU, on an ESM C and a SaProt built by the test with
// the real packages (random weights, the catalog's widths, two layers) and named by folder
// (--tool esmc-300m=DIR): for every pool and both formats, every vector equals what the
// model's own documented call gives for that sequence alone (direct.py: esm's ESMC client;
// SaProt's EsmForMaskedLM and its last hidden state), and one driver loads each model once
// for all of them. Equal means to float32 rounding: a sequence padded in a batch goes
// through attention with a mask, which sums in another order than the same sequence alone
// (up to 3e-6 on these models' values, which are of order 1).
func TestUpstreamEmbeddingsAreTheModelsOwn(t *testing.T) {
	esm := realtools.Require(t, "esm")
	transformers := realtools.Require(t, "transformers")
	realtools.Isolate(t)
	t.Setenv("HF_HUB_OFFLINE", "1")
	folders := map[string]string{
		"esmc-300m":   pydrivertest.TinyModel(t, esm, "esmc", pydrivertest.ESMC300M),
		"saprot-650m": pydrivertest.TinyModel(t, transformers, "saprot", pydrivertest.SaProt),
	}
	s := startServer(t, func(c *app.Config) {
		c.Engines = []engine.Engine{pydriver.ESM(), pydriver.Transformers()}
		c.Tools = engine.Tools{"esm": esm.Python(), "transformers": transformers.Python(),
			"esmc-300m": folders["esmc-300m"], "saprot-650m": folders["saprot-650m"]}
		c.Slots = 1
	})
	seqs := filepath.Join(t.TempDir(), "sequences.json")
	b, _ := json.Marshal(embedSequences)
	if err := os.WriteFile(seqs, b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		model, kind string
		env         realtools.Env
	}{
		{"esmc-300m", "esmc", esm},
		{"saprot-650m", "saprot", transformers},
	} {
		var lastLog string
		var jobs, names []string
		for _, pool := range []string{"mean", "max", "cls"} {
			for _, format := range []string{"npz", "parquet"} {
				name := fmt.Sprintf("%s %s %s", tc.model, pool, format)
				start := time.Now()
				id := s.create("/v1/embeddings", map[string]any{"model": tc.model, "sequences": embedSequences,
					"params": map[string]any{"pool": pool, "format": format}})
				j := s.waitFor(id, 5*time.Minute, func(j map[string]any) bool { return j["status"] == "succeeded" || j["status"] == "failed" })
				lastLog = string(s.get("/v1/jobs/" + id + "/logs").expect(http.StatusOK).Body)
				mustf(t, j["status"] == "succeeded", "%s: %v\n%s", name, j, realtools.LastLines(lastLog, 40))
				t.Logf("%s: %s", name, time.Since(start).Round(time.Millisecond))
				dir := t.TempDir()
				res := s.get("/v1/jobs/" + id + "/results").expect(http.StatusOK).json()
				for _, a := range res["artifacts"].([]any) {
					a := a.(map[string]any)
					body := s.get(a["url"].(string)).expect(http.StatusOK).Body
					if err := os.WriteFile(filepath.Join(dir, a["path"].(string)), body, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				jobs, names = append(jobs, pool, format, dir), append(names, name)
			}
		}
		var compared []struct {
			MaxAbsDiff struct {
				PerResidue float64 `json:"per_residue"`
				Pooled     float64 `json:"pooled"`
			} `json:"max_abs_diff"`
			Sequences  int
			SplitWrong []string `json:"split_wrong"`
			MEME       []string `json:"M#E#"`
		}
		tc.env.RunJSON(t, &compared, pydrivertest.Upstream("direct.py"), append([]string{tc.kind, folders[tc.model], seqs}, jobs...)...)
		mustf(t, len(compared) == len(names), "direct.py compared %d jobs of %d", len(compared), len(names))
		for i, got := range compared {
			t.Logf("%s: max |Δ| per residue %.2g, pooled %.2g", names[i], got.MaxAbsDiff.PerResidue, got.MaxAbsDiff.Pooled)
			mustf(t, got.Sequences == len(embedSequences), "%s: direct.py compared %d sequences", names[i], got.Sequences)
			mustf(t, got.MaxAbsDiff.PerResidue <= 1e-5 && got.MaxAbsDiff.Pooled <= 1e-5,
				"%s: the server's vectors differ from direct calls by %v", names[i], got.MaxAbsDiff)
			if tc.kind == "saprot" {
				mustf(t, len(got.SplitWrong) == 0 && strings.Join(got.MEME, " ") == "M# E#",
					"SaProt's tokenizer: M#E# is %v; split wrongly: %v", got.MEME, got.SplitWrong)
			}
		}
		mustf(t, strings.Contains(lastLog, "(1 loads since the driver started)"),
			"six jobs of %s loaded it more than once:\n%s", tc.model, realtools.LastLines(lastLog, 20))
	}
}

// TestUpstreamESMFold2EndToEnd folds through the server over HTTP with the pinned esm on the
// CPU: a small ESMFold2 built by the test from esm's own config with random weights and its
// ESM C backbone bundled, named by folder (--tool esmfold2=DIR), with the ccd.pkl beside it.
// A monomer (also aligned by the alignment stage on a stand-in ColabFold server: esm
// reads the A3M the engine makes of what it searched), a complex with an alignment on one chain (and a phosphoserine in mmCIF; esm's
// PDB writer drops modified residues, so a PDB with one is refused at submit), as mmCIF and PDB:
// every job succeeds, gemmi reads every structure, the row's pLDDT is on 0..1 and the
// structures carry it ×100 as B-factors (esm's convention), and the PAE is tokens × tokens.
func TestUpstreamESMFold2EndToEnd(t *testing.T) {
	esm := realtools.Require(t, "esm")
	python := testpython.Require(t, "gemmi", "numpy")
	realtools.Isolate(t)
	t.Setenv("HF_HUB_OFFLINE", "1")
	folder := pydrivertest.TinyESMFold2(t, esm)
	s := startServer(t, func(c *app.Config) {
		c.Engines = []engine.Engine{pydriver.ESM()}
		c.Tools = engine.Tools{"esm": esm.Python(), "esmfold2": folder}
		c.Slots = 1
	})
	complexTarget := "version: 1\nsequences:\n  - protein:\n      id: A\n      sequence: MKTAYIAKQR\n" +
		"      modifications:\n        - {position: 3, ccd: SEP}\n" +
		"      msa: |\n        >query\n        MKTAYIAKQR\n        >hit\n        MKTSYLAKQR\n  - protein: {id: B, sequence: GSGSGSGS}\n"
	for _, tc := range []struct {
		name   string
		body   map[string]any
		chains string // as gemmi reads them: chain and residue count
		// tokens: one a standard residue, one an atom of a modified one (SEP: 10 without
		// its leaving atom).
		tokens   int
		residues float64
	}{
		{"monomer as mmCIF", map[string]any{"sequence": "MKTAYIAKQRQISF", "params": map[string]any{"diffusion_samples": 2}},
			"A 14", 14, 14},
		{"monomer aligned on the MSA server", map[string]any{"sequence": "MKTAYIAKQRQISF", "params": map[string]any{"use_msa_server": true}},
			"A 14", 14, 14},
		{"complex as PDB", map[string]any{"targets": []any{map[string]any{"name": "target_1",
			"content": strings.Replace(complexTarget, "      modifications:\n        - {position: 3, ccd: SEP}\n", "", 1)}},
			"params": map[string]any{"output_format": "pdb", "write_pae": true}},
			"A 10 B 8", 18, 18},
		{"complex as mmCIF", map[string]any{"targets": []any{map[string]any{"name": "target_1", "content": complexTarget}}},
			"A 10 B 8", 17 + 10, 18},
	} {
		body := map[string]any{"model": "esmfold2", "name": tc.name}
		for k, v := range tc.body {
			body[k] = v
		}
		params, _ := body["params"].(map[string]any)
		if params == nil {
			params = map[string]any{}
		}
		params["recycling_steps"], params["sampling_steps"] = 1, 10
		body["params"] = params
		start := time.Now()
		id := s.create("/v1/predictions", body)
		j := s.waitFor(id, 5*time.Minute, func(j map[string]any) bool { return j["status"] == "succeeded" || j["status"] == "failed" })
		logs := string(s.get("/v1/jobs/" + id + "/logs").expect(http.StatusOK).Body)
		mustf(t, j["status"] == "succeeded", "%s: %v\n%s", tc.name, j, realtools.LastLines(logs, 40))
		rows, arts := s.rowsOf(id)
		row := rows["target_1"]
		plddt, _ := row["plddt"].(float64)
		_, ptm := row["ptm"].(float64)
		mustf(t, row["status"] == "ok" && row["n_residues"] == tc.residues && plddt > 0 && plddt <= 1 && ptm, "%s: row %v", tc.name, row)
		t.Logf("%s: %s, pLDDT %.3f, pTM %v, ipTM %v", tc.name, time.Since(start).Round(time.Millisecond), plddt, row["ptm"], row["iptm"])
		urls := map[string]string{}
		for _, a := range arts {
			a := a.(map[string]any)
			urls[a["path"].(string)] = a["url"].(string)
		}
		format := "cif"
		if params["output_format"] == "pdb" {
			format = "pdb"
		}
		structure := s.download(urls["target_1."+format], "target_1."+format)
		out, err := exec.Command(python, "-c", gemmiBFactors, structure).CombinedOutput()
		mustf(t, err == nil, "gemmi read %s: %v\n%s", tc.name, err, out)
		var read struct {
			Chains       string
			MinB, MaxB   float64
			MeanResidueB float64 `json:"mean_residue_b"`
		}
		if err := json.Unmarshal(out, &read); err != nil {
			t.Fatalf("%s: %s: %v", tc.name, out, err)
		}
		mustf(t, read.Chains == tc.chains, "%s: gemmi read chains %q; want %q", tc.name, read.Chains, tc.chains)
		mustf(t, read.MinB >= 0 && read.MaxB <= 100 && read.MaxB > 1, "%s: B-factors %v..%v; want pLDDT × 100", tc.name, read.MinB, read.MaxB)
		if tc.tokens == int(tc.residues) { // one token a residue: the mean of the B-factors is the row's pLDDT × 100
			mustf(t, math.Abs(read.MeanResidueB/100-plddt) < 0.01, "%s: mean B %v; row pLDDT %v", tc.name, read.MeanResidueB, plddt)
		}
		if params["use_msa_server"] == true {
			mustf(t, row["msa"] == true && s.msa.Total() == 1 && strings.Contains(logs, "alignment of target_1 chain A: searched by the alignment stage (server "+s.msa.URL),
				"%s: row msa %v, %d searches; log:\n%s", tc.name, row["msa"], s.msa.Total(), realtools.LastLines(logs, 30))
		}
		pae := s.download(urls["target_1/pae.npz"], "pae.npz")
		out, err = exec.Command(python, "-c", `import numpy, sys
a = numpy.load(sys.argv[1])["pae"]
print(a.dtype, a.shape, bool((a >= 0).all()))`, pae).CombinedOutput()
		want := fmt.Sprintf("float32 (%d, %d) True", tc.tokens, tc.tokens)
		mustf(t, err == nil && strings.TrimSpace(string(out)) == want, "%s: PAE %s (%v); want %s", tc.name, out, err, want)
	}
}

// gemmiBFactors prints, as gemmi reads a structure, its chains with their residue counts and
// the B-factors: their range and the mean over residues of each residue's first atom.
const gemmiBFactors = `
import json, sys, gemmi
st = gemmi.read_structure(sys.argv[1])
bs = [a.b_iso for ch in st[0] for r in ch for a in r]
firsts = [r[0].b_iso for ch in st[0] for r in ch]
print(json.dumps({"chains": " ".join(f"{ch.name} {len(ch)}" for ch in st[0]), "minb": min(bs), "maxb": max(bs),
                  "mean_residue_b": sum(firsts) / len(firsts)}))
`
