package bio

import "strings"

// Structure formats that StructureFormat recognises.
const (
	PDB   = "pdb"
	MMCIF = "cif"
)

// StructureFormat is a first look at structure text: MMCIF when its first data line opens a
// data_ block and it has _atom_site records, PDB when it has ATOM or HETATM records, and ""
// when it looks like neither. It does not check coordinates; it stops a pasted FASTA, an
// empty file or a binary upload before a design job is queued on it.
func StructureFormat(text string) string {
	first := true
	cif, atomSite, pdb := false, false, false
	for line := range strings.Lines(text) {
		t := strings.TrimSpace(line)
		if t == "" {
			continue
		}
		if first && t[0] != '#' {
			cif = strings.HasPrefix(t, "data_")
			first = false
		}
		switch {
		case strings.HasPrefix(t, "_atom_site."):
			atomSite = true
		case strings.HasPrefix(line, "ATOM ") || strings.HasPrefix(line, "HETATM"):
			pdb = true
		}
	}
	switch {
	case cif && atomSite:
		return MMCIF
	case pdb:
		return PDB
	}
	return ""
}
