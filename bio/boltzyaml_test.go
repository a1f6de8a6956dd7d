package bio

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

const cifText = "data_tmpl\nloop_\n_atom_site.group_PDB\n_atom_site.id\nATOM 1\n"

// fullYAML uses every part of the schema once.
const fullYAML = `version: 1
sequences:
  - protein:
      id: [A, B]
      sequence: mkt ayi
      msa: |
        >query
        MKTAYI
        MK-AyYI
      modifications:
        - {position: 2, ccd: mly}
      cyclic: false
  - dna:
      id: C
      sequence: ACGTN
  - RNA:
      id: D
      sequence: ACGU
      cyclic: yes
  - ligand:
      id: E
      ccd: [sah, ATP]
  - ligand:
      id: [F]
      smiles: 'N[C@@H](Cc1ccc(O)cc1)C(=O)O'
  - protein:
      id: G
      sequence: GG
      msa: empty
constraints:
  - bond:
      atom1: [A, 1, CA]
      atom2: [E, 2, C1]
  - pocket:
      binder: F
      contacts: [[A, 3], [E, N1]]
      max_distance: 5.5
      force: true
  - contact:
      token1: [B, 6]
      token2: [C, 1]
templates:
  - cif: |
      data_tmpl
      loop_
      _atom_site.group_PDB
      _atom_site.id
      ATOM 1
    chain_id: [A, B]
    template_id: [X, Y]
    force: true
    threshold: 2
properties:
  - affinity:
      binder: F
`

func TestParseYAML(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		text string
		want Complex
	}{
		{
			name: "every part of the schema",
			text: fullYAML,
			want: Complex{
				Name: "t",
				Entities: []Entity{
					{Kind: Protein, IDs: []string{"A", "B"}, Sequence: "MKTAYI",
						MSA:           MSA{Source: MSAInline, Format: A3M, Text: ">query\nMKTAYI\nMK-AyYI\n"},
						Modifications: []Modification{{Position: 2, CCD: "MLY"}}},
					{Kind: DNA, IDs: []string{"C"}, Sequence: "ACGTN"},
					{Kind: RNA, IDs: []string{"D"}, Sequence: "ACGU", Cyclic: true},
					{Kind: Ligand, IDs: []string{"E"}, CCD: []string{"SAH", "ATP"}},
					{Kind: Ligand, IDs: []string{"F"}, SMILES: "N[C@@H](Cc1ccc(O)cc1)C(=O)O"},
					{Kind: Protein, IDs: []string{"G"}, Sequence: "GG", MSA: MSA{Source: MSANone}},
				},
				Constraints: []Constraint{
					{Bond: &Bond{Atom1: Atom{Chain: "A", Residue: 1, Name: "CA"}, Atom2: Atom{Chain: "E", Residue: 2, Name: "C1"}}},
					{Pocket: &Pocket{Binder: "F", Contacts: []Token{{Chain: "A", Residue: 3}, {Chain: "E", Atom: "N1"}}, MaxDistance: 5.5, Force: true}},
					{Contact: &Contact{Token1: Token{Chain: "B", Residue: 6}, Token2: Token{Chain: "C", Residue: 1}}},
				},
				Templates: []Template{{Format: MMCIF, Text: cifText, ChainIDs: []string{"A", "B"}, TemplateIDs: []string{"X", "Y"}, Force: true, Threshold: 2}},
				Affinity:  &Affinity{Binder: "F"},
			},
		},
		{
			name: "flow style, JSON and numbers as ids",
			text: `{"sequences": [{"protein": {"id": 1, "sequence": "MK"}}, {"ligand": {"id": ["L1"], "ccd": "HEM"}}]}`,
			want: Complex{Name: "t", Entities: []Entity{
				{Kind: Protein, IDs: []string{"1"}, Sequence: "MK"},
				{Kind: Ligand, IDs: []string{"L1"}, CCD: []string{"HEM"}},
			}},
		},
		{
			name: "an msa left empty or null means the server, and CSV alignments are read",
			text: "sequences:\n  - protein: {id: A, sequence: MK, msa: ''}\n  - protein: {id: B, sequence: GG, msa: ~}\n" +
				"  - protein:\n      id: C\n      sequence: MKT\n      msa: |\n        key,sequence\n        0,MKT\n        ,MK-\n        -1,mMKT\n",
			want: Complex{Name: "t", Entities: []Entity{
				{Kind: Protein, IDs: []string{"A"}, Sequence: "MK"},
				{Kind: Protein, IDs: []string{"B"}, Sequence: "GG"},
				{Kind: Protein, IDs: []string{"C"}, Sequence: "MKT", MSA: MSA{Source: MSAInline, Format: CSV, Text: "key,sequence\n0,MKT\n,MK-\n-1,mMKT\n"}},
			}},
		},
		{
			name: "empty optional lists",
			text: "sequences:\n  - protein: {id: A, sequence: MK, modifications: []}\nconstraints: []\ntemplates:\nproperties: ~\n",
			want: Complex{Name: "t", Entities: []Entity{{Kind: Protein, IDs: []string{"A"}, Sequence: "MK"}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseInput("t", tt.text)
			if err != nil {
				t.Fatal(err)
			}
			clearPositions(got)
			if !reflect.DeepEqual(*got, tt.want) {
				t.Errorf("complex =\n%+v\nwant\n%+v", *got, tt.want)
			}
		})
	}
}

func TestParseYAMLAliases(t *testing.T) {
	t.Parallel()
	c, err := ParseInput("t", "sequences:\n  - protein: &p {id: A, sequence: &s MK}\n  - protein: {id: B, sequence: *s}\n")
	if err != nil {
		t.Fatal(err)
	}
	if c.Entities[1].Sequence != "MK" {
		t.Errorf("alias *s read as %q, want MK", c.Entities[1].Sequence)
	}
	// A name anchored again refers to the later value from there on.
	c, err = ParseInput("t", "sequences:\n  - protein: {id: A, sequence: &s MK}\n  - protein: {id: B, sequence: *s}\n"+
		"  - protein: {id: C, sequence: &s GG}\n  - protein: {id: D, sequence: *s}\n")
	if err != nil || c.Entities[1].Sequence != "MK" || c.Entities[3].Sequence != "GG" {
		t.Errorf("re-anchored alias: %v %+v", err, c)
	}
	// An alias refers to an anchor before it, as in every YAML reader.
	_, err = ParseInput("t", "sequences:\n  - protein: {id: B, sequence: *s}\n  - protein: {id: A, sequence: &s MK}\n")
	if want := "line 2, column 32: alias *s refers to no anchor &s before it"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want %q", err, want)
	}
}

// TestParseYAMLPositions checks that entities and constraints remember where they were
// written, for the errors that later checks (caps, model capabilities) report.
func TestParseYAMLPositions(t *testing.T) {
	t.Parallel()
	c, err := ParseInput("t", fullYAML)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Entities[3].Pos; got != (Pos{Line: 20, Column: 5}) {
		t.Errorf("ligand E at %+v, want line 20, column 5", got)
	}
	if got := c.Constraints[1].Pos; got != (Pos{Line: 34, Column: 5}) {
		t.Errorf("pocket at %+v, want line 34, column 5", got)
	}
	if got := c.Affinity.Pos; got != (Pos{Line: 54, Column: 5}) {
		t.Errorf("affinity at %+v, want line 54, column 5", got)
	}
}

func TestParseYAMLErrors(t *testing.T) {
	t.Parallel()
	prot := "sequences:\n  - protein:\n      id: A\n      sequence: MKTAYI\n"
	lig := "  - ligand:\n      id: L\n      smiles: CCO\n"
	tests := []struct {
		name, text, want string
	}{
		{"syntax error", "sequences: [\n", "line 1, column 12: YAML syntax: sequence end token ']' not found"},
		{"duplicate key", "sequences: []\nsequences: []\n", `line 2, column 1: YAML syntax: mapping key "sequences" already defined`},
		{"tab indentation", "sequences:\n\t- protein: {id: A, sequence: MK}\n", "line 2, column 1: YAML syntax"},
		{"lines as an editor counts them, CRLF or CR", "sequences:\r\n  - protein: {id: A, sequence: \"MK\r\n\r\n    TA\"}\r  - rna: {id: R, sequence: MK}\r\n",
			"line 5, column 28: sequences[1].rna.sequence position 1: 'M' is not an RNA base"},
		{"two documents", prot + "---\n" + prot, "line 6, column 10: the input holds 2 YAML documents; send each as its own target"},
		{"a bare sequence", "MKTAYIAKQR", "the input is neither FASTA"},
		{"a list at the top", "- protein: {id: A, sequence: MK}\n", "line 1, column 1: the input is neither FASTA"},
		{"empty", "# nothing\n", "the input is empty"},
		{"unknown top key", prot + "propertes: []\n", `line 5, column 1: the top level: unknown key "propertes"; valid keys are version, sequences, constraints, templates, properties`},
		{"version 2", "version: 2\n" + prot, "line 1, column 10: version must be 1"},
		{"no sequences", "version: 1\n", "the YAML has no sequences list"},
		{"sequences empty", "sequences: []\n", "line 1, column 1: sequences is empty"},
		{"sequences a mapping", "sequences: {protein: 1}\n", "line 1, column 12: sequences must be a list, not a mapping"},
		{"unknown entity type", "sequences:\n  - peptide: {id: A, sequence: MK}\n", `line 2, column 5: sequences[0]: unknown type "peptide"; valid types are protein, dna, rna, ligand`},
		{"two entity types in one item", "sequences:\n  - protein: {id: A, sequence: MK}\n    dna: {id: B, sequence: A}\n", "sequences[0] must hold exactly one of protein, dna, rna, ligand, not 2 keys"},
		{"typo in a key", "sequences:\n  - protein:\n      id: A\n      sequnce: MK\n", `line 4, column 7: sequences[0].protein: unknown key "sequnce"; valid keys are id, sequence, msa, modifications, cyclic`},
		{"msa on dna", "sequences:\n  - dna: {id: A, sequence: ACGT, msa: empty}\n", `sequences[0].dna: unknown key "msa"; valid keys are id, sequence, modifications, cyclic`},
		{"missing id", "sequences:\n  - protein: {sequence: MK}\n", "line 2, column 5: sequences[0].protein has no id"},
		{"empty id list", "sequences:\n  - protein: {id: [], sequence: MK}\n", "line 2, column 19: sequences[0].protein.id is an empty list"},
		{"id not a word", "sequences:\n  - protein: {id: {a: 1}, sequence: MK}\n", "sequences[0].protein.id must be a single value, not a mapping"},
		{"id too long", "sequences:\n  - protein: {id: ABCDEF, sequence: MK}\n", `line 2, column 19: chain id "ABCDEF" must be 1 to 5 ASCII letters or digits`},
		{"id with a dash", "sequences:\n  - protein: {id: A-1, sequence: MK}\n", `chain id "A-1" must be 1 to 5 ASCII letters or digits`},
		{"duplicate id across entities", prot + "  - dna:\n      id: [B, A]\n      sequence: AC\n", `line 6, column 15: chain id "A" is already used at line 3`},
		{"duplicate id in one list", "sequences:\n  - protein: {id: [A, A], sequence: MK}\n", `line 2, column 23: chain id "A" is already used at line 2`},
		{"missing sequence", "sequences:\n  - protein: {id: A}\n", "sequences[0].protein has no sequence"},
		{"empty sequence", "sequences:\n  - protein: {id: A, sequence: ''}\n", "sequences[0].protein.sequence must be a single value, not empty"},
		{"bad protein letter", "sequences:\n  - protein:\n      id: A\n      sequence: MKJT\n", "line 4, column 17: sequences[0].protein.sequence position 3: 'J' is not an amino-acid letter"},
		{"U in DNA", "sequences:\n  - dna: {id: A, sequence: ACGU}\n", "sequences[0].dna.sequence position 4: 'U' is not a DNA base (allowed: A, C, G, T and N)"},
		{"T in RNA", "sequences:\n  - rna: {id: A, sequence: ACGT}\n", "sequences[0].rna.sequence position 4: 'T' is not an RNA base"},
		{"msa path", prot + "      msa: ./seq1.a3m\n", `line 5, column 12: sequences[0].protein.msa: "./seq1.a3m" is a path to a file, and the service never reads files on the server`},
		{"msa absolute path", prot + "      msa: /etc/passwd\n", `"/etc/passwd" is a path to a file`},
		{"msa a list", prot + "      msa: [a]\n", "sequences[0].protein.msa must be text, not a list"},
		{"inline msa not an alignment", prot + "      msa: |\n        hello\n        world\n", "an inline alignment is A3M (starting with a '>' header line) or CSV"},
		{"inline msa with another query", prot + "      msa: |\n        >q\n        MKTAYV\n", "alignment line 2: the first aligned sequence must be the chain's own sequence"},
		{"inline msa row too short", prot + "      msa: |\n        >q\n        MKTAYI\n        >h\n        MKT\n", "alignment line 4: the aligned sequence has 3 columns and the chain 6 residues"},
		{"inline msa wrapped", prot + "      msa: |\n        >q\n        MKTAYI\n        >h\n        MKT\n        AYI\n", "the aligned sequence has 3 columns and the chain 6 residues; each aligned sequence must be on one line"},
		{"inline msa bad character", prot + "      msa: |\n        >q\n        MKTAYI\n        MKTA.I\n", `alignment line 3: '.' is not an aligned residue`},
		{"inline csv bad key", prot + "      msa: |\n        key,sequence\n        x,MKTAYI\n", `alignment line 2: key "x" is not an integer`},
		{"inline csv with spaces", prot + "      msa: |\n        key,sequence\n        1, MKTAYI\n", "alignment line 2: CSV fields take no spaces"},
		{"inline csv three fields", prot + "      msa: |\n        key,sequence\n        1,MKTAYI,x\n", "alignment line 2: has 3 fields"},
		{"inline msa without rows", prot + "      msa: |\n        >q\n        >r\n", "the alignment has no sequence"},
		{"modification outside the sequence", prot + "      modifications:\n        - {position: 7, ccd: SEP}\n", "line 6, column 22: sequences[0].protein.modifications[0].position 7 is outside the sequence, whose residues are 1 to 6"},
		{"modification at position 0", prot + "      modifications:\n        - {position: 0, ccd: SEP}\n", "position 0 is outside the sequence"},
		{"modification twice", prot + "      modifications:\n        - {position: 2, ccd: SEP}\n        - {position: 2, ccd: TPO}\n", "modifications[1].position 2 is modified twice"},
		{"modification without ccd", prot + "      modifications:\n        - {position: 2}\n", "needs both position (1-based residue index) and ccd"},
		{"modification position as text", prot + "      modifications:\n        - {position: two, ccd: SEP}\n", `position must be a whole number, not the text "two"`},
		{"modification bad ccd", prot + "      modifications:\n        - {position: 2, ccd: 'S P'}\n", `CCD code "S P" must be 1 to 5 ASCII letters or digits`},
		{"cyclic not a boolean", prot + "      cyclic: sometimes\n", `sequences[0].protein.cyclic must be true or false, not the text "sometimes"`},
		{"ligand with both", "sequences:\n  - ligand: {id: L, smiles: C, ccd: SAH}\n", "sequences[0].ligand needs exactly one of smiles and ccd"},
		{"ligand with neither", "sequences:\n  - ligand: {id: L}\n", "sequences[0].ligand needs exactly one of smiles and ccd"},
		{"cyclic ligand", "sequences:\n  - ligand: {id: L, ccd: SAH, cyclic: true}\n", "sequences[0].ligand: only polymers can be cyclic"},
		{"ligand with a sequence", "sequences:\n  - ligand: {id: L, sequence: MK}\n", `unknown key "sequence"; valid keys are id, smiles, ccd, cyclic`},
		{"unbalanced SMILES", "sequences:\n  - ligand: {id: L, smiles: 'CC(=O'}\n", "line 2, column 29: sequences[0].ligand: SMILES character 3: '(' is never closed"},
		{"unpaired ring closure", "sequences:\n  - ligand: {id: L, smiles: c1ccccc}\n", "SMILES character 2: ring bond 1 is opened but never closed"},
		{"unknown bracket element", "sequences:\n  - ligand: {id: L, smiles: '[Xx]'}\n", `bracket atom "[Xx]": "Xx" does not start an element symbol`},
		{"SMILES flow list", "sequences:\n  - ligand: {id: L, smiles: [Na+]}\n", "sequences[0].ligand.smiles must be a single value, not a list"},
		{"bad ccd", "sequences:\n  - ligand: {id: L, ccd: TOOLONG}\n", `CCD code "TOOLONG"`},
		{"constraint of unknown type", prot + "constraints:\n  - glue: {a: 1}\n", `line 6, column 5: constraints[0]: unknown type "glue"; valid types are bond, pocket, contact`},
		{"bond without atom2", prot + "constraints:\n  - bond:\n      atom1: [A, 1, CA]\n", "constraints[0].bond needs atom1 and atom2"},
		{"bond to an unknown chain", prot + "constraints:\n  - bond:\n      atom1: [A, 1, CA]\n      atom2: [Z, 1, C1]\n", `line 8, column 15: constraints[0].bond.atom2 names chain "Z", which the sequences do not define (chains: A)`},
		{"bond past the last residue", prot + "constraints:\n  - bond:\n      atom1: [A, 7, CA]\n      atom2: [A, 1, N]\n", "line 7, column 18: constraints[0].bond.atom1: chain A has residues 1 to 6, not 7"},
		{"bond of two items", prot + "constraints:\n  - bond:\n      atom1: [A, 1]\n      atom2: [A, 1, N]\n", "constraints[0].bond.atom1 must be [CHAIN, RESIDUE_INDEX, ATOM_NAME], not 2 items"},
		{"bond with a long atom name", prot + "constraints:\n  - bond:\n      atom1: [A, 1, CALPHA]\n      atom2: [A, 1, N]\n", `atom name "CALPHA" must be 1 to 4 printable characters`},
		{"pocket on an unknown binder", prot + "constraints:\n  - pocket: {binder: L, contacts: [[A, 1]]}\n", `constraints[0].pocket.binder names chain "L", which the sequences do not define`},
		{"pocket without contacts", prot + lig + "constraints:\n  - pocket: {binder: L, contacts: []}\n", "constraints[0].pocket.contacts is empty"},
		{"pocket contact by atom on a protein", prot + lig + "constraints:\n  - pocket: {binder: L, contacts: [[A, CA]]}\n", "constraints[0].pocket.contacts[0]: chain A is a protein, so give a residue index (1 to 6)"},
		{"pocket contact past the end", prot + lig + "constraints:\n  - pocket: {binder: L, contacts: [[A, 829]]}\n", "constraints[0].pocket.contacts[0]: chain A has residues 1 to 6, not 829"},
		{"pocket negative distance", prot + lig + "constraints:\n  - pocket: {binder: L, contacts: [[A, 1]], max_distance: -2}\n", "constraints[0].pocket.max_distance must be a positive distance"},
		{"pocket distance as text", prot + lig + "constraints:\n  - pocket: {binder: L, contacts: [[A, 1]], max_distance: far}\n", "max_distance must be a number"},
		{"contact by residue on a ligand", prot + lig + "constraints:\n  - contact: {token1: [A, 1], token2: [L, 1]}\n", `constraints[0].contact.token2: chain L is a ligand, so name one of its atoms`},
		{"contact with three items", prot + "constraints:\n  - contact: {token1: [A, 1, CA], token2: [A, 2]}\n", "constraints[0].contact.token1 must be [CHAIN, RESIDUE_INDEX] or, for a ligand, [CHAIN, ATOM_NAME], not 3 items"},
		{"template path", prot + "templates:\n  - cif: /data/7xyz.cif\n", `line 6, column 10: templates[0].cif "/data/7xyz.cif" is a path to a file, and the service never reads files on the server`},
		{"template pdb path", prot + "templates:\n  - pdb: ../x.pdb\n", `templates[0].pdb "../x.pdb" is a path to a file`},
		{"template both formats", prot + "templates:\n  - {cif: a, pdb: b}\n", "templates[0] needs exactly one of cif (mmCIF text) and pdb (PDB text)"},
		{"template text that is not mmCIF", prot + "templates:\n  - cif: |\n      hello\n      world\n", "templates[0].cif must be mmCIF text (a data_ block with _atom_site records)"},
		{"template on a ligand chain", prot + lig + "templates:\n  - cif: \"" + strings.ReplaceAll(cifText, "\n", `\n`) + "\"\n    chain_id: L\n", "templates[0].chain_id: chain L is a ligand; templates are for protein chains"},
		{"template ids not pairing", prot + "templates:\n  - cif: \"" + strings.ReplaceAll(cifText, "\n", `\n`) + "\"\n    chain_id: [A]\n    template_id: [X, Y]\n", "template_id names 2 chains and chain_id 1; they pair up one to one"},
		{"template force without threshold", prot + "templates:\n  - cif: \"" + strings.ReplaceAll(cifText, "\n", `\n`) + "\"\n    force: true\n", "templates[0]: force needs a threshold"},
		{"unknown property", prot + "properties:\n  - solubility: {binder: A}\n", `properties[0]: unknown type "solubility"; valid types are affinity`},
		{"affinity on a protein", prot + "properties:\n  - affinity: {binder: A}\n", "line 6, column 24: properties[0].affinity.binder: chain A is a protein; affinity is predicted for a ligand chain"},
		{"affinity on an unknown chain", prot + "properties:\n  - affinity: {binder: Q}\n", `properties[0].affinity.binder names chain "Q"`},
		{"affinity on copies", prot + "  - ligand: {id: [L, M], ccd: SAH}\nproperties:\n  - affinity: {binder: L}\n", "ligand L has 2 copies (L, M); affinity needs a ligand with a single copy"},
		{"affinity on a multi-residue ligand", prot + "  - ligand: {id: L, ccd: [SAH, ATP]}\nproperties:\n  - affinity: {binder: L}\n", "ligand L has 2 residues; affinity needs a single-residue ligand"},
		{"affinity binder as a list", prot + lig + "properties:\n  - affinity: {binder: [L]}\n", "properties[0].affinity.binder must name one ligand chain"},
		{"affinity twice", prot + lig + "properties:\n  - affinity: {binder: L}\n  - affinity: {binder: L}\n", "properties[1].affinity: only one affinity property per target is supported"},
		{"affinity ligand over 128 heavy atoms", prot + "  - ligand: {id: L, smiles: '" + strings.Repeat("C", 129) + "'}\nproperties:\n  - affinity: {binder: L}\n", "ligand L has 129 heavy atoms; affinity takes at most 128"},
		{"merge key", "sequences:\n  - protein: &b {id: A, sequence: MK}\n  - protein: {<<: *b, id: B}\n", "line 3, column 15: sequences[1].protein: merge keys (<<) are not supported"},
		{"nesting bomb", "sequences: " + strings.Repeat("[", 40) + strings.Repeat("]", 40) + "\n", "brackets are nested more than 32 deep"},
		{"alias bomb", aliasBomb(), "the YAML expands to too many values through anchors and aliases"},
		{"invalid UTF-8", "sequences:\n  - protein: {id: A, sequence: \"\xff\"}\n", "not valid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := ParseInput("t", tt.text)
			if err == nil {
				t.Fatalf("accepted: %+v; want an error containing %q", c, tt.want)
			}
			var perr *Error
			if !errors.As(err, &perr) {
				t.Errorf("error %T is not a *bio.Error", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error\n  %v\ndoes not contain\n  %s", err, tt.want)
			}
		})
	}
}

// aliasBomb is a YAML whose aliases expand it a thousandfold: one pocket's thousand
// contacts, anchored, and three hundred pockets that refer to them.
func aliasBomb() string {
	var b strings.Builder
	b.WriteString("sequences:\n  - protein: {id: A, sequence: MK}\nconstraints:\n  - pocket: {binder: A, contacts: &c [")
	b.WriteString(strings.TrimSuffix(strings.Repeat("[A, 1], ", 1000), ", "))
	b.WriteString("]}\n")
	b.WriteString(strings.Repeat("  - pocket: {binder: A, contacts: *c}\n", 300))
	return b.String()
}

// clearPositions zeroes every Pos, so tests can compare the rest.
func clearPositions(c *Complex) {
	for i := range c.Entities {
		c.Entities[i].Pos = Pos{}
	}
	for i := range c.Constraints {
		c.Constraints[i].Pos = Pos{}
	}
	for i := range c.Templates {
		c.Templates[i].Pos = Pos{}
	}
	if c.Affinity != nil {
		c.Affinity.Pos = Pos{}
	}
}
