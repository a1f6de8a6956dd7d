package bio

import (
	"strings"
	"testing"
)

func TestParseDesignSpec(t *testing.T) {
	t.Parallel()
	cif := readTestStructure(t, "target.cif") // A: 10 residues + NAG; X, Y: 4 each
	tests := []struct {
		name      string
		spec      string
		structure *Structure
		form      string
		file      string
		residues  int
	}{
		{"a binder against a ligand", "entities:\n  - protein: {id: B, sequence: 80..140}\n  - ligand: {id: Q, ccd: WHL}\n",
			nil, EntitiesSpec, "", 141},
		{"fixed and designed residues, two copies", "entities:\n  - protein:\n      id: [G, H]\n      sequence: 15..20AAAAVTT18PPP\n",
			nil, EntitiesSpec, "", 2 * (20 + 7 + 18 + 3)},
		{"a file entity including one chain, by author or label id", "entities:\n  - protein: {id: Z, sequence: 60}\n" +
			"  - file:\n      path: target.cif\n      include:\n        - chain: {id: A}\n        - chain: {id: C}\n" +
			"      design:\n        - chain: {id: A, res_index: 2..4}\n", cif, EntitiesSpec, "target.cif", 60 + 11 + 4},
		{"a file entity of all chains, named twice, with an insertion", "entities:\n  - file: {path: target.cif, include: all}\n" +
			"  - file:\n      path: target.cif\n      design_insertions:\n        - insertion: {id: C, res_index: 2, num_residues: 2..9}\n",
			cif, EntitiesSpec, "target.cif", 2*(11+4+4) + 9},
		{"the target in Boltz's form", "sequences:\n  - protein: {id: A, sequence: MKTAYIAK}\n  - ligand: {id: L, smiles: CCO}\n",
			nil, SequencesSpec, "", 9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d, err := ParseDesignSpec(tt.spec, tt.structure)
			if err != nil {
				t.Fatalf("ParseDesignSpec: %v", err)
			}
			if d.Form != tt.form || d.File != tt.file || d.MaxResidues != tt.residues {
				t.Errorf("form %s, file %q, max residues %d; want %s, %q, %d", d.Form, d.File, d.MaxResidues, tt.form, tt.file, tt.residues)
			}
		})
	}
}

func TestParseDesignSpecErrors(t *testing.T) {
	t.Parallel()
	cif := readTestStructure(t, "target.cif")
	bareCIF, err := ReadStructure("data_x\nloop_\n_atom_site.label_comp_id\n_atom_site.auth_asym_id\n_atom_site.auth_seq_id\nALA A 1\n")
	if err != nil {
		t.Fatal(err)
	}
	const binder = "entities:\n  - protein: {id: B, sequence: 80..140}\n"
	file := func(body string) string { return binder + "  - file:\n" + body }
	tests := []struct {
		name, spec string
		structure  *Structure
		want       string
	}{
		{"not YAML", "entities: [", nil, "line 1"},
		{"a list", "- protein: {id: A}\n", nil, "line 1, column 1: a design spec is a YAML mapping"},
		{"neither form", "binder: 80\n", nil, "needs an entities list"},
		{"both forms", "entities: []\nsequences: []\n", nil, "line 2, column 1: a design spec has either"},
		{"no entities", "entities: []\n", nil, "entities is empty"},
		{"an unknown entity", "entities:\n  - peptide: {id: A}\n", nil, "line 2, column 5"},
		{"an unknown top-level key", binder + "constraint: []\n", nil, `line 3, column 1: the design spec: unknown key "constraint"`},
		{"a protein without a sequence", "entities:\n  - protein: {id: A}\n", nil, "line 2, column 5: entities[0].protein needs a sequence"},
		{"a bad designed length", "entities:\n  - protein: {id: A, sequence: 80..x}\n", nil, "line 2, column 32"},
		{"a backwards range", "entities:\n  - protein: {id: A, sequence: 140..80}\n", nil, "runs backwards"},
		{"a stray character", "entities:\n  - protein: {id: A, sequence: AA-5}\n", nil, `'-' at position 3`},
		{"a chain declared twice", binder + "  - ligand: {id: B, ccd: SAH}\n", nil, "line 3, column 18: entities[1].ligand.id: chain B is declared twice"},
		{"an absolute path", file("      path: /etc/passwd\n"), cif, "line 4, column 13: entities[1].file.path \"/etc/passwd\" is an absolute path"},
		{"a path with ..", file("      path: ../nanobody_scaffolds/7eow.yaml\n"), cif, "leaves the spec's folder"},
		{"a path in a folder", file("      path: data/target.cif\n"), cif, "is in a folder"},
		{"scaffold files", file("      path: [a.yaml, b.yaml]\n"), cif, "line 4, column 22: entities[1].file.path names 2 files"},
		{"a YAML file", file("      path: scaffold.yaml\n"), cif, "is not a structure file"},
		{"a second file", file("      path: target.cif\n") + "  - file: {path: other.cif}\n", cif,
			"line 5, column 18: entities[2].file.path names a second file, other.cif, after target.cif"},
		{"an mmCIF chain by its author id", file("      path: target.cif\n      design_insertions:\n        - insertion: {id: X, res_index: 2}\n"), cif,
			"line 6, column 27: entities[1].file.design_insertions[0].insertion.id: BoltzGen names an mmCIF's chains by label_asym_id, and chain X of this file is C there"},
		{"a file without a structure", file("      path: target.cif\n"), nil, "no structure was sent"},
		{"an mmCIF without its polymers' sequences", file("      path: target.cif\n"), bareCIF, "line 4, column 13: the file entity names target.cif, an mmCIF without the _entity_poly_seq loop"},
		{"a structure without a file", binder, cif, "the spec has no file entity"},
		{"a chain the structure lacks", file("      path: target.cif\n      include:\n        - chain: {id: Q}\n"), cif,
			"line 6, column 23: entities[1].file.include[0].chain.id: the structure has no chain Q; its chains are A (protein, residues 51-55, 55A, 57-60), X (dna"},
		{"sequences with constraints", "sequences:\n  - protein: {id: A, sequence: MK}\n  - protein: {id: B, sequence: MK}\n" +
			"constraints:\n  - contact: {token1: [A, 1], token2: [B, 1], max_distance: 6}\n", nil, "line 5, column 5: the sequences form holds only"},
		{"sequences with a structure", "sequences:\n  - protein: {id: A, sequence: MK}\n", cif, "the sequences form names no file"},
		{"sequences that are not Boltz's", "sequences:\n  - protein: {id: A, sequence: M1K}\n", nil, "line 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d, err := ParseDesignSpec(tt.spec, tt.structure)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ParseDesignSpec = %+v, %v; want an error containing %q", d, err, tt.want)
			}
		})
	}
}

// FuzzParseDesignSpec checks that any text either parses or fails with an error.
func FuzzParseDesignSpec(f *testing.F) {
	f.Add("entities:\n  - protein: {id: B, sequence: 15..20AAAAVTT18PPP}\n  - file:\n      path: target.cif\n      include:\n        - chain: {id: A}\n")
	f.Add("sequences:\n  - protein: {id: A, sequence: MKTAYIAK}\n")
	cif, err := ReadStructure("data_x\nloop_\n_atom_site.label_comp_id\n_atom_site.auth_asym_id\n_atom_site.auth_seq_id\nALA A 1\n")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		for _, s := range []*Structure{nil, cif} {
			if d, err := ParseDesignSpec(spec, s); err == nil && d.MaxResidues < 0 {
				t.Fatalf("MaxResidues %d", d.MaxResidues)
			}
		}
	})
}
