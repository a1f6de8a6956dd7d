package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/app"
	"github.com/chaperone-bio/chaperone/catalog"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/boltz"
	"github.com/chaperone-bio/chaperone/engine/boltz/boltztest"
	"github.com/chaperone-bio/chaperone/internal/testpython"
)

// The stand-in boltz is built once per test binary; TestMain removes it.
var (
	standInOnce sync.Once
	standInDir  string
	standInPath string
	standInErr  error
)

func boltzStandIn(t *testing.T) string {
	t.Helper()
	standInOnce.Do(func() {
		if standInDir, standInErr = os.MkdirTemp("", "e2e-boltz-"); standInErr == nil {
			standInPath, standInErr = boltztest.Build(standInDir)
		}
	})
	if standInErr != nil {
		t.Fatal(standInErr)
	}
	return standInPath
}

func removeStandIn() {
	if standInDir != "" {
		os.RemoveAll(standInDir)
	}
}

// withBoltz runs boltz2 on the real boltz engine, with the stand-in as its tool, instead
// of on the test engine.
func withBoltz(t *testing.T) option {
	path := boltzStandIn(t)
	return func(c *app.Config) {
		c.Engines = []engine.Engine{boltz.New(boltz.Config{})}
		c.Tools = engine.Tools{"boltz": path}
	}
}

// rowsOf returns the rows of a ready prediction by target id.
func (s *server) rowsOf(id string) (map[string]map[string]any, []any) {
	s.t.Helper()
	res := s.get("/v1/jobs/" + id + "/results").expect(http.StatusOK).json()
	rows := map[string]map[string]any{}
	for _, r := range res["rows"].([]any) {
		row := r.(map[string]any)
		rows[row["id"].(string)] = row
	}
	return rows, res["artifacts"].([]any)
}

func TestBoltzRunsASequence(t *testing.T) {
	t.Parallel()
	s := startServer(t, withBoltz(t))
	models := s.get("/v1/models").expect(http.StatusOK).json()
	mustf(t, models["msa_server"] == s.msa.URL, "catalog msa_server %v", models["msa_server"])
	for _, m := range models["models"].([]any) {
		m := m.(map[string]any)
		mustf(t, (m["id"] == "boltz2") == (m["available"] == true), "%s available %v", m["id"], m["available"])
	}

	id := s.create("/v1/predictions", map[string]any{"sequence": "MKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQ",
		"params": map[string]any{"diffusion_samples": 2, "write_pae": true}})
	j := s.waitStatus(id, "succeeded")
	mustf(t, j["stage"] == "writing" && j["progress"] == 1.0 && j["done"] == 1.0 && j["total"] == 1.0, "finished job %v", j)
	rows, arts := s.rowsOf(id)
	row := rows["target_1"]
	mustf(t, row["status"] == "ok" && row["n_chains"] == 1.0 && row["n_residues"] == 33.0 && row["samples"] == 2.0 && row["msa"] == true,
		"row %v", row)
	mustf(t, row["iptm"] == nil && row["plddt"] == row["complex_plddt"] && row["runtime_s"].(float64) > 0, "row scores %v", row)

	byPath := map[string]map[string]any{}
	for _, a := range arts {
		a := a.(map[string]any)
		byPath[a["path"].(string)] = a
		mustf(t, a["target"] == "target_1", "artifact %v", a)
	}
	for path, typ := range map[string]string{"target_1.cif": "structure", "target_1_sample_1.cif": "structure",
		"target_1/confidence_target_1_model_0.json": "confidence", "target_1/confidence_target_1_model_1.json": "confidence",
		"target_1/pae_target_1_model_0.npz": "pae", "target_1/plddt_target_1_model_1.npz": "confidence"} {
		mustf(t, byPath[path] != nil && byPath[path]["type"] == typ, "artifact %s of type %s missing: %v", path, typ, byPath)
	}
	cif := s.get(byPath["target_1.cif"]["url"].(string)).expect(http.StatusOK)
	mustf(t, cif.Header.Get("Content-Type") == "chemical/x-cif" && strings.HasPrefix(string(cif.Body), "data_target_1"), "best structure %.60q", cif.Body)
	var conf map[string]any
	if err := json.Unmarshal(s.get(byPath["target_1/confidence_target_1_model_0.json"]["url"].(string)).expect(http.StatusOK).Body, &conf); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"confidence_score", "ptm", "iptm", "ligand_iptm", "protein_iptm", "complex_plddt",
		"complex_iplddt", "complex_pde", "complex_ipde", "chains_ptm", "pair_chains_iptm"} {
		mustf(t, conf[k] != nil, "confidence JSON lacks %s: %v", k, conf)
	}
	mustf(t, conf["confidence_score"] == row["confidence_score"], "the row's confidence_score %v is not model 0's %v", row["confidence_score"], conf["confidence_score"])

	// numpy, a reader that shares nothing with the engine, opens the PAE as Boltz's users do.
	pae := filepath.Join(t.TempDir(), "pae.npz")
	if err := os.WriteFile(pae, s.get(byPath["target_1/pae_target_1_model_0.npz"]["url"].(string)).expect(http.StatusOK).Body, 0o644); err != nil {
		t.Fatal(err)
	}
	python := testpython.Require(t, "numpy")
	out, err := exec.Command(python, "-c", "import numpy, sys; a = numpy.load(sys.argv[1])['pae']; print(a.dtype, a.shape)", pae).CombinedOutput()
	mustf(t, err == nil && strings.TrimSpace(string(out)) == "float32 (33, 33)", "numpy read the PAE as %s (%v)", out, err)

	logs := string(s.get("/v1/jobs/" + id + "/logs").expect(http.StatusOK).Body)
	// The alignment was searched by chaperone's alignment stage before the job ran, and
	// handed to Boltz, which never searches itself.
	mustf(t, !strings.Contains(logs, "--use_msa_server") && !strings.Contains(logs, "Calling MSA server"), "Boltz searched:\n%s", logs)
	for _, want := range []string{"[chaperone] target_1: alignments of chain A searched by chaperone's alignment stage (server " + s.msa.URL,
		"--diffusion_samples 2", "--accelerator cpu", "Number of failed examples: 0"} {
		mustf(t, strings.Contains(logs, want), "the log lacks %q:\n%s", want, logs)
	}

	// The same sequence again: its alignment is handed over again, whatever the alignment
	// stage took it from.
	again := s.create("/v1/predictions", map[string]any{"sequence": "MKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQ"})
	s.waitStatus(again, "succeeded")
	logs = string(s.get("/v1/jobs/" + again + "/logs").expect(http.StatusOK).Body)
	mustf(t, !strings.Contains(logs, "--use_msa_server") && strings.Contains(logs, "alignments of chain A searched by chaperone's alignment stage"),
		"the second job's alignment:\n%s", logs)
	rows, _ = s.rowsOf(again)
	mustf(t, rows["target_1"]["msa"] == true, "row %v", rows["target_1"])
	mustf(t, s.msa.Searches("MKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQ") == 1, "the chain was searched %d times for two jobs; want 1",
		s.msa.Searches("MKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQ"))
}

func TestBoltzInputForms(t *testing.T) {
	t.Parallel()
	s := startServer(t, withBoltz(t))
	yamlInput := "version: 1\nsequences:\n  - protein:\n      id: A\n      sequence: MVTPEGNVSLVDESLLVGVTDEDRAVRSAHQFYERLIG\n      msa: empty\n" +
		"  - ligand:\n      id: B\n      smiles: 'N[C@@H](Cc1ccc(O)cc1)C(=O)O'\nproperties:\n  - affinity:\n      binder: B\n"
	tests := []struct {
		name   string
		body   map[string]any
		chains float64
		check  func(row map[string]any) bool
	}{
		{"Boltz YAML with affinity", map[string]any{"input": yamlInput}, 2, func(row map[string]any) bool {
			for _, k := range []string{"affinity_pred_value", "affinity_probability_binary", "affinity_pred_value1",
				"affinity_probability_binary1", "affinity_pred_value2", "affinity_probability_binary2"} {
				if _, ok := row[k].(float64); !ok {
					return false
				}
			}
			return row["msa"] == false && row["iptm"] != nil
		}},
		{"FASTA with Boltz headers", map[string]any{"input": ">A|protein|empty\nMKTAYIAKQR\n>B|dna\nACGTACGT\n>C|ccd\nSAH\n"}, 3,
			func(row map[string]any) bool { return row["n_residues"] == 19.0 && row["affinity_pred_value"] == nil }},
		{"plain FASTA", map[string]any{"input": ">sp|P69905|HBA_HUMAN\nMVLSPADKTNVKAAWGKV\n>beta\nMVHLTPEEKSAV\n", "params": map[string]any{"use_msa_server": false}}, 2,
			func(row map[string]any) bool { return row["n_residues"] == 30.0 && row["msa"] == false }},
		{"YAML with an inline alignment and template", map[string]any{"input": "sequences:\n  - protein:\n      id: [A, B]\n      sequence: MKTAYIAK\n" +
			"      msa: |\n        >query\n        MKTAYIAK\n        >hit\n        MKT-YIsAK\n" +
			"templates:\n  - pdb: |\n      ATOM      1  CA  MET A   1      11.104   6.134  -6.504  1.00  0.00           C\n    chain_id: A\n"}, 2,
			func(row map[string]any) bool { return row["msa"] == true && row["n_residues"] == 16.0 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := s.create("/v1/predictions", tt.body)
			s.waitStatus(id, "succeeded")
			rows, arts := s.rowsOf(id)
			row := rows["target_1"]
			mustf(t, row["status"] == "ok" && row["n_chains"] == tt.chains && tt.check(row), "row %v", row)
			if tt.name == "Boltz YAML with affinity" {
				mustf(t, strings.Contains(fmt.Sprint(arts), "target_1/affinity_target_1.json"), "no affinity artifact in %v", arts)
			}
		})
	}
}

func TestBoltzTargetsWithFailures(t *testing.T) {
	t.Parallel()
	s := startProxied(t, withBoltz(t))
	id := s.create("/v1/predictions", map[string]any{"params": map[string]any{"use_msa_server": false}, "targets": []map[string]any{
		{"name": "lysozyme", "content": ">A\nKVFGRCELAAAMKRHGLDNYRGYSLGNWVCAAKFESNFNTQATNRNTDGSTDYGILQINSRWWCNDG\n"},
		{"name": "skip-me", "content": ">A\nMKTAYIAK\n"},
		{"name": "oom-big", "content": ">A\nMKTAYIAK\n"},
		{"content": "sequences:\n  - protein: {id: [A, B], sequence: GSGSGSGS}\n"},
	}})
	j := s.waitStatus(id, "succeeded")
	mustf(t, j["total"] == 4.0, "total %v", j["total"])
	rows, arts := s.rowsOf(id)
	mustf(t, len(rows) == 4 && rows["lysozyme"]["status"] == "ok" && rows["target_4"]["status"] == "ok" && rows["target_4"]["n_chains"] == 2.0, "rows %v", rows)
	mustf(t, rows["skip-me"]["status"] == "failed" &&
		rows["skip-me"]["error"] == "Boltz could not process the input and skipped it: Invalid SMILES for ligand: simulated parse failure", "skipped row %v", rows["skip-me"])
	mustf(t, rows["oom-big"]["status"] == "failed" && strings.Contains(rows["oom-big"]["error"].(string), "ran out of memory"), "oom row %v", rows["oom-big"])
	for _, a := range arts {
		target := a.(map[string]any)["target"]
		mustf(t, target == "lysozyme" || target == "target_4", "artifact of a failed target: %v", a)
	}
	names := zipNames(t, s.get("/v1/jobs/"+id+"/archive").expect(http.StatusOK).Body)
	mustf(t, names["lysozyme.cif"] && names["target_4.cif"] && names["results.json"], "archive %v", names)

	// The CLI passes the rows on as the API sent them, and shows no score for a target
	// that has none.
	var api, printed any
	mustf(t, json.Unmarshal(s.get("/v1/jobs/"+id+"/results").expect(http.StatusOK).Body, &api) == nil, "results JSON")
	r := s.runCLI(t, "", nil, "jobs", "results", id, "--json").expect(t, exitOK)
	mustf(t, json.Unmarshal([]byte(r.stdout), &printed) == nil && reflect.DeepEqual(printed, api),
		"jobs results --json is not the API's manifest:\n api: %v\n cli: %s", api, r.stdout)
	r = s.runCLI(t, "", nil, "jobs", "results", id).expect(t, exitOK)
	for line := range strings.Lines(r.stdout) {
		if f := strings.Fields(line); len(f) > 4 && (f[0] == "skip-me" || f[0] == "oom-big") {
			mustf(t, f[1] == "failed" && f[2] == "-" && f[3] == "-" && f[4] == "-", "a failed target's scores: %q", line)
		}
	}
}

func TestBoltzJobFails(t *testing.T) {
	t.Parallel()
	s := startServer(t, withBoltz(t))
	tests := []struct {
		name, target, error string
	}{
		{"every target skipped", "skip-all", "boltz predicted none of the 1 target(s): skip-all: Boltz could not process the input and skipped it: Invalid SMILES"},
		{"the tool crashes", "crash", "boltz failed: exit code 1; last output:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := s.create("/v1/predictions", map[string]any{"targets": []map[string]any{{"name": tt.target, "content": ">A\nMKTAYIAK\n"}}})
			j := s.waitStatus(id, "failed")
			mustf(t, strings.Contains(j["error"].(string), tt.error), "error %q, want %q", j["error"], tt.error)
			if tt.target == "crash" {
				mustf(t, strings.Contains(j["error"].(string), "CUDA error: an illegal memory access"), "error %q lacks the traceback", j["error"])
			}
		})
	}
}

func TestBoltzCancelStopsTheProcessTree(t *testing.T) {
	t.Parallel()
	s := startServer(t, withBoltz(t))
	id := s.create("/v1/predictions", map[string]any{"targets": []map[string]any{{"name": "slow", "content": ">A\nMKTAYIAK\n"}}})
	pid := waitForPIDFile(t, s.dir, id)
	s.waitFor(id, 20*time.Second, func(j map[string]any) bool { return j["stage"] == "inference" })
	s.post("/v1/jobs/"+id+"/cancel", nil).expect(http.StatusOK)
	j := s.waitStatus(id, "canceled")
	mustf(t, j["stage"] == "inference", "a canceled job keeps its last stage: %v", j)
	waitProcessGone(t, pid, 10*time.Second)
}

// TestBoltzMalformedInputs is the table of prediction inputs that must be refused before
// queueing, each with a 400 whose detail names the field and the problem.
func TestBoltzMalformedInputs(t *testing.T) {
	t.Parallel()
	s := startServer(t, withBoltz(t), withLimits(func(l *catalog.Limits) {
		l.ChainsPerComplex, l.LigandsPerComplex, l.ConstraintsPerComplex, l.TargetsPerJob = 8, 3, 2, 4
	}))
	const prot = "sequences:\n  - protein: {id: A, sequence: MKTAYIAKQR}\n"
	const lig = "  - ligand: {id: L, smiles: CCO}\n"
	const tmplCIF = "    cif: |\n      data_t\n      _atom_site.id 1\n"
	input := func(model, text string, params ...string) string {
		b, _ := json.Marshal(map[string]any{"model": model, "input": text})
		if len(params) > 0 {
			return strings.TrimSuffix(string(b), "}") + `, "params": ` + params[0] + "}"
		}
		return string(b)
	}
	yaml := func(text string) string { return input("boltz2", text) }
	targets := func(contents ...string) string {
		var ts []map[string]string
		for i, c := range contents {
			ts = append(ts, map[string]string{"name": fmt.Sprintf("t%d", i), "content": c})
		}
		b, _ := json.Marshal(map[string]any{"targets": ts})
		return string(b)
	}
	tests := []struct {
		name, body string
		detail     []string
	}{
		{"YAML syntax error", yaml("sequences: [\n"), []string{"input: line 1, column 12: YAML syntax"}},
		{"tab indentation", yaml("sequences:\n\t- protein: {id: A, sequence: MK}\n"), []string{"input: line 2, column 1: YAML syntax"}},
		{"unknown top-level key", yaml(prot + "constrains: []\n"), []string{"input: line 3, column 1", `unknown key "constrains"`, "constraints"}},
		{"unknown entity type", yaml("sequences:\n  - peptide: {id: A, sequence: MK}\n"), []string{`unknown type "peptide"`, "protein, dna, rna, ligand"}},
		{"typo in an entity key", yaml("sequences:\n  - protein: {id: A, sequnce: MK}\n"), []string{`unknown key "sequnce"`, "sequence"}},
		{"entity without id", yaml("sequences:\n  - protein: {sequence: MK}\n"), []string{"sequences[0].protein has no id"}},
		{"duplicate chain id", yaml(prot + "  - dna: {id: A, sequence: ACGT}\n"), []string{`input: line 3, column 15: chain id "A" is already used at line 2`}},
		{"chain id too long", yaml("sequences:\n  - protein: {id: CHAINA, sequence: MK}\n"), []string{`chain id "CHAINA" must be 1 to 5 ASCII letters or digits`}},
		{"protein letter that is not an amino acid", yaml("sequences:\n  - protein: {id: A, sequence: MKTJ}\n"), []string{"position 4: 'J' is not an amino-acid letter"}},
		{"U in DNA", yaml("sequences:\n  - dna: {id: D, sequence: ACGU}\n"), []string{"'U' is not a DNA base"}},
		{"T in RNA", yaml("sequences:\n  - rna: {id: R, sequence: ACGT}\n"), []string{"'T' is not an RNA base"}},
		{"empty sequence", yaml("sequences:\n  - protein: {id: A, sequence: ''}\n"), []string{"sequences[0].protein.sequence must be a single value, not empty"}},
		{"ligand with smiles and ccd", yaml("sequences:\n  - ligand: {id: L, smiles: C, ccd: SAH}\n"), []string{"needs exactly one of smiles and ccd"}},
		{"ligand with neither", yaml("sequences:\n  - ligand: {id: L}\n"), []string{"needs exactly one of smiles and ccd"}},
		{"SMILES with an open branch", yaml("sequences:\n  - ligand: {id: L, smiles: 'CC(=O'}\n"), []string{"SMILES character 3: '(' is never closed"}},
		{"SMILES with an unpaired ring bond", yaml("sequences:\n  - ligand: {id: L, smiles: c1cccc}\n"), []string{"ring bond 1 is opened but never closed"}},
		{"SMILES with a made-up element", yaml("sequences:\n  - ligand: {id: L, smiles: '[Zz]'}\n"), []string{`"Zz" does not start an element symbol`}},
		{"malformed CCD code", yaml("sequences:\n  - ligand: {id: L, ccd: 'S-AH'}\n"), []string{`CCD code "S-AH"`}},
		{"msa path", yaml("sequences:\n  - protein: {id: A, sequence: MK, msa: ./examples/msa/seq1.a3m}\n"),
			[]string{"is a path to a file, and the service never reads files on the server", "msa: empty"}},
		{"msa path to a server file", yaml("sequences:\n  - protein: {id: A, sequence: MK, msa: /etc/passwd}\n"), []string{`"/etc/passwd" is a path to a file`}},
		{"template cif path", yaml(prot + "templates:\n  - cif: /data/templates/1abc.cif\n"), []string{`templates[0].cif "/data/templates/1abc.cif" is a path to a file`, "cif: |"}},
		{"template pdb path", yaml(prot + "templates:\n  - pdb: 1abc.pdb\n"), []string{`templates[0].pdb "1abc.pdb" is a path to a file`}},
		{"inline alignment of another sequence", yaml("sequences:\n  - protein:\n      id: A\n      sequence: MKTAYI\n      msa: |\n        >q\n        GGGGGG\n"),
			[]string{"alignment line 2: the first aligned sequence must be the chain's own sequence"}},
		{"inline alignment wrapped over lines", yaml("sequences:\n  - protein:\n      id: A\n      sequence: MKTAYI\n      msa: |\n        >q\n        MKTAYI\n        >h\n        MKT\n        AYI\n"),
			[]string{"each aligned sequence must be on one line"}},
		{"modification past the end", yaml("sequences:\n  - protein: {id: A, sequence: MK, modifications: [{position: 5, ccd: SEP}]}\n"), []string{"position 5 is outside the sequence, whose residues are 1 to 2"}},
		{"cyclic ligand", yaml("sequences:\n  - ligand: {id: L, ccd: SAH, cyclic: true}\n"), []string{"only polymers can be cyclic"}},
		{"bond to a chain that does not exist", yaml(prot + "constraints:\n  - bond: {atom1: [A, 1, CA], atom2: [Q, 1, C1]}\n"), []string{`names chain "Q", which the sequences do not define (chains: A)`}},
		{"pocket on a residue past the end", yaml(prot + lig + "constraints:\n  - pocket: {binder: L, contacts: [[A, 829]]}\n"), []string{"chain A has residues 1 to 10, not 829"}},
		{"contact by atom name on a protein", yaml(prot + lig + "constraints:\n  - contact: {token1: [A, CA], token2: [L, C1]}\n"), []string{"chain A is a protein, so give a residue index (1 to 10)"}},
		{"contact by residue on a ligand", yaml(prot + lig + "constraints:\n  - contact: {token1: [A, 1], token2: [L, 1]}\n"), []string{"chain L is a ligand, so name one of its atoms"}},
		{"pocket closer than Boltz supports", yaml(prot + lig + "constraints:\n  - pocket: {binder: L, contacts: [[A, 1]], max_distance: 2}\n"), []string{"max_distance 2 is outside the 4 to 20 Å that Boltz supports"}},
		{"affinity for a protein", yaml(prot + "properties:\n  - affinity: {binder: A}\n"), []string{"chain A is a protein; affinity is predicted for a ligand chain"}},
		{"affinity for a ligand with copies", yaml(prot + "  - ligand: {id: [L, M], ccd: SAH}\nproperties:\n  - affinity: {binder: L}\n"), []string{"affinity needs a ligand with a single copy"}},
		{"affinity for a chain that does not exist", yaml(prot + "properties:\n  - affinity: {binder: Z}\n"), []string{`binder names chain "Z"`}},
		{"affinity for a ligand another entry repeats", yaml(prot + lig + "  - ligand: {id: M, smiles: CCO}\nproperties:\n  - affinity: {binder: L}\n"),
			[]string{"affinity binder L: chain M is the same ligand"}},
		{"two affinity properties", yaml(prot + lig + "  - ligand: {id: M, smiles: CC}\nproperties:\n  - affinity: {binder: L}\n  - affinity: {binder: M}\n"), []string{"only one affinity property per target"}},
		{"affinity ligand too large", yaml(prot + "  - ligand: {id: L, smiles: '" + strings.Repeat("C", 130) + "'}\nproperties:\n  - affinity: {binder: L}\n"), []string{"has 130 heavy atoms; affinity takes at most 128"}},
		{"more chains than the cap", yaml("sequences:\n  - protein: {id: [A, B, C, D, E, F, G, H, I], sequence: MK}\n"), []string{"input: has 9 chains, over the cap of 8 (chains_per_complex)"}},
		{"more ligands than the cap", yaml("sequences:\n  - ligand: {id: [L, M, N, O], ccd: SAH}\n"), []string{"has 4 ligand chains, over the cap of 3 (ligands_per_complex)"}},
		{"more constraints than the cap", yaml(prot + lig + "constraints:\n" + strings.Repeat("  - contact: {token1: [A, 1], token2: [L, C1]}\n", 3)), []string{"has 3 constraints, over the cap of 2 (constraints_per_complex)"}},
		{"more targets than the cap", targets(">a\nMK", ">a\nMK", ">a\nMK", ">a\nMK", ">a\nMK"), []string{"targets: holds 5 targets, over the cap of 4 (targets_per_job)"}},
		{"more residues than the model takes", yaml("sequences:\n  - protein: {id: [A, B], sequence: " + strings.Repeat("A", 600) + "}\n"), []string{"has 1200 residues over all its chains; boltz2 takes at most 1024 (max_residues)"}},
		{"a ligand on a protein-only model", input("esmfold2", prot+lig), []string{"chain L is a ligand, which esmfold2 does not take; models that do: boltz2, protenix-v2, openfold3"}},
		{"DNA on a protein-only model", input("opendde", ">A|protein\nMK\n>D|dna\nACGT\n"), []string{"chain D is DNA, which opendde does not take"}},
		{"affinity off boltz2", input("protenix-v2", prot+lig+"properties:\n  - affinity: {binder: L}\n"), []string{"the input asks for affinity, which protenix-v2 does not take; models that do: boltz2"}},
		{"constraints off boltz2", input("openfold3", prot+lig+"constraints:\n  - contact: {token1: [A, 1], token2: [L, C1]}\n"), []string{"the input has constraints, which openfold3 does not take"}},
		{"templates off boltz2", input("protenix-v2", prot+"templates:\n  -\n"+tmplCIF), []string{"the input has templates, which protenix-v2 does not take"}},
		{"same sequence with different settings", yaml("sequences:\n  - protein: {id: A, sequence: MK}\n  - protein: {id: B, sequence: MK, cyclic: true}\n"),
			[]string{"chains A and B have the same sequence", "id: [A, B]"}},
		{"two-character chains in PDB output", input("boltz2", "sequences:\n  - protein: {id: AB, sequence: MK}\n", `{"output_format": "pdb"}`), []string{"the PDB format holds one character per chain id"}},
		{"FASTA mixing header forms", yaml(">A|protein\nMK\n>plain\nGG\n"), []string{"input: line 3: header >plain and the header at line 1 use different forms"}},
		{"FASTA header with an MSA path", yaml(">A|protein|/data/a.a3m\nMK\n"), []string{`the MSA field "/data/a.a3m" is a path to a file`}},
		{"FASTA record that is not a protein", yaml(">x\nMK1\n"), []string{"record x: protein sequence position 3: '1'"}},
		{"a bare sequence in input", yaml("MKTAYIAKQR"), []string{"neither FASTA", "use the sequence field"}},
		{"two YAML documents", yaml(prot + "---\n" + prot), []string{"holds 2 YAML documents; send each as its own target"}},
		{"version 2", yaml("version: 2\n" + prot), []string{"version must be 1"}},
		{"a target's error names the target", targets(">a\nMK", "sequences:\n  - protein: {id: A, sequence: MK1}\n"), []string{"targets[1].content: line 2, column 32"}},
		{"a target named like another's samples", `{"targets": [{"name": "x", "content": ">a\nMK"}, {"name": "x_sample_1", "content": ">a\nMK"}]}`,
			[]string{"targets[1].name", "further samples of targets[0]"}},
		{"a target named like another's structure file", `{"targets": [{"name": "x", "content": ">a\nMK"}, {"name": "x.cif", "content": ">a\nMK"}]}`,
			[]string{"targets[1].name", "structure file of targets[0] (x.cif)"}},
	}
	if len(tests) < 40 {
		t.Fatalf("the table has %d cases; it must keep at least 40", len(tests))
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
