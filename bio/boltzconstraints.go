package bio

import (
	"fmt"
	"math"
	"strings"

	"github.com/goccy/go-yaml/ast"
)

// maxAtomName is the longest atom name Boltz stores.
const maxAtomName = 4

// constraint reads one item of the constraints list.
func (r *yamlReader) constraint(item ast.Node, path string) error {
	top, err := r.single(item, path, false, "bond", "pocket", "contact")
	if err != nil {
		return err
	}
	path += "." + top.key
	c := Constraint{Pos: top.pos}
	switch top.key {
	case "bond":
		f, err := r.fields(top.value, path, "atom1", "atom2")
		if err != nil {
			return err
		}
		a1, ok1 := f["atom1"]
		a2, ok2 := f["atom2"]
		if !ok1 || !ok2 {
			return Errorf(top.pos, "%s needs atom1 and atom2, each [CHAIN, RESIDUE_INDEX, ATOM_NAME]", path)
		}
		b := &Bond{}
		if b.Atom1, err = r.atom(a1.value, path+".atom1"); err != nil {
			return err
		}
		if b.Atom2, err = r.atom(a2.value, path+".atom2"); err != nil {
			return err
		}
		c.Bond = b
	case "pocket":
		f, err := r.fields(top.value, path, "binder", "contacts", "max_distance", "force")
		if err != nil {
			return err
		}
		bf, okb := f["binder"]
		cf, okc := f["contacts"]
		if !okb || !okc {
			return Errorf(top.pos, "%s needs binder (a chain id) and contacts (a list of [CHAIN, RESIDUE_INDEX or ATOM_NAME])", path)
		}
		p := &Pocket{}
		binder, bpos, err := r.text(bf.value, path+".binder")
		if err != nil {
			return err
		}
		if _, err := r.chainOf(binder, bpos, path+".binder"); err != nil {
			return err
		}
		p.Binder = binder
		contacts, err := r.list(cf.value, path+".contacts")
		if err != nil {
			return err
		}
		if len(contacts) == 0 {
			return Errorf(cf.pos, "%s.contacts is empty", path)
		}
		for i, n := range contacts {
			t, err := r.token(n, fmt.Sprintf("%s.contacts[%d]", path, i))
			if err != nil {
				return err
			}
			p.Contacts = append(p.Contacts, t)
		}
		if p.MaxDistance, p.Force, err = r.distanceForce(f, path); err != nil {
			return err
		}
		c.Pocket = p
	case "contact":
		f, err := r.fields(top.value, path, "token1", "token2", "max_distance", "force")
		if err != nil {
			return err
		}
		t1, ok1 := f["token1"]
		t2, ok2 := f["token2"]
		if !ok1 || !ok2 {
			return Errorf(top.pos, "%s needs token1 and token2, each [CHAIN, RESIDUE_INDEX or ATOM_NAME]", path)
		}
		k := &Contact{}
		if k.Token1, err = r.token(t1.value, path+".token1"); err != nil {
			return err
		}
		if k.Token2, err = r.token(t2.value, path+".token2"); err != nil {
			return err
		}
		if k.MaxDistance, k.Force, err = r.distanceForce(f, path); err != nil {
			return err
		}
		c.Contact = k
	}
	r.c.Constraints = append(r.c.Constraints, c)
	return nil
}

// distanceForce reads the optional max_distance and force of a pocket or contact.
func (r *yamlReader) distanceForce(f map[string]yamlField, path string) (float64, bool, error) {
	var d float64
	var force bool
	if df, ok := f["max_distance"]; ok {
		v, pos, err := r.number(df.value, path+".max_distance")
		if err != nil {
			return 0, false, err
		}
		if !(v > 0) || math.IsInf(v, 0) {
			return 0, false, Errorf(pos, "%s.max_distance must be a positive distance in ångströms", path)
		}
		d = v
	}
	if ff, ok := f["force"]; ok {
		v, err := r.boolean(ff.value, path+".force")
		if err != nil {
			return 0, false, err
		}
		force = v
	}
	return d, force, nil
}

// atom reads [CHAIN, RESIDUE_INDEX, ATOM_NAME] and checks that the residue exists.
func (r *yamlReader) atom(n ast.Node, path string) (Atom, error) {
	items, err := r.list(n, path)
	if err != nil {
		return Atom{}, err
	}
	if len(items) != 3 {
		return Atom{}, Errorf(nodePos(n), "%s must be [CHAIN, RESIDUE_INDEX, ATOM_NAME], not %d items", path, len(items))
	}
	chain, cpos, err := r.text(items[0], path+"[0]")
	if err != nil {
		return Atom{}, err
	}
	e, err := r.chainOf(chain, cpos, path)
	if err != nil {
		return Atom{}, err
	}
	res, rpos, err := r.integer(items[1], path+"[1]")
	if err != nil {
		return Atom{}, err
	}
	if res < 1 || res > e.Residues() {
		return Atom{}, Errorf(rpos, "%s: chain %s has residues 1 to %d, not %d", path, chain, e.Residues(), res)
	}
	name, npos, err := r.text(items[2], path+"[2]")
	if err != nil {
		return Atom{}, err
	}
	if err := checkAtomName(name); err != nil {
		return Atom{}, Errorf(npos, "%s: %v", path, err)
	}
	return Atom{Chain: chain, Residue: res, Name: name}, nil
}

// token reads [CHAIN, RESIDUE_INDEX] for a polymer chain or [CHAIN, ATOM_NAME] for a
// ligand chain, as Boltz's constraints address them.
func (r *yamlReader) token(n ast.Node, path string) (Token, error) {
	items, err := r.list(n, path)
	if err != nil {
		return Token{}, err
	}
	if len(items) != 2 {
		return Token{}, Errorf(nodePos(n), "%s must be [CHAIN, RESIDUE_INDEX] or, for a ligand, [CHAIN, ATOM_NAME], not %d items", path, len(items))
	}
	chain, cpos, err := r.text(items[0], path+"[0]")
	if err != nil {
		return Token{}, err
	}
	e, err := r.chainOf(chain, cpos, path)
	if err != nil {
		return Token{}, err
	}
	where, err := r.resolve(items[1])
	if err != nil {
		return Token{}, err
	}
	_, isInt := where.(*ast.IntegerNode)
	if e.Kind == Ligand {
		if isInt {
			return Token{}, Errorf(nodePos(where), "%s: chain %s is a ligand, so name one of its atoms (like C1), not a residue index", path, chain)
		}
		name, npos, err := r.text(where, path+"[1]")
		if err != nil {
			return Token{}, err
		}
		if err := checkAtomName(name); err != nil {
			return Token{}, Errorf(npos, "%s: chain %s is a ligand, so name one of its atoms: %v", path, chain, err)
		}
		return Token{Chain: chain, Atom: name}, nil
	}
	if !isInt {
		return Token{}, Errorf(nodePos(where), "%s: chain %s is a %s, so give a residue index (1 to %d)", path, chain, e.Kind, e.Residues())
	}
	res, rpos, err := r.integer(where, path+"[1]")
	if err != nil {
		return Token{}, err
	}
	if res < 1 || res > e.Residues() {
		return Token{}, Errorf(rpos, "%s: chain %s has residues 1 to %d, not %d", path, chain, e.Residues(), res)
	}
	return Token{Chain: chain, Residue: res}, nil
}

// checkAtomName checks an atom name as Boltz stores it: 1 to 4 characters, no spaces.
func checkAtomName(name string) error {
	if name == "" || len(name) > maxAtomName || strings.ContainsFunc(name, func(c rune) bool { return c <= ' ' || c > '~' }) {
		return fmt.Errorf("atom name %q must be 1 to %d printable characters, like CA or C1", name, maxAtomName)
	}
	return nil
}
