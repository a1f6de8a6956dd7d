package boltz

import (
	"fmt"
	"strings"

	"github.com/chaperone-bio/chaperone/bio"
	"github.com/chaperone-bio/chaperone/engine/toolkit/pdbfile"
)

// templateFile is a template as Boltz reads it: its format, its text and the ids of its
// chains that template_id names.
//
// Boltz reads an mmCIF template with gemmi.make_structure_from_block and takes its chains
// from the entities the file declares (boltz/data/parse/mmcif.py:838-890 in 2.2.1): an
// mmCIF of only an _atom_site loop, which a caller may well send, reads as no model at all
// (IndexError, and Boltz skips the input with an empty reason). Such a file is written as
// PDB, whose reader has gemmi find the entities (pdb.py:14-39, setup_entities).
//
// Boltz's PDB reader renames each chain's parts: the first (the polymer) of chain A becomes
// A1 (pdb.py:19-28), and template_id must name that. It aligns each polymer to its
// entity's full sequence, which gemmi takes from SEQRES only: a PDB without SEQRES fails
// (mmcif.py:571-588, "list index out of range"), so the engine writes SEQRES from the
// residues when the file has none.
func templateFile(tm bio.Template) (format, text string, ids []string, err error) {
	format, text = tm.Format, tm.Text
	if format == bio.MMCIF && !strings.Contains(text, "_entity.") {
		b, err := pdbfile.FromMMCIF([]byte(text))
		if err != nil {
			return "", "", nil, fmt.Errorf("Boltz reads this mmCIF, which declares no entities, only as PDB, and %w", err)
		}
		format, text = bio.PDB, string(b)
	}
	if format != bio.PDB {
		return format, text, tm.TemplateIDs, nil
	}
	text = withSEQRES(text)
	if tm.TemplateIDs != nil {
		ids = make([]string, len(tm.TemplateIDs))
		for i, id := range tm.TemplateIDs {
			ids[i] = id + "1"
		}
	}
	return format, text, ids, nil
}

// withSEQRES adds SEQRES records to a PDB that has none: per chain of the first model, its
// residues in order up to the chain's TER, without the HETATM groups after its last ATOM
// (ligands and water).
func withSEQRES(pdb string) string {
	type residue struct {
		key, name string
		atom      bool // an ATOM record, not HETATM
	}
	var order []string
	chains := map[string][]residue{}
	ended := map[string]bool{}
	for line := range strings.Lines(pdb) {
		record := strings.TrimSpace(line[:min(6, len(line))])
		switch {
		case record == "SEQRES":
			return pdb
		case record == "TER" && len(line) > 21:
			ended[line[21:22]] = true
		case (record == "ATOM" || record == "HETATM") && len(line) >= 27:
			chain, name, key := line[21:22], strings.TrimSpace(line[17:20]), line[22:27]
			rs := chains[chain]
			if ended[chain] || len(rs) > 0 && rs[len(rs)-1].key == key {
				continue
			}
			if len(rs) == 0 {
				order = append(order, chain)
			}
			chains[chain] = append(rs, residue{key, name, record == "ATOM"})
		}
		if record == "ENDMDL" {
			break
		}
	}
	var b strings.Builder
	for _, chain := range order {
		rs := chains[chain]
		for len(rs) > 0 && !rs[len(rs)-1].atom {
			rs = rs[:len(rs)-1]
		}
		for i := 0; i < len(rs); i += 13 {
			names := make([]string, 0, 13)
			for _, r := range rs[i:min(i+13, len(rs))] {
				names = append(names, fmt.Sprintf("%3s", r.name))
			}
			fmt.Fprintf(&b, "SEQRES %3d %1s %4d  %s\n", i/13+1, chain, len(rs), strings.Join(names, " "))
		}
	}
	return b.String() + pdb
}
