package bio

import (
	"fmt"
	"strings"
)

// boltzFASTATypes maps the entity types of Boltz's FASTA headers to a kind; ccd and
// smiles are ligands given one way or the other.
var boltzFASTATypes = map[string]Kind{"protein": Protein, "dna": DNA, "rna": RNA, "ccd": Ligand, "smiles": Ligand}

// parseFASTAComplex reads FASTA text as one complex, one entity of one chain per record,
// in one of two forms that a text may not mix:
//
//   - plain FASTA: any headers; every record is a protein, and the chains are named A, B,
//     C, … in record order;
//   - Boltz's headers, >ID|TYPE or >ID|TYPE|MSA: ID is the chain id; TYPE is protein, dna,
//     rna, ccd (the record holds a CCD code) or smiles (it holds a SMILES string), in any
//     case; MSA, for proteins only, is empty (align on the server) or "empty" (single
//     sequence). A path there would make the server read its own disk, so it is refused.
//
// As in Boltz (and Biopython, which it uses) the header's first word is the id; the rest
// is a description.
func parseFASTAComplex(name, text string) (*Complex, error) {
	records, lines, err := parseFASTA(text)
	if err != nil {
		return nil, &Error{Msg: err.Error()}
	}
	boltzForm := func(r Record) bool {
		_, typ, found := strings.Cut(r.ID, "|")
		typ, _, _ = strings.Cut(typ, "|")
		_, ok := boltzFASTATypes[strings.ToLower(typ)]
		return found && ok
	}
	first := boltzForm(records[0])
	c := &Complex{Name: name}
	chains := chainTable{}
	for i, r := range records {
		pos := Pos{Line: lines[i]}
		if boltzForm(r) != first {
			return nil, Errorf(pos, "header >%s and the header at line %d use different forms; use Boltz's >ID|TYPE headers for every record or for none", r.ID, lines[0])
		}
		e := Entity{Kind: Protein, Pos: pos}
		id := chainName(i)
		if first {
			if e, id, err = boltzRecord(r, pos); err != nil {
				return nil, err
			}
		} else if e.Sequence, err = CheckProtein(r.Sequence); err != nil {
			return nil, Errorf(pos, "record %s: protein sequence %v", r.ID, err)
		}
		e.IDs = []string{id}
		if err := chains.add(id, len(c.Entities), pos); err != nil {
			return nil, err
		}
		c.Entities = append(c.Entities, e)
	}
	return c, nil
}

// boltzRecord reads one record with a Boltz header.
func boltzRecord(r Record, pos Pos) (Entity, string, error) {
	parts := strings.Split(r.ID, "|")
	id, typ := parts[0], strings.ToLower(parts[1])
	e := Entity{Kind: boltzFASTATypes[typ], Pos: pos}
	if len(parts) > 3 {
		return e, "", Errorf(pos, "header >%s has %d fields; Boltz headers are >ID|TYPE or >ID|TYPE|MSA", r.ID, len(parts))
	}
	if id == "" {
		return e, "", Errorf(pos, "header >%s has no chain id before the first '|'", r.ID)
	}
	if len(parts) == 3 && parts[2] != "" {
		if e.Kind != Protein {
			return e, "", Errorf(pos, "header >%s gives an MSA, which only protein chains take", r.ID)
		}
		if !strings.EqualFold(parts[2], "empty") {
			return e, "", Errorf(pos, "header >%s: the MSA field %s", r.ID, msaPathRefusal(parts[2]))
		}
		e.MSA.Source = MSANone
	}
	var err error
	switch typ {
	case "ccd":
		var code string
		if code, err = ccdCode(r.Sequence); err == nil {
			e.CCD = []string{code}
		}
	case "smiles":
		if err = CheckSMILES(r.Sequence); err == nil {
			e.SMILES = r.Sequence
		}
	default:
		e.Sequence, err = CheckSequence(e.Kind, r.Sequence)
		if err != nil {
			err = fmt.Errorf("%s sequence %v", e.Kind, err)
		}
	}
	if err != nil {
		return e, "", Errorf(pos, "chain %s: %v", id, err)
	}
	return e, id, nil
}

// msaPathRefusal explains why an MSA given as a file path is refused, and what to send.
func msaPathRefusal(path string) string {
	return fmt.Sprintf("%q is a path to a file, and the service never reads files on the server; "+
		"send the alignment itself (A3M or CSV text in a YAML block, msa: |), msa: empty for single-sequence, "+
		"or leave msa out to align on the MSA server", path)
}

// chainName is the default name of the i-th chain (0-based): A … Z, then AA, AB, ….
func chainName(i int) string {
	name := ""
	for i++; i > 0; i = (i - 1) / 26 {
		name = string(rune('A'+(i-1)%26)) + name
	}
	return name
}
