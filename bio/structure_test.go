package bio

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestStructureFormat(t *testing.T) {
	t.Parallel()
	const pdb = "HEADER    TEST\nATOM      1  N   ALA A   1      11.104   6.134  -6.504  1.00  0.00           N\nEND\n"
	const cif = "data_test\n#\nloop_\n_atom_site.group_PDB\n_atom_site.id\nATOM 1\n"
	tests := []struct {
		name, text, want string
	}{
		{"PDB", pdb, PDB},
		{"PDB with only HETATM", "HETATM    1  O   HOH A   1       0.000   0.000   0.000  1.00  0.00           O\n", PDB},
		{"PDB with CRLF", "ATOM      1  N   ALA A   1      11.104   6.134  -6.504  1.00  0.00           N\r\n", PDB},
		{"mmCIF", cif, MMCIF},
		{"mmCIF after blank lines and comments", "\n# written by a tool\n" + cif, MMCIF},
		{"mmCIF without atoms", "data_test\n_cell.length_a 10\n", ""},
		{"atom_site without data_ block", "_atom_site.id 1\n", ""},
		{"FASTA", ">a\nMKTAYIAK\n", ""},
		{"empty", "", ""},
		{"ATOM only inside a word", "ATOMS are small\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := StructureFormat(tt.text); got != tt.want {
				t.Errorf("StructureFormat = %q, want %q", got, tt.want)
			}
		})
	}
}

func readTestStructure(t testing.TB, name string) *Structure {
	t.Helper()
	text, err := os.ReadFile(filepath.Join("testdata", "structures", name))
	if err != nil {
		t.Fatal(err)
	}
	s, err := ReadStructure(string(text))
	if err != nil {
		t.Fatalf("ReadStructure(%s): %v", name, err)
	}
	return s
}

func TestReadStructure(t *testing.T) {
	t.Parallel()
	pdb := readTestStructure(t, "target.pdb")
	cif := readTestStructure(t, "target.cif")
	tests := []struct {
		name string
		s    *Structure
		want string // chain: kind, residues, sequence, labels
	}{
		{"PDB: gap at 8, altlocs and hydrogens add nothing, 15A and 15B inserted, MSE in the chain",
			pdb, "A protein 1-7, 9-15, 15A, 15B, 16-20 MKTAYIAQMQISFVGGKSHFS [A] ATP;" +
				"B dna 1-6 CGATTG [B];C rna 1-4 GCUA [C]"},
		{"mmCIF: author ids over label ids, 55A inserted, waters and model 2 left out",
			cif, "A protein 51-55, 55A, 57-60 GSALWEDKRV [A B] NAG;X dna 1-4 ATGC [C];Y dna 11-14 GCAT [D]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got []string
			for _, c := range tt.s.Chains {
				line := fmt.Sprintf("%s %s %s %s %v", c.ID, c.Kind, c.Spans(), c.Sequence(), c.LabelIDs)
				for _, l := range c.Ligands {
					line += " " + l.Name
				}
				got = append(got, line)
			}
			if g := strings.Join(got, ";"); g != tt.want {
				t.Errorf("chains\n%s\nwant\n%s", g, tt.want)
			}
			if tt.s.Models != 2 {
				t.Errorf("Models = %d, want 2", tt.s.Models)
			}
		})
	}
	if pdb.Waters != 3 || cif.Waters != 2 {
		t.Errorf("waters: PDB %d, mmCIF %d; want 3 and 2", pdb.Waters, cif.Waters)
	}
	if a, _ := cif.Chain("A"); a.Residues[5].LabelSeq != 6 {
		t.Errorf("mmCIF residue 55A has label_seq_id %d, want 6", a.Residues[5].LabelSeq)
	}
	if c, ok := cif.ChainByAnyID("C"); !ok || c.ID != "X" {
		t.Errorf("ChainByAnyID(C) = %v, %v; want the author chain X", c, ok)
	}
}

func TestReadStructureErrors(t *testing.T) {
	t.Parallel()
	const atomSite = "data_x\nloop_\n_atom_site.group_PDB\n_atom_site.label_comp_id\n_atom_site.auth_asym_id\n_atom_site.auth_seq_id\n"
	tests := []struct {
		name, text, want string
	}{
		{"FASTA", ">a\nMKT\n", "neither PDB text"},
		{"PDB record cut short", "ATOM      1  N   ALA A\n", "line 1: the ATOM record is 22 characters long"},
		{"PDB residue number not a number", "ATOM      1  N   ALA A   X      0.000   0.000   0.000\n", `line 1, column 23: residue number "X"`},
		{"PDB of waters only", "HETATM    1  O   HOH A   1       0.000   0.000   0.000  1.00  0.00           O\n", "no residues other than water"},
		{"mmCIF row cut short", atomSite + "ATOM ALA A 1\nATOM ALA A\n", "line 8: the _atom_site loop ends inside a row: 3 values of the 4 columns"},
		{"mmCIF residue number not a number", atomSite + "ATOM ALA A one\n", `line 7: residue number "one" is not a number`},
		{"mmCIF quote never closed", atomSite + "ATOM 'ALA A 1\n", "line 7: a quoted value"},
		{"mmCIF text field never closed", atomSite + ";ATOM\n", "line 7: a text field"},
		{"mmCIF without a chain column", "data_x\nloop_\n_atom_site.label_comp_id\n_atom_site.auth_seq_id\nALA 1\n", "no _atom_site.auth_asym_id"},
		{"mmCIF atom_site not a loop", "data_x\n_atom_site.id 1\n", "not a loop"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := ReadStructure(tt.text)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ReadStructure = %+v, %v; want an error containing %q", s, err, tt.want)
			}
		})
	}
}

func TestContigCheckAgainst(t *testing.T) {
	t.Parallel()
	pdb := readTestStructure(t, "target.pdb")
	tests := []struct {
		contig, want string // want "" for no error
	}{
		{"A1-7,40-60", ""},
		{"A9-14,/0,B1-6,10", ""},
		{"A3,A16-20,5", ""},
		{"A1-10,50", "segment 1 A1-10: chain A has no residue 8; its residues are 1-7, 9-15, 15A, 15B, 16-20"},
		{"30,/0,E1-10", "segment 3 E1-10: the structure has no chain E; its chains are A (protein, residues 1-7, 9-15, 15A, 15B, 16-20), B (dna, residues 1-6), C (rna, residues 1-4)"},
		{"A12-16,20", "segment 1 A12-16: chain A has 3 residues numbered 15 (insertion codes none, A, B)"},
		{"B1-7,20", "chain B has no residue 7"},
	}
	for _, tt := range tests {
		c, err := ParseContig(tt.contig)
		if err != nil {
			t.Fatal(err)
		}
		err = c.CheckAgainst(pdb)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v", tt.contig, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: error %v, want one containing %q", tt.contig, err, tt.want)
		}
	}
	c, _ := ParseContig("A1-5,/0,B1-6,/0,C1-2,40")
	if got := c.KeptKinds(pdb); !slices.Equal(got, []Kind{Protein, DNA, RNA}) {
		t.Errorf("KeptKinds = %v", got)
	}
}

// FuzzReadStructure checks that any text either reads or fails with an error, and that a
// structure read holds chains with residues or ligands, each chain of a known kind.
func FuzzReadStructure(f *testing.F) {
	for _, name := range []string{"target.pdb", "target.cif"} {
		b, err := os.ReadFile(filepath.Join("testdata", "structures", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Add("data_x\nloop_\n_atom_site.label_comp_id\n_atom_site.auth_asym_id\n_atom_site.auth_seq_id\nALA A 1\n")
	f.Fuzz(func(t *testing.T, text string) {
		s, err := ReadStructure(text)
		if err != nil {
			return
		}
		if len(s.Chains) == 0 || s.Models < 1 {
			t.Fatalf("a structure without chains or models: %+v", s)
		}
		for _, c := range s.Chains {
			if len(c.Residues)+len(c.Ligands) == 0 || !slices.Contains([]Kind{Protein, DNA, RNA, Ligand}, c.Kind) {
				t.Fatalf("chain %+v", c)
			}
			if len(c.Sequence()) != len(c.Residues) {
				t.Fatalf("chain %s: sequence %q for %d residues", c.ID, c.Sequence(), len(c.Residues))
			}
			_ = s.Describe()
		}
	})
}

func TestDescribeNamesBlankChainsAndStopsAfterADozen(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("ATOM      1  CA  GLY     1       0.000   0.000   0.000\n")
	for i := range 20 {
		fmt.Fprintf(&b, "ATOM  %5d  CA  GLY %c   1       0.000   0.000   0.000\n", i+2, 'A'+i)
	}
	s, err := ReadStructure(b.String())
	if err != nil {
		t.Fatal(err)
	}
	got := s.Describe()
	if !strings.HasPrefix(got, "(no chain id) (protein, residues 1), A (protein") || !strings.HasSuffix(got, "K (protein, residues 1), and 9 more") {
		t.Errorf("Describe = %q", got)
	}
}
