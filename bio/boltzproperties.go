package bio

import (
	"strings"

	"github.com/goccy/go-yaml/ast"
)

// maxAffinityAtoms is Boltz's limit on the heavy atoms of an affinity ligand.
const maxAffinityAtoms = 128

// property reads one item of the properties list; affinity is the only property.
func (r *yamlReader) property(item ast.Node, path string) error {
	top, err := r.single(item, path, true, "affinity")
	if err != nil {
		return err
	}
	path += ".affinity"
	f, err := r.fields(top.value, path, "binder")
	if err != nil {
		return err
	}
	bf, ok := f["binder"]
	if !ok {
		return Errorf(top.pos, "%s needs binder, the chain id of the ligand", path)
	}
	if r.c.Affinity != nil {
		return Errorf(top.pos, "%s: only one affinity property per target is supported", path)
	}
	bn, err := r.resolve(bf.value)
	if err != nil {
		return err
	}
	if _, isList := bn.(*ast.SequenceNode); isList {
		return Errorf(nodePos(bn), "%s.binder must name one ligand chain, not a list", path)
	}
	binder, pos, err := r.text(bn, path+".binder")
	if err != nil {
		return err
	}
	e, err := r.chainOf(binder, pos, path+".binder")
	switch {
	case err != nil:
		return err
	case e.Kind != Ligand:
		return Errorf(pos, "%s.binder: chain %s is a %s; affinity is predicted for a ligand chain", path, binder, e.Kind)
	case len(e.IDs) > 1:
		return Errorf(pos, "%s.binder: ligand %s has %d copies (%s); affinity needs a ligand with a single copy", path, binder, len(e.IDs), strings.Join(e.IDs, ", "))
	case len(e.CCD) > 1:
		return Errorf(pos, "%s.binder: ligand %s has %d residues; affinity needs a single-residue ligand", path, binder, len(e.CCD))
	case e.SMILES != "" && smilesHeavyAtoms(e.SMILES) > maxAffinityAtoms:
		return Errorf(pos, "%s.binder: ligand %s has %d heavy atoms; affinity takes at most %d", path, binder, smilesHeavyAtoms(e.SMILES), maxAffinityAtoms)
	}
	r.c.Affinity = &Affinity{Binder: binder, Pos: top.pos}
	return nil
}
