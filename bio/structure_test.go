package bio

import "testing"

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
