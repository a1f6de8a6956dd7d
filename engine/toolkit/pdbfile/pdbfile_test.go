package pdbfile

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chaperone-bio/chaperone/internal/testpython"
)

// protein is an mmCIF as Protenix writes it (biotite): a protein chain, a ligand without
// label_seq_id, a quoted atom name, and a comment.
const protein = `data_demo
#
loop_
_atom_site.group_PDB
_atom_site.id
_atom_site.type_symbol
_atom_site.label_atom_id
_atom_site.label_alt_id
_atom_site.label_comp_id
_atom_site.label_asym_id
_atom_site.label_entity_id
_atom_site.label_seq_id
_atom_site.pdbx_PDB_ins_code
_atom_site.Cartn_x
_atom_site.Cartn_y
_atom_site.Cartn_z
_atom_site.occupancy
_atom_site.B_iso_or_equiv
_atom_site.auth_seq_id
_atom_site.auth_asym_id
_atom_site.pdbx_PDB_model_num
ATOM 1 N N . MET A 1 1 ? 1.000 2.000 3.000 1.0 81.25 1 A 1
ATOM 2 C CA . MET A 1 1 ? 2.456 -2.100 3.5 1.0 82.5 1 A 1
ATOM 3 SE SE . MET A 1 1 ? -12.5 100.25 -3.125 1.0 80.0 1 A 1
ATOM 4 C C . LYS A 1 2 ? 4.0 5.0 6.0 1.0 70.0 2 A 1
HETATM 5 C "C1'" . ATP B 2 . ? 7.0 8.0 9.0 1.0 60.0 1 B 1
HETATM 6 MG MG . MG C 3 . ? 10.0 11.0 12.0 1.0 55.5 1 C 1
#
loop_
_chem_comp.id
MET
#
`

func TestFromMMCIF(t *testing.T) {
	t.Parallel()
	pdb, err := FromMMCIF([]byte(protein))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"ATOM      1  N   MET A   1       1.000   2.000   3.000  1.00 81.25           N  ",
		"ATOM      2  CA  MET A   1       2.456  -2.100   3.500  1.00 82.50           C  ",
		"ATOM      3 SE   MET A   1     -12.500 100.250  -3.125  1.00 80.00          SE  ",
		"ATOM      4  C   LYS A   2       4.000   5.000   6.000  1.00 70.00           C  ",
		"TER       5",
		"HETATM    6  C1' ATP B   1       7.000   8.000   9.000  1.00 60.00           C  ",
		"HETATM    7 MG    MG C   1      10.000  11.000  12.000  1.00 55.50          MG  ",
		"END",
	}
	if got := strings.Split(strings.TrimSuffix(string(pdb), "\n"), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestFromMMCIFRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, from, to, want string }{
		{"a long chain id", " 1 A 1\nATOM 2", " 1 AB 1\nATOM 2", `chain "AB"`},
		{"a long residue name", "ATP B 2", "ATPXY B 2", "residue names of up to 3"},
		{"no atom site", "_atom_site.", "_atom_zone.", "no _atom_site loop"},
		{"a cut row", "55.5 1 C 1\n", "55.5 1\n", "middle of a row"},
	}
	for _, tt := range tests {
		in := strings.Replace(protein, tt.from, tt.to, 1)
		if in == protein {
			t.Fatalf("%s: the test input did not change", tt.name)
		}
		if _, err := FromMMCIF([]byte(in)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.want)
		}
	}
}

// TestGemmiReadsTheSame reads the mmCIF and the PDB written from it with gemmi: every
// atom must have the same chain, residue, name, element, coordinates and B-factor.
func TestGemmiReadsTheSame(t *testing.T) {
	t.Parallel()
	python := testpython.Require(t, "gemmi")
	dir := t.TempDir()
	pdb, err := FromMMCIF([]byte(protein))
	if err != nil {
		t.Fatal(err)
	}
	cifPath, pdbPath := filepath.Join(dir, "s.cif"), filepath.Join(dir, "s.pdb")
	if err := os.WriteFile(cifPath, []byte(protein), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pdbPath, pdb, 0o644); err != nil {
		t.Fatal(err)
	}
	script := `import gemmi, sys
def atoms(path):
    st = gemmi.read_structure(path)
    out = []
    for ch in st[0]:
        for res in ch:
            for a in res:
                out.append((ch.name, res.name, res.seqid.num, a.name, a.element.name, round(a.pos.x, 3), round(a.pos.y, 3), round(a.pos.z, 3), round(a.b_iso, 2), res.het_flag))
    return out
a, b = atoms(sys.argv[1]), atoms(sys.argv[2])
print(len(a))
if a != b:
    print(a); print(b); sys.exit(1)
`
	out, err := exec.Command(python, "-c", script, cifPath, pdbPath).CombinedOutput()
	if err != nil {
		t.Fatalf("gemmi reads the two files differently: %v\n%s\n%s", err, out, pdb)
	}
	if strings.TrimSpace(string(out)) != "6" {
		t.Errorf("gemmi read %s atoms, want 6", out)
	}
}

// FuzzFromMMCIF: any text is converted or refused with an error, never a panic, and what is
// converted ends as a PDB file does.
func FuzzFromMMCIF(f *testing.F) {
	f.Add(protein)
	f.Add("data_x\nloop_\n_atom_site.label_atom_id\n_atom_site.label_comp_id\n_atom_site.label_asym_id\n_atom_site.Cartn_x\n_atom_site.Cartn_y\n_atom_site.Cartn_z\n'CA' ALA A 1 2 3\n")
	f.Add(";\ntext\n;\n")
	f.Fuzz(func(t *testing.T, text string) {
		pdb, err := FromMMCIF([]byte(text))
		if err == nil && !strings.HasSuffix(string(pdb), "END\n") {
			t.Errorf("converted %q to %q", text, pdb)
		}
	})
}
