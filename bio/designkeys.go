package bio

import (
	"fmt"
	"slices"
	"strings"

	"github.com/goccy/go-yaml/ast"
)

// BoltzGenKeys are the keys BoltzGen allows in its design spec (BoltzGen 0.3.2,
// boltzgen/data/parse/schema.py:289-346, yaml_keys). BoltzGen checks every key of every
// mapping, at any depth, against this one list and refuses a spec with any other
// (schema.py:1339-1354), so a spec is checked the same way at submit.
var BoltzGenKeys = []string{
	"entities", "protein", "dna", "rna", "id", "sequence", "ligand", "ccd", "secondary_structure", "file", "path", "msa",
	"include", "chain", "include_proximity", "res_index", "radius", "binding_types", "binding", "not_binding",
	"structure_groups", "group", "visibility", "design", "loop", "helix", "sheet", "design_insertions", "insertion",
	"num_residues", "fuse", "exclude", "smiles", "cyclic", "bonds", "bond", "atom1", "atom2", "bondtype", "structure_group",
	"constraints", "total_len", "min", "max", "reset_res_index", "not_design", "leaving_atoms", "atom", "use_assembly",
	"symmetric_group", "residue_constraints", "position", "allowed", "disallowed",
}

// misnamedIndex are the names BoltzGen refuses anywhere in a spec's text for res_index
// (schema.py:1334-1337).
var misnamedIndex = []string{"res_idx", "residue_idx", "residue_index"}

// boltzGenKeys checks every key of every mapping under n against BoltzGenKeys.
func (r *yamlReader) boltzGenKeys(n ast.Node, path string) error {
	n, err := r.resolve(n)
	if err != nil {
		return err
	}
	switch n.(type) {
	case *ast.MappingNode, *ast.MappingValueNode:
		fields, err := r.mapping(n, path)
		if err != nil {
			return err
		}
		for _, f := range fields {
			if slices.Contains(misnamedIndex, f.key) {
				return Errorf(f.pos, "%s: unknown key %q; BoltzGen names a residue index res_index", path, f.key)
			}
			if !slices.Contains(BoltzGenKeys, f.key) {
				return Errorf(f.pos, "%s: unknown key %q; BoltzGen refuses any key but its own (%s)", path, f.key, strings.Join(BoltzGenKeys, ", "))
			}
			if err := r.boltzGenKeys(f.value, path+"."+f.key); err != nil {
				return err
			}
		}
	case *ast.SequenceNode:
		items, err := r.list(n, path)
		if err != nil {
			return err
		}
		for i, item := range items {
			if err := r.boltzGenKeys(item, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	}
	return nil
}
