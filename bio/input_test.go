package bio

import (
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func TestParseFASTAComplex(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, text string
		want       []Entity
	}{
		{"plain FASTA: proteins named A, B, … in order", ">sp|P69905|HBA_HUMAN alpha\nmvls\n>beta\nMVHL\n", []Entity{
			{Kind: Protein, IDs: []string{"A"}, Sequence: "MVLS"},
			{Kind: Protein, IDs: []string{"B"}, Sequence: "MVHL"},
		}},
		{"Boltz headers: every entity type, in any case", ">A|protein\nMKT\n>B|DNA\nacgt\n>C|rna\nACGU\n>D|CCD\nsah\n>E|smiles\nc1ccccc1\n", []Entity{
			{Kind: Protein, IDs: []string{"A"}, Sequence: "MKT"},
			{Kind: DNA, IDs: []string{"B"}, Sequence: "ACGT"},
			{Kind: RNA, IDs: []string{"C"}, Sequence: "ACGU"},
			{Kind: Ligand, IDs: []string{"D"}, CCD: []string{"SAH"}},
			{Kind: Ligand, IDs: []string{"E"}, SMILES: "c1ccccc1"},
		}},
		{"Boltz headers: an empty MSA field means the server, empty means none", ">A|protein|\nMK\n>B|protein|empty desc\nGG\n", []Entity{
			{Kind: Protein, IDs: []string{"A"}, Sequence: "MK"},
			{Kind: Protein, IDs: []string{"B"}, Sequence: "GG", MSA: MSA{Source: MSANone}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := ParseInput("t", tt.text)
			if err != nil {
				t.Fatal(err)
			}
			clearPositions(c)
			if !reflect.DeepEqual(c.Entities, tt.want) {
				t.Errorf("entities =\n%+v\nwant\n%+v", c.Entities, tt.want)
			}
		})
	}
}

func TestParseFASTAComplexErrors(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, text, want string }{
		{"FASTA syntax", ">a\n>b\nMK\n", `line 1: record "a" has no sequence`},
		{"bad protein letter in plain FASTA", ">x\nMK1\n", "line 1: record x: protein sequence position 3: '1' is not an amino-acid letter"},
		{"mixed header forms", ">A|protein\nMK\n>b\nGG\n", "line 3: header >b and the header at line 1 use different forms"},
		{"duplicate chain ids", ">A|protein\nMK\n>A|dna\nAC\n", `line 3: chain id "A" is already used at line 1`},
		{"chain id not file-safe", ">A_1|protein\nMK\n", `line 1: chain id "A_1" must be 1 to 5 ASCII letters or digits`},
		{"empty chain id", ">|protein\nMK\n", "line 1: header >|protein has no chain id"},
		{"four fields", ">A|protein|empty|x\nMK\n", "has 4 fields; Boltz headers are >ID|TYPE or >ID|TYPE|MSA"},
		{"MSA path", ">A|protein|/data/a.a3m\nMK\n", `line 1: header >A|protein|/data/a.a3m: the MSA field "/data/a.a3m" is a path to a file`},
		{"MSA on a ligand", ">L|ccd|empty\nSAH\n", "gives an MSA, which only protein chains take"},
		{"bad DNA base", ">B|dna\nACGU\n", "line 1: chain B: dna sequence position 4: 'U' is not a DNA base"},
		{"bad SMILES", ">L|smiles\nC1CC\n", "line 1: chain L: SMILES character 2: ring bond 1 is opened but never closed"},
		{"bad CCD code", ">L|ccd\nS-AH\n", `line 1: chain L: CCD code "S-AH"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseInput("t", tt.text)
			var perr *Error
			if err == nil || !errors.As(err, &perr) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v (%T), want a *bio.Error containing %q", err, err, tt.want)
			}
		})
	}
}

func TestProteinComplex(t *testing.T) {
	t.Parallel()
	c, err := ProteinComplex("t", "mkt ayi")
	if err != nil {
		t.Fatal(err)
	}
	want := Complex{Name: "t", Entities: []Entity{{Kind: Protein, IDs: []string{"A"}, Sequence: "MKTAYI"}}}
	if !reflect.DeepEqual(*c, want) {
		t.Errorf("complex %+v, want %+v", *c, want)
	}
	if _, err := ProteinComplex("t", "MKJ"); err == nil {
		t.Error("J accepted")
	}
}

func TestComplexCounts(t *testing.T) {
	t.Parallel()
	c, err := ParseInput("t", fullYAML)
	if err != nil {
		t.Fatal(err)
	}
	// A, B (6 each), C (5), D (4), E (2 CCD residues), F (1 SMILES ligand), G (2).
	if got := c.NumChains(); got != 7 {
		t.Errorf("NumChains = %d, want 7", got)
	}
	if got := c.NumResidues(); got != 6+6+5+4+2+1+2 {
		t.Errorf("NumResidues = %d, want 26", got)
	}
	if got := c.NumLigands(); got != 2 {
		t.Errorf("NumLigands = %d, want 2", got)
	}
	if e, ok := c.Entity("B"); !ok || e.Sequence != "MKTAYI" {
		t.Errorf("Entity(B) = %+v, %v", e, ok)
	}
	if _, ok := c.Entity("Z"); ok {
		t.Error("Entity(Z) found")
	}
}

func TestChainName(t *testing.T) {
	t.Parallel()
	for i, want := range map[int]string{0: "A", 1: "B", 25: "Z", 26: "AA", 27: "AB", 51: "AZ", 52: "BA", 701: "ZZ", 702: "AAA"} {
		if got := chainName(i); got != want {
			t.Errorf("chainName(%d) = %q, want %q", i, got, want)
		}
	}
}

func TestCheckSMILES(t *testing.T) {
	t.Parallel()
	valid := []string{
		"C", "CCO", "c1ccccc1", "N[C@@H](Cc1ccc(O)cc1)C(=O)O", "[Na+].[Cl-]", "C1CC2CCC1C2", "C%10CC%10",
		"C%(123)CC%(123)", "[2H]C", "[NH4+]", "[Fe+++]", "[O-2]", "[C@TH1](F)(Cl)(Br)I", "C(=O)(O)C", "F/C=C/F",
		"C=1CCCCC1", "c1cc[nH]c1", "[Se]", "[se]1cccc1", "C1.C1", "[CH3:1]C", "*C", "CC(C)(C)C", "OCC(O)CO",
		"Cn1cnc2c1c(=O)n(C)c(=O)n2C", "CC(=O)Oc1ccccc1C(=O)O",
	}
	for _, s := range valid {
		if err := CheckSMILES(s); err != nil {
			t.Errorf("CheckSMILES(%q) = %v, want nil", s, err)
		}
	}
	invalid := map[string]string{
		"":            "SMILES is empty",
		"C(C":         "character 2: '(' is never closed",
		"CC)":         "character 3: ')' closes no branch",
		"C()C":        "character 3: branch opened at character 2 ends without an atom",
		"(C)C":        "character 1: '(' must follow an atom",
		"C1CC":        "ring bond 1 is opened but never closed",
		"1CC1":        "ring closure 1 must follow an atom",
		"C%1C":        "'%' must be followed by two digits",
		"C%(x)C":      "'%(' must hold a ring number",
		"C=":          "ends with a bond",
		"=C":          "bond '=' must follow an atom",
		"C..C":        "character 3: '.' must follow an atom",
		"CC.":         "ends with a bond, '(' or '.'",
		"C C":         "character 2: whitespace inside SMILES",
		"[Xx]":        `"Xx" does not start an element symbol`,
		"[]":          "has no element symbol",
		"[C":          "'[' is never closed",
		"Na":          "'a' is not an atom outside brackets",
		"X":           "'X' is not an atom outside brackets",
		"C?":          "'?' is not part of SMILES syntax",
		"[C+x]":       `unexpected "x" after the element`,
		"[CH3:]":      "':' must be followed by an atom class number",
		"C(=O)(O":     "'(' is never closed",
		"c1ccccc1)":   "')' closes no branch",
		"C(C)(C)(C))": "closes no branch",
	}
	for s, want := range invalid {
		if err := CheckSMILES(s); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckSMILES(%q) = %v, want an error containing %q", s, err, want)
		}
	}
	if got := smilesHeavyAtoms("[2H]C([H])Cl.[Na+]"); got != 3 {
		t.Errorf("heavy atoms = %d, want 3 (C, Cl, Na)", got)
	}
}

// formatYAML writes a complex back as Boltz YAML, every string a JSON-quoted scalar (valid
// YAML), inline alignments and templates included: the oracle of the round-trip fuzz.
func formatYAML(c *Complex) string {
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	qs := func(ss []string) string {
		parts := make([]string, len(ss))
		for i, s := range ss {
			parts[i] = q(s)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	num := func(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
	token := func(t Token) string {
		if t.Atom != "" {
			return "[" + q(t.Chain) + ", " + q(t.Atom) + "]"
		}
		return "[" + q(t.Chain) + ", " + strconv.Itoa(t.Residue) + "]"
	}
	var b strings.Builder
	b.WriteString("version: 1\nsequences:\n")
	for _, e := range c.Entities {
		b.WriteString("  - " + string(e.Kind) + ":\n      id: " + qs(e.IDs) + "\n")
		switch {
		case e.Kind.Polymer():
			b.WriteString("      sequence: " + q(e.Sequence) + "\n")
		case e.SMILES != "":
			b.WriteString("      smiles: " + q(e.SMILES) + "\n")
		default:
			b.WriteString("      ccd: " + qs(e.CCD) + "\n")
		}
		switch e.MSA.Source {
		case MSANone:
			b.WriteString("      msa: empty\n")
		case MSAInline:
			b.WriteString("      msa: " + q(e.MSA.Text) + "\n")
		}
		if len(e.Modifications) > 0 {
			b.WriteString("      modifications:\n")
			for _, m := range e.Modifications {
				b.WriteString("        - {position: " + strconv.Itoa(m.Position) + ", ccd: " + q(m.CCD) + "}\n")
			}
		}
		if e.Cyclic {
			b.WriteString("      cyclic: true\n")
		}
	}
	if len(c.Constraints) > 0 {
		b.WriteString("constraints:\n")
	}
	for _, k := range c.Constraints {
		switch {
		case k.Bond != nil:
			atom := func(a Atom) string {
				return "[" + q(a.Chain) + ", " + strconv.Itoa(a.Residue) + ", " + q(a.Name) + "]"
			}
			b.WriteString("  - bond: {atom1: " + atom(k.Bond.Atom1) + ", atom2: " + atom(k.Bond.Atom2) + "}\n")
		case k.Pocket != nil:
			var cs []string
			for _, t := range k.Pocket.Contacts {
				cs = append(cs, token(t))
			}
			b.WriteString("  - pocket: {binder: " + q(k.Pocket.Binder) + ", contacts: [" + strings.Join(cs, ", ") + "]")
			if k.Pocket.MaxDistance != 0 {
				b.WriteString(", max_distance: " + num(k.Pocket.MaxDistance))
			}
			b.WriteString(", force: " + strconv.FormatBool(k.Pocket.Force) + "}\n")
		case k.Contact != nil:
			b.WriteString("  - contact: {token1: " + token(k.Contact.Token1) + ", token2: " + token(k.Contact.Token2))
			if k.Contact.MaxDistance != 0 {
				b.WriteString(", max_distance: " + num(k.Contact.MaxDistance))
			}
			b.WriteString(", force: " + strconv.FormatBool(k.Contact.Force) + "}\n")
		}
	}
	if len(c.Templates) > 0 {
		b.WriteString("templates:\n")
	}
	for _, t := range c.Templates {
		b.WriteString("  - " + t.Format + ": " + q(t.Text) + "\n")
		if t.ChainIDs != nil {
			b.WriteString("    chain_id: " + qs(t.ChainIDs) + "\n")
		}
		if t.TemplateIDs != nil {
			b.WriteString("    template_id: " + qs(t.TemplateIDs) + "\n")
		}
		b.WriteString("    force: " + strconv.FormatBool(t.Force) + "\n")
		if t.Threshold != 0 {
			b.WriteString("    threshold: " + num(t.Threshold) + "\n")
		}
	}
	if c.Affinity != nil {
		b.WriteString("properties:\n  - affinity: {binder: " + q(c.Affinity.Binder) + "}\n")
	}
	return b.String()
}

// FuzzParseInput checks that any text either parses or fails with a *bio.Error placed
// inside the text, and that what parses is a consistent complex that survives being
// written out as YAML and read back unchanged. The seeds cover both parsers.
func FuzzParseInput(f *testing.F) {
	for _, seed := range []string{
		fullYAML,
		">A|protein\nMKT\n>B|DNA\nacgt\n>C|rna\nACGU\n>D|CCD\nsah\n>E|smiles\nc1ccccc1\n",
		">sp|P1|X desc\nMKT\n>b\nGG\n",
		"sequences:\n  - protein: {id: [A, B], sequence: MK, msa: empty}\n  - ligand: {id: L, smiles: CCO}\nproperties:\n  - affinity: {binder: L}\n",
		"sequences:\n  - protein: &p {id: A, sequence: &s MK}\n  - protein: {id: B, sequence: *s}\n",
		"{\"sequences\": [{\"protein\": {\"id\": 1, \"sequence\": \"MK\"}}]}",
		"sequences:\n  - protein:\n      id: C\n      sequence: MKT\n      msa: |\n        key,sequence\n        0,MKT\n        ,MK-\n",
		"sequences: [\n",
		"MKTAYI",
		"",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		c, err := ParseInput("t", text)
		if err != nil {
			var perr *Error
			if !errors.As(err, &perr) {
				t.Fatalf("error %v is a %T, not a *bio.Error", err, err)
			}
			if c != nil {
				t.Fatalf("error %v came with a complex", err)
			}
			// YAML breaks lines at \n, \r\n and a lone \r alike.
			lines := strings.Count(strings.ReplaceAll(text, "\r\n", "\n"), "\n") + strings.Count(text, "\r") - strings.Count(text, "\r\n") + 1
			if perr.Line < 0 || perr.Line > lines+1 {
				t.Fatalf("error at line %d of a %d-line text: %v", perr.Line, lines, err)
			}
			return
		}
		checkComplex(t, c)
		again, err := ParseInput("t", formatYAML(c))
		if err != nil {
			t.Fatalf("re-reading the written YAML: %v\nYAML:\n%s", err, formatYAML(c))
		}
		clearPositions(c)
		clearPositions(again)
		if !reflect.DeepEqual(again, c) {
			t.Fatalf("round trip changed the complex:\n got %+v\nwant %+v", again, c)
		}
	})
}

// checkComplex checks the promises of a parsed complex.
func checkComplex(t *testing.T, c *Complex) {
	t.Helper()
	if len(c.Entities) == 0 {
		t.Fatal("a complex without entities")
	}
	seen := map[string]bool{}
	for _, e := range c.Entities {
		if len(e.IDs) == 0 {
			t.Fatalf("entity without ids: %+v", e)
		}
		for _, id := range e.IDs {
			if checkChainID(id) != nil || seen[id] {
				t.Fatalf("chain id %q invalid or repeated", id)
			}
			seen[id] = true
		}
		switch {
		case e.Kind.Polymer():
			if s, err := CheckSequence(e.Kind, e.Sequence); err != nil || s != e.Sequence {
				t.Fatalf("polymer sequence %q not clean: %v", e.Sequence, err)
			}
		case e.Kind == Ligand:
			if (e.SMILES == "") == (len(e.CCD) == 0) {
				t.Fatalf("ligand with both or neither of SMILES and CCD: %+v", e)
			}
		default:
			t.Fatalf("entity of kind %q", e.Kind)
		}
		if e.MSA.Source == MSAInline && e.Kind != Protein {
			t.Fatalf("an inline MSA on a %s", e.Kind)
		}
	}
	if c.Affinity != nil {
		if e, ok := c.Entity(c.Affinity.Binder); !ok || e.Kind != Ligand || len(e.IDs) != 1 {
			t.Fatalf("affinity binder %q is not a single-copy ligand", c.Affinity.Binder)
		}
	}
}

// FuzzCheckSMILES checks that the SMILES check never panics and that what it accepts
// keeps being accepted inside a larger molecule: as a branch and after a dot.
func FuzzCheckSMILES(f *testing.F) {
	for _, s := range []string{"CCO", "c1ccccc1", "N[C@@H](Cc1ccc(O)cc1)C(=O)O", "C%(12)C%(12)", "[Fe+++]", "C(", "[", "%"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if CheckSMILES(s) != nil {
			return
		}
		if err := CheckSMILES("C(" + s + ")C"); err != nil && !strings.ContainsAny(s, "0123456789%.") {
			t.Fatalf("%q is valid but not as a branch: %v", s, err)
		}
		if err := CheckSMILES("C." + s); err != nil && !strings.ContainsAny(s, "0123456789%") {
			t.Fatalf("%q is valid but not after a dot: %v", s, err)
		}
	})
}
