package boltzgen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chaperone-bio/chaperone/engine/boltzgen/boltzgentest"
)

// specCase is one design request of our tests, whose inputs the engine writes for BoltzGen.
type specCase struct {
	name, protocol, spec, structure string
}

// knownRefusals are BoltzGen's errors for inputs we accept and it refuses, defects not yet
// fixed; the test checks that each is still refused for that reason.
var knownRefusals = map[string]string{
	// a fixture of the engine's tests, the stand-in's only: atoms without coordinates
	"engine_file_entity": "IndexError",
	// bio's test structure, written to exercise its reader (alternate locations, two
	// models, a ligand and waters in chain A's label chains): BoltzGen's mmCIF reader finds
	// no chain of a label id it lists (data/parse/mmcif.py)
	"bio_file_label_and_author_ids": "KeyError: 'F'",
	"bio_file_twice_insertion":      "KeyError: 'F'",
	// its chain D, one GLY, leaves BoltzGen's PDB reader a sequence for a chain it dropped
	// (data/parse/pdb_parser.py:132-134, patch_chain_names)
	"bio_pdb_target": "KeyError: 'Dxp'",
}

// noPolySeq is BoltzGen's refusal of an mmCIF without the _entity_poly_seq loop, which its
// reader takes the polymers' sequences from (data/parse/mmcif.py:980).
const noPolySeq = "RuntimeError: _entity_poly_seq.entity_id not found in block"

// request is the case's JSON body.
func (c specCase) request() string {
	req := `{"protocol": "` + c.protocol + `", "spec": ` + jsonText(c.spec)
	if c.structure != "" {
		req += `, "structure": ` + jsonText(c.structure)
	}
	return req + `, "params": {"num_designs": 2, "budget": 1}}`
}

// readRepoFile reads a file of the repository, relative to this package.
func readRepoFile(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// designCorpus is every BoltzGen design spec and structure of our tests, by the test it
// comes from, and the inputs the fixes of issue 19 accept.
func designCorpus(t *testing.T) []specCase {
	bioCIF := readRepoFile(t, "bio/testdata/structures/target.cif")
	bioPDB := readRepoFile(t, "bio/testdata/structures/target.pdb")
	e2ePDB := boltzgentest.DesignTarget("")
	const e2eFile = "entities:\n  - protein: {id: H, sequence: 20..30}\n  - file:\n      path: target.pdb\n      include:\n        - chain: {id: A}\n"
	const sah = "entities:\n  - protein: {id: B, sequence: 12..20}\n  - ligand: {id: L, ccd: SAH}\n"
	return []specCase{
		// engine/boltzgen tests
		{"engine_file_entity", "protein-anything", "entities:\n  - protein: {id: B, sequence: 20..30}\n  - file:\n      path: target.cif\n      include:\n        - chain: {id: A}\n", targetCIF},
		{"engine_ligand", "peptide-anything", sah, ""},
		{"engine_sequences_homodimer", "protein-anything", "sequences:\n  - protein: {id: [A, B], sequence: MKTAYIAK}\n", ""},
		{"engine_sequences_protein_dna", "peptide-anything", "sequences:\n  - protein: {id: A, sequence: MKTAYIAK}\n  - dna: {id: D, sequence: ACGT}\n", ""},
		{"engine_sequences_ligands", "protein-small_molecule", "sequences:\n  - ligand: {id: B, ccd: SAH}\n  - ligand: {id: L, smiles: 'CC(=O)O'}\n", ""},
		// e2e/design_test.go, one per protocol
		{"e2e_protein_anything", "protein-anything", e2eFile, e2ePDB},
		{"e2e_peptide_anything", "peptide-anything", "sequences:\n  - protein: {id: A, sequence: MKTAYIAKQRQISFVKSHFSRQ}\n", ""},
		{"e2e_nanobody_anything", "nanobody-anything", "entities:\n  - protein: {id: N, sequence: 110..130}\n  - file:\n      path: target.pdb\n" +
			"      include:\n        - chain: {id: A}\n      binding_types:\n        - chain: {id: A, binding: 20..30}\n", e2ePDB},
		{"e2e_antibody_anything", "antibody-anything", "sequences:\n  - protein: {id: A, sequence: MKTAYIAKQRQISFVKSHFSRQ}\n", ""},
		{"e2e_protein_small_molecule", "protein-small_molecule", "sequences:\n  - ligand: {id: L, ccd: SAH}\n", ""},
		{"e2e_protein_redesign", "protein-redesign", "entities:\n  - file:\n      path: target.pdb\n      design:\n        - chain: {id: A, res_index: 10..20}\n", e2ePDB},
		// bio/designspec_test.go
		{"bio_ligand_binder", "protein-small_molecule", "entities:\n  - protein: {id: B, sequence: 80..140}\n  - ligand: {id: Q, ccd: WHL}\n", ""},
		{"bio_fixed_and_designed", "protein-anything", "entities:\n  - protein:\n      id: [G, H]\n      sequence: 15..20AAAAVTT18PPP\n", ""},
		{"bio_file_label_and_author_ids", "protein-anything", "entities:\n  - protein: {id: Z, sequence: 60}\n" +
			"  - file:\n      path: target.cif\n      include:\n        - chain: {id: A}\n        - chain: {id: C}\n" +
			"      design:\n        - chain: {id: A, res_index: 2..4}\n", bioCIF},
		{"bio_file_twice_insertion", "protein-redesign", "entities:\n  - file: {path: target.cif, include: all}\n" +
			"  - file:\n      path: target.cif\n      design_insertions:\n        - insertion: {id: C, res_index: 2, num_residues: 2..9}\n", bioCIF},
		{"bio_sequences_smiles", "protein-anything", "sequences:\n  - protein: {id: A, sequence: MKTAYIAK}\n  - ligand: {id: L, smiles: CCO}\n", ""},
		{"bio_pdb_target", "protein-anything", "entities:\n  - protein: {id: B, sequence: 20..30}\n  - file:\n      path: target.pdb\n      include:\n        - chain: {id: A}\n", bioPDB},
		// catalog/validate_test.go
		{"catalog_binder_only", "protein-anything", "entities:\n  - protein: {id: B, sequence: 20..30}\n", ""},
		// issue 19: what BoltzGen accepts and we refused or wrote wrongly
		{"pdb_named_cif", "protein-anything", strings.ReplaceAll(e2eFile, "target.pdb", "target.cif"), e2ePDB},
		{"pdb_named_upper_case", "protein-anything", strings.ReplaceAll(e2eFile, "target.pdb", "'Target.PDB'"), e2ePDB},
		{"commas_in_a_sequence", "protein-anything", "entities:\n  - protein: {id: B, sequence: '3..5, AAA,10'}\n  - ligand: {id: L, ccd: SAH}\n", ""},
		{"ccd_list_entities", "protein-small_molecule", "entities:\n  - protein: {id: B, sequence: 20..30}\n  - ligand: {id: L, ccd: [SAH, SAH]}\n", ""},
		{"ccd_list_sequences", "protein-small_molecule", "sequences:\n  - ligand: {id: L, ccd: [SAH, SAH]}\n", ""},
		{"cyclic_sequences", "peptide-anything", "sequences:\n  - protein: {id: A, sequence: MKTAYIAKQR, cyclic: true}\n", ""},
		{"msa_empty_sequences", "protein-anything", "sequences:\n  - protein: {id: A, sequence: MKTAYIAK, msa: empty}\n  - protein: {id: C, sequence: GSGSGS}\n", ""},
		{"msa_inline_sequences", "protein-anything", "sequences:\n  - protein:\n      id: A\n      sequence: MKTAYI\n      msa: |\n        >q\n        MKTAYI\n        >h\n        MKTAYV\n", ""},
	}
}

// TestUpstreamBoltzGenAcceptsEveryInputTheEngineWrites: for every design request of our
// tests, the spec and structure the engine writes are accepted by BoltzGen's own reader,
// the real `boltzgen check` (cli/boltzgen.py:694-729; data/parse/schema.py), with a
// molecules folder of the codes they use.
func TestUpstreamBoltzGenAcceptsEveryInputTheEngineWrites(t *testing.T) {
	env := realBoltzGen(t)
	cases := designCorpus(t)
	var specs []string
	names := map[string]string{}
	for _, c := range cases {
		spec := writeInputs(t, newJob(t, c.request()), t.TempDir())
		// check names its output after the spec's stem: a link beside the engine's spec
		// gives each case its own, and the same folder for the files it names.
		named := filepath.Join(filepath.Dir(spec), c.name+".yaml")
		if err := os.Link(spec, named); err != nil {
			t.Fatal(err)
		}
		specs = append(specs, named)
		names[named] = c.name
	}
	// The real command on those it must accept; the specs it refused before on the rest.
	var accept, refuse []string
	for i, s := range specs {
		if knownRefusals[cases[i].name] != "" {
			refuse = append(refuse, s)
		} else {
			accept = append(accept, s)
		}
	}
	mols := sharedMols(t, env)
	results := boltzgenCheck(t, env, mols, accept)
	for s, why := range boltzgenRefusals(t, env, mols, refuse) {
		results[s] = why
	}
	accepted := 0
	for i, s := range specs {
		why, want := results[s], knownRefusals[cases[i].name]
		switch {
		case why != "" && want == "":
			b, _ := os.ReadFile(s)
			t.Errorf("%s: boltzgen check refused the spec the engine wrote: %s\n%s", names[s], why, b)
		case want != "" && !strings.Contains(why, want):
			t.Errorf("%s: boltzgen check gave %q, where it refused it with %q before", names[s], why, want)
		case why == "":
			accepted++
		}
	}
	t.Logf("boltzgen check accepted %d/%d inputs the engine wrote", accepted, len(specs))
}
