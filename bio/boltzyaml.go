package bio

import (
	"fmt"

	"github.com/goccy/go-yaml/ast"
)

// parseBoltzYAML reads a Boltz input YAML, the schema of Boltz's docs/prediction.md as its
// parser (src/boltz/data/parse/schema.py) reads it, into a complex. It is stricter than
// Boltz where Boltz would silently do something else than asked: unknown keys, duplicate
// chain ids, residue letters that Boltz would read as unknown, and constraints that name
// nothing are errors here. Files are never read: an msa or template given as a path is an
// error, and one given as text (a YAML block, msa: |) is the inline form.
func parseBoltzYAML(name, text string) (*Complex, error) {
	r, body, err := readYAML(text, "send each as its own target")
	if err != nil {
		return nil, err
	}
	r.c = &Complex{Name: name}
	if err := r.document(body); err != nil {
		return nil, err
	}
	return r.c, nil
}

// document reads the top level: sequences first, as everything else refers to them.
func (r *yamlReader) document(body ast.Node) error {
	n, err := r.resolve(body)
	if err != nil {
		return err
	}
	switch n.(type) {
	case *ast.MappingNode, *ast.MappingValueNode:
	default:
		return Errorf(nodePos(n), "the input is neither FASTA (records start with a '>' header) nor a Boltz YAML "+
			"mapping with a sequences list (it is %s); for one bare protein sequence use the sequence field", describe(n))
	}
	top, err := r.fields(n, "the top level", "version", "sequences", "constraints", "templates", "properties")
	if err != nil {
		return err
	}
	if f, ok := top["version"]; ok {
		v, pos, err := r.integer(f.value, "version")
		if err != nil || v != 1 {
			return Errorf(pos, "version must be 1, the only version of Boltz's input schema")
		}
	}
	seqs, ok := top["sequences"]
	if !ok {
		return &Error{Msg: "the YAML has no sequences list; it needs at least one protein, dna, rna or ligand entry"}
	}
	items, err := r.list(seqs.value, "sequences")
	if err != nil {
		return err
	}
	if len(items) == 0 {
		return Errorf(seqs.pos, "sequences is empty; it needs at least one protein, dna, rna or ligand entry")
	}
	for i, item := range items {
		if err := r.entity(item, fmt.Sprintf("sequences[%d]", i)); err != nil {
			return err
		}
	}
	for _, part := range []struct {
		key  string
		read func(ast.Node, string) error
	}{{"constraints", r.constraint}, {"templates", r.template}, {"properties", r.property}} {
		f, ok := top[part.key]
		if !ok {
			continue
		}
		null, err := r.isNull(f.value)
		if err != nil {
			return err
		}
		if null {
			continue
		}
		items, err := r.list(f.value, part.key)
		if err != nil {
			return err
		}
		for i, item := range items {
			if err := part.read(item, fmt.Sprintf("%s[%d]", part.key, i)); err != nil {
				return err
			}
		}
	}
	return nil
}
