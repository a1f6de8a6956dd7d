package bio

import (
	"fmt"
	"strings"

	"github.com/goccy/go-yaml/ast"
)

// entityKeys are the keys an item of the sequences list may hold, by its kind.
var entityKeys = map[Kind][]string{
	Protein: {"id", "sequence", "msa", "modifications", "cyclic"},
	DNA:     {"id", "sequence", "modifications", "cyclic"},
	RNA:     {"id", "sequence", "modifications", "cyclic"},
	Ligand:  {"id", "smiles", "ccd", "cyclic"},
}

// entity reads one item of the sequences list.
func (r *yamlReader) entity(item ast.Node, path string) error {
	top, err := r.single(item, path, true, "protein", "dna", "rna", "ligand")
	if err != nil {
		return err
	}
	kind := Kind(top.key)
	path += "." + top.key
	f, err := r.fields(top.value, path, entityKeys[kind]...)
	if err != nil {
		return err
	}
	e := Entity{Kind: kind, Pos: top.pos}
	idf, ok := f["id"]
	if !ok {
		return Errorf(top.pos, "%s has no id; give it a chain id such as A, or a list such as [A, B] for copies", path)
	}
	ids, idPos, err := r.texts(idf.value, path+".id")
	if err != nil {
		return err
	}
	for i, id := range ids {
		if err := r.chains.add(id, len(r.c.Entities), idPos[i]); err != nil {
			return err
		}
	}
	e.IDs = ids
	if kind.Polymer() {
		err = r.polymer(&e, f, path)
	} else {
		err = r.ligand(&e, f, path)
	}
	if err != nil {
		return err
	}
	r.c.Entities = append(r.c.Entities, e)
	return nil
}

// polymer reads the fields of a protein, DNA or RNA entity.
func (r *yamlReader) polymer(e *Entity, f map[string]yamlField, path string) error {
	sf, ok := f["sequence"]
	if !ok {
		return Errorf(e.Pos, "%s has no sequence", path)
	}
	raw, pos, err := r.text(sf.value, path+".sequence")
	if err != nil {
		return err
	}
	if e.Sequence, err = CheckSequence(e.Kind, raw); err != nil {
		return Errorf(pos, "%s.sequence %v", path, err)
	}
	if mf, ok := f["msa"]; ok {
		if e.MSA, err = r.msa(mf.value, e.Sequence, path+".msa"); err != nil {
			return err
		}
	}
	if cf, ok := f["cyclic"]; ok {
		if e.Cyclic, err = r.boolean(cf.value, path+".cyclic"); err != nil {
			return err
		}
	}
	mf, ok := f["modifications"]
	if !ok {
		return nil
	}
	if null, err := r.isNull(mf.value); err != nil || null {
		return err
	}
	mods, err := r.list(mf.value, path+".modifications")
	if err != nil {
		return err
	}
	seen := map[int]bool{}
	for i, m := range mods {
		mp := fmt.Sprintf("%s.modifications[%d]", path, i)
		mfields, err := r.fields(m, mp, "position", "ccd")
		if err != nil {
			return err
		}
		pf, okp := mfields["position"]
		cf, okc := mfields["ccd"]
		if !okp || !okc {
			return Errorf(nodePos(m), "%s needs both position (1-based residue index) and ccd (the modified residue's CCD code)", mp)
		}
		p, ppos, err := r.integer(pf.value, mp+".position")
		if err != nil {
			return err
		}
		if p < 1 || p > len(e.Sequence) {
			return Errorf(ppos, "%s.position %d is outside the sequence, whose residues are 1 to %d", mp, p, len(e.Sequence))
		}
		if seen[p] {
			return Errorf(ppos, "%s.position %d is modified twice", mp, p)
		}
		seen[p] = true
		code, cpos, err := r.text(cf.value, mp+".ccd")
		if err != nil {
			return err
		}
		if code, err = ccdCode(code); err != nil {
			return Errorf(cpos, "%s: %v", mp, err)
		}
		e.Modifications = append(e.Modifications, Modification{Position: p, CCD: code})
	}
	return nil
}

// msa reads a protein's msa setting: missing or empty means the server, "empty" means
// single-sequence, text with a line break (a YAML block, msa: |) is an inline alignment,
// and anything else is a path, which the service refuses to read.
func (r *yamlReader) msa(n ast.Node, seq, path string) (MSA, error) {
	rn, err := r.resolve(n)
	if err != nil {
		return MSA{}, err
	}
	if null, _ := r.isNull(rn); null {
		return MSA{}, nil
	}
	s, ok := scalarText(rn)
	switch {
	case !ok:
		return MSA{}, Errorf(nodePos(rn), "%s must be text, not %s", path, describe(rn))
	case strings.TrimSpace(s) == "":
		return MSA{}, nil
	case strings.EqualFold(strings.TrimSpace(s), "empty"):
		return MSA{Source: MSANone}, nil
	case !strings.Contains(s, "\n"):
		return MSA{}, Errorf(nodePos(rn), "%s: %s", path, msaPathRefusal(s))
	}
	format, err := inlineMSA(s, seq)
	if err != nil {
		return MSA{}, Errorf(nodePos(rn), "%s: %v", path, err)
	}
	return MSA{Source: MSAInline, Format: format, Text: s}, nil
}

// ligand reads the fields of a ligand entity: a SMILES string or CCD codes.
func (r *yamlReader) ligand(e *Entity, f map[string]yamlField, path string) error {
	sf, hasSMILES := f["smiles"]
	cf, hasCCD := f["ccd"]
	if hasSMILES == hasCCD {
		return Errorf(e.Pos, "%s needs exactly one of smiles and ccd", path)
	}
	if cyc, ok := f["cyclic"]; ok {
		c, err := r.boolean(cyc.value, path+".cyclic")
		if err != nil {
			return err
		}
		if c {
			return Errorf(cyc.pos, "%s: only polymers can be cyclic", path)
		}
	}
	if hasSMILES {
		s, pos, err := r.text(sf.value, path+".smiles")
		if err != nil {
			return err
		}
		if err := CheckSMILES(s); err != nil {
			return Errorf(pos, "%s: %v", path, err)
		}
		e.SMILES = s
		return nil
	}
	codes, poss, err := r.texts(cf.value, path+".ccd")
	if err != nil {
		return err
	}
	for i, code := range codes {
		if codes[i], err = ccdCode(code); err != nil {
			return Errorf(poss[i], "%s: %v", path, err)
		}
	}
	e.CCD = codes
	return nil
}

// chainOf resolves a chain id written at pos.
func (r *yamlReader) chainOf(id string, pos Pos, path string) (*Entity, error) {
	ref, ok := r.chains[id]
	if !ok {
		return nil, Errorf(pos, "%s names chain %q, which the sequences do not define (chains: %s)", path, id, strings.Join(r.chainIDs(), ", "))
	}
	return &r.c.Entities[ref.entity], nil
}

// chainIDs lists the complex's chain ids in the order they were written.
func (r *yamlReader) chainIDs() []string {
	var ids []string
	for _, e := range r.c.Entities {
		ids = append(ids, e.IDs...)
	}
	return ids
}
