package boltzgen

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/chaperone-bio/chaperone/bio"
	"github.com/chaperone-bio/chaperone/catalog"
	"github.com/chaperone-bio/chaperone/engine/boltzgen/boltzgentest"
)

// everyKeySpec uses every key of BoltzGen's whitelist, validly, on the e2e target (protein
// chain A 1-60 with 52A, DNA chains B and C). Three of them BoltzGen 0.3.2 allows but never
// reads (bonds, bondtype, structure_group: schema.py has them only in its list); they sit
// where they do no harm.
const everyKeySpec = `entities:
  - protein:
      id: P
      sequence: 12..20, AC
      cyclic: false
      symmetric_group: 1
      secondary_structure: {loop: "1..2", helix: "3..5", sheet: "6"}
      residue_constraints:
        - {position: "1..3", allowed: AGS}
        - {position: 4, disallowed: C}
  - protein: {id: Q, sequence: MKTAYIAK, msa: empty, binding_types: {binding: "1..3", not_binding: "4"}}
  - ligand: {id: L, ccd: [SAH, SAH]}
  - ligand: {id: M, smiles: CCO}
  - dna: {id: D, sequence: ACGT}
  - rna: {id: R, sequence: ACGU}
  - file:
      path: target.pdb
      use_assembly: false
      msa: empty
      include:
        - chain: {id: A}
      include_proximity:
        - chain: {id: A, res_index: 1..2, radius: 8}
      exclude:
        - chain: {id: A, res_index: 55..60}
      binding_types:
        - chain: {id: A, binding: 5..10, not_binding: 11}
      structure_groups:
        - group: {id: A, visibility: 1, structure_group: 1}
      design:
        - chain: {id: A, res_index: 20..25}
      not_design:
        - chain: {id: A, res_index: 21}
      secondary_structure:
        - chain: {id: A, loop: 20, helix: 22..23, sheet: 24}
      design_insertions:
        - insertion: {id: A, res_index: 30, num_residues: 2..4}
      reset_res_index:
        - chain: {id: A}
  - protein: {id: F, sequence: 5, fuse: Q}
constraints:
  - total_len: {min: 10, max: 400}
  - bond:
      atom1: [Q, 1, CA]
      atom2: [Q, 2, CA]
      bondtype: COVALENT
  - bonds: []
leaving_atoms:
  - atom: [Q, 2, NZ]
`

// TestUpstreamSpecKeysAreBoltzGens: the keys we allow in a spec are exactly BoltzGen's
// whitelist (schema.py:289-346, read from the installed module); a spec using them is
// accepted by us and by `boltzgen check`; a key outside it is refused by both, at any depth.
func TestUpstreamSpecKeysAreBoltzGens(t *testing.T) {
	env := realBoltzGen(t)
	out, err := realCommand(t, env, t.TempDir(), "python", "-c", "from boltzgen.data.parse.schema import yaml_keys; print(' '.join(yaml_keys))")
	if err != nil {
		t.Fatalf("reading BoltzGen's whitelist: %v\n%s", err, out)
	}
	real := strings.Fields(lastLine(out))
	if !slices.Equal(slices.Sorted(slices.Values(real)), slices.Sorted(slices.Values(bio.BoltzGenKeys))) {
		t.Errorf("BoltzGen's keys %v\nours %v", real, bio.BoltzGenKeys)
	}
	used := regexp.MustCompile(`([a-z_0-9]+):`).FindAllStringSubmatch(everyKeySpec, -1)
	var covered []string
	for _, m := range used {
		if slices.Contains(real, m[1]) && !slices.Contains(covered, m[1]) {
			covered = append(covered, m[1])
		}
	}
	if unused := slices.DeleteFunc(slices.Clone(real), func(k string) bool { return slices.Contains(covered, k) }); len(unused) > 0 {
		t.Errorf("the spec of every key lacks %v of BoltzGen's keys", unused)
	}

	unknownTop := "entities:\n  - protein: {id: B, sequence: 12..20}\nbogus: 1\n"
	unknownDeep := "entities:\n  - protein: {id: B, sequence: 12..20}\n  - file:\n      path: target.pdb\n      include:\n        - chain: {id: A, colour: red}\n"
	misnamed := "entities:\n  - protein: {id: B, sequence: 12..20}\n  - file:\n      path: target.pdb\n      design:\n        - chain: {id: A, res_idx: 3}\n"
	target := boltzgentest.DesignTarget("")
	var specs []string
	for name, text := range map[string]string{"every_key": everyKeySpec, "unknown_top": unknownTop, "unknown_deep": unknownDeep, "misnamed": misnamed} {
		st, err := bio.ReadStructure(target)
		if err != nil {
			t.Fatal(err)
		}
		structure := target
		if !strings.Contains(text, "file:") {
			st, structure = nil, ""
		}
		_, ours := bio.ParseDesignSpec(text, st)
		if (ours == nil) != (name == "every_key") {
			t.Errorf("%s: bio.ParseDesignSpec = %v", name, ours)
		}
		if name == "every_key" {
			// The catalog takes it too, as a request.
			var r catalog.DesignRequest
			if err := catalog.Decode([]byte(specCase{name, "protein-anything", text, structure}.request()), &r); err != nil {
				t.Fatal(err)
			}
			if _, err := catalog.Default().NewDesign(&r); err != nil {
				t.Errorf("the catalog refuses the spec of every key: %v", err)
			}
		}
		// BoltzGen's own reader, on the text as sent.
		dir := t.TempDir()
		if structure != "" {
			if err := os.WriteFile(filepath.Join(dir, "target.pdb"), []byte(structure), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		p := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		specs = append(specs, p)
	}
	isEveryKey := func(s string) bool { return filepath.Base(s) == "every_key.yaml" }
	mols := sharedMols(t, env)
	results := boltzgenCheck(t, env, mols, slices.DeleteFunc(slices.Clone(specs), func(s string) bool { return !isEveryKey(s) }))
	for s, why := range boltzgenRefusals(t, env, mols, slices.DeleteFunc(slices.Clone(specs), isEveryKey)) {
		results[s] = why
	}
	for _, s := range specs {
		name := strings.TrimSuffix(filepath.Base(s), ".yaml")
		if (results[s] == "") != (name == "every_key") {
			t.Errorf("%s: boltzgen check: %q", name, results[s])
		}
	}
}

// toMMCIF has gemmi, in BoltzGen's environment, write a PDB as a complete mmCIF (as
// BoltzGen's own PDB reader completes one, data/parse/pdb_parser.py:33-46), and without
// its _entity_poly_seq loop when asked.
const toMMCIF = `import sys, gemmi
st = gemmi.read_structure(sys.argv[1])
st.setup_entities()
for entity in st.entities:  # a PDB without SEQRES: the sequences of its residues
    if entity.entity_type.name == "Polymer" and not entity.full_sequence:
        entity.full_sequence = [r.name for r in st[0].get_subchain(entity.subchains[0])]
doc = st.make_mmcif_document()
if sys.argv[3] == "drop":
    doc.sole_block().find_mmcif_category("_entity_poly_seq.").erase()
doc.write_file(sys.argv[2])
`

// TestUpstreamAnMMCIFNeedsItsPolymerSequences: BoltzGen reads an mmCIF's polymer
// sequences from its _entity_poly_seq loop (data/parse/mmcif.py:980) and refuses one
// without; we refuse it at submit, and accept the same structure with the loop, also when
// it is named .pdb (the engine writes it as .cif, which BoltzGen reads as mmCIF).
func TestUpstreamAnMMCIFNeedsItsPolymerSequences(t *testing.T) {
	env := realBoltzGen(t)
	dir := t.TempDir()
	pdb := filepath.Join(dir, "e2e.pdb")
	if err := os.WriteFile(pdb, []byte(boltzgentest.DesignTarget("")), 0o644); err != nil {
		t.Fatal(err)
	}
	read := func(mode string) string {
		out := filepath.Join(dir, mode+".cif")
		if text, err := realCommand(t, env, dir, "python", "-c", toMMCIF, pdb, out, mode); err != nil {
			t.Fatalf("gemmi: %v\n%s", err, text)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	withLoop, without := read("keep"), read("drop")
	// gemmi names the label chain of PDB chain A "Axp", and BoltzGen names it so.
	spec := func(name, chain string) string {
		return "entities:\n  - protein: {id: H, sequence: 20..30}\n  - file:\n      path: " + name + "\n      include:\n        - chain: {id: " + chain + "}\n"
	}
	// Ours: the catalog refuses the one without, and the engine writes the one with.
	var r catalog.DesignRequest
	if err := catalog.Decode([]byte(specCase{"x", "protein-anything", spec("target.cif", "Axp"), without}.request()), &r); err != nil {
		t.Fatal(err)
	}
	if _, err := catalog.Default().NewDesign(&r); err == nil || !strings.Contains(err.Error(), "_entity_poly_seq") {
		t.Errorf("the catalog on an mmCIF without _entity_poly_seq: %v", err)
	}
	// A, the author id, is a 400 for an mmCIF.
	if err := catalog.Decode([]byte(specCase{"x", "protein-anything", spec("target.cif", "A"), withLoop}.request()), &r); err != nil {
		t.Fatal(err)
	}
	if _, err := catalog.Default().NewDesign(&r); err == nil || !strings.Contains(err.Error(), "label_asym_id") {
		t.Errorf("the catalog on an mmCIF chain by its author id: %v", err)
	}
	var accept []string
	for _, name := range []string{"target.cif", "target.pdb"} {
		written := writeInputs(t, newJob(t, specCase{"x", "protein-anything", spec(name, "Axp"), withLoop}.request()), t.TempDir())
		named := filepath.Join(filepath.Dir(written), "mmcif_as_"+strings.ReplaceAll(name, ".", "_")+".yaml")
		if err := os.Link(written, named); err != nil {
			t.Fatal(err)
		}
		accept = append(accept, named)
	}
	// BoltzGen's: it accepts the engine's inputs and refuses the one without the loop.
	mols := sharedMols(t, env)
	for s, why := range boltzgenCheck(t, env, mols, accept) {
		if why != "" {
			t.Errorf("%s: boltzgen check refused it: %s", filepath.Base(s), why)
		}
	}
	bare := t.TempDir()
	if err := os.WriteFile(filepath.Join(bare, "target.cif"), []byte(without), 0o644); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(bare, "without.yaml")
	if err := os.WriteFile(p, []byte(spec("target.cif", "Axp")), 0o644); err != nil {
		t.Fatal(err)
	}
	if why := boltzgenRefusals(t, env, mols, []string{p})[p]; !strings.Contains(why, noPolySeq) {
		t.Errorf("BoltzGen on an mmCIF without _entity_poly_seq: %q, want %q", why, noPolySeq)
	}
}
