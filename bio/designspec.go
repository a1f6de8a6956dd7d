package bio

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml/ast"
)

// Forms of a BoltzGen design spec.
const (
	// EntitiesSpec is BoltzGen's own design-spec YAML: an entities list of protein, dna,
	// rna, ligand and file entries (BoltzGen's example/README.md), plus constraints.
	EntitiesSpec = "entities"
	// SequencesSpec is a Boltz-style input YAML holding only the target (a sequences list);
	// the protocol decides the binder designed against it.
	SequencesSpec = "sequences"
)

// DesignSpec is a BoltzGen design spec, checked. The spec text itself is what the tool
// runs (for the entities form) or is rewritten from Target (for the sequences form).
type DesignSpec struct {
	Form string // EntitiesSpec or SequencesSpec
	// File is the name of the structure file that the spec's file entities name, "" when
	// there is none: its content is the request's structure, written beside the spec.
	File    string
	FilePos Pos
	// Target is the target of a sequences spec.
	Target *Complex
	// MaxResidues bounds the residues of one design: every entity at its longest, and a
	// file entity's chains as the structure has them.
	MaxResidues int
	// chains are the chain ids the spec's own entities declare.
	chains []string
}

// Chains are the chain ids that the spec's entities declare (file entities excepted), in
// order; a designed binder added to a sequences spec takes an id that is not among them.
func (d *DesignSpec) Chains() []string { return slices.Clone(d.chains) }

// ParseDesignSpec reads a BoltzGen design spec in either form; structure is the request's
// structure (nil when none was sent), which the spec's file entities refer to by name.
// Files are never read: a file entity must name one plain file name (no folder, no ..),
// the same one every time, and chains it names must be in the structure. Errors are *Error
// with the line and column.
func ParseDesignSpec(text string, structure *Structure) (*DesignSpec, error) {
	r, body, err := readYAML(text, "a design spec is one document")
	if err != nil {
		return nil, err
	}
	n, err := r.resolve(body)
	if err != nil {
		return nil, err
	}
	top, err := r.mapping(n, "the design spec")
	if err != nil {
		return nil, Errorf(nodePos(n), "a design spec is a YAML mapping with an entities list (BoltzGen's form) or a sequences list "+
			"(Boltz's form, holding the target); this is %s", describe(n))
	}
	keys := make([]string, len(top))
	for i, f := range top {
		keys[i] = f.key
	}
	switch {
	case slices.Contains(keys, "entities") && slices.Contains(keys, "sequences"):
		return nil, Errorf(top[slices.Index(keys, "sequences")].pos, "a design spec has either an entities list (BoltzGen's form) or a "+
			"sequences list (Boltz's form), not both")
	case slices.Contains(keys, "sequences"):
		return sequencesSpec(text, structure)
	case slices.Contains(keys, "entities"):
		s := &specReader{yamlReader: r, spec: &DesignSpec{Form: EntitiesSpec}, structure: structure}
		if err := s.document(n); err != nil {
			return nil, err
		}
		return s.spec, s.done()
	}
	return nil, Errorf(nodePos(n), "a design spec needs an entities list (BoltzGen's form) or a sequences list (Boltz's form, holding the target)")
}

// sequencesSpec reads the sequences form: a Boltz input of the target's chains.
func sequencesSpec(text string, structure *Structure) (*DesignSpec, error) {
	cx, err := parseBoltzYAML("target", text)
	if err != nil {
		return nil, err
	}
	switch {
	case len(cx.Constraints) > 0:
		return nil, Errorf(cx.Constraints[0].Pos, "the sequences form holds only the target's chains; write constraints in BoltzGen's entities form")
	case len(cx.Templates) > 0:
		return nil, Errorf(cx.Templates[0].Pos, "the sequences form holds only the target's chains; give a structure as a file entity of BoltzGen's entities form")
	case cx.Affinity != nil:
		return nil, Errorf(cx.Affinity.Pos, "the sequences form holds only the target's chains; protein-small_molecule designs with an affinity step by itself")
	case structure != nil:
		return nil, &Error{Msg: "a structure was sent, but the sequences form names no file; use BoltzGen's entities form with a file entity naming it"}
	}
	spec := &DesignSpec{Form: SequencesSpec, Target: cx, MaxResidues: cx.NumResidues()}
	for _, e := range cx.Entities {
		if len(e.Modifications) > 0 {
			return nil, Errorf(e.Pos, "the sequences form takes plain sequences; write modified residues in BoltzGen's entities form")
		}
		spec.chains = append(spec.chains, e.IDs...)
	}
	return spec, nil
}

// specReader reads the entities form.
type specReader struct {
	*yamlReader
	spec      *DesignSpec
	structure *Structure
}

func (s *specReader) document(n ast.Node) error {
	top, err := s.fields(n, "the design spec", "entities", "constraints", "leaving_atoms")
	if err != nil {
		return err
	}
	if err := s.boltzGenKeys(n, "the design spec"); err != nil {
		return err
	}
	items, err := s.list(top["entities"].value, "entities")
	if err != nil {
		return err
	}
	if len(items) == 0 {
		return Errorf(top["entities"].pos, "entities is empty; it needs the target and the binder to design")
	}
	for i, item := range items {
		if err := s.entity(item, fmt.Sprintf("entities[%d]", i)); err != nil {
			return err
		}
	}
	return nil
}

// done checks the spec as a whole against the structure sent with it.
func (s *specReader) done() error {
	switch {
	case s.spec.File == "" && s.structure != nil:
		return &Error{Msg: "a structure was sent, but the spec has no file entity naming it; add one (- file: {path: target.cif, ...})"}
	case s.spec.File != "" && s.structure == nil:
		return Errorf(s.spec.FilePos, "the file entity names %s, but no structure was sent; send its content as the structure field", s.spec.File)
	case s.spec.File != "" && s.structure.Format == MMCIF && !s.structure.PolymerSequences:
		return Errorf(s.spec.FilePos, "the file entity names %s, an mmCIF without the _entity_poly_seq loop, from which BoltzGen reads "+
			"its polymers' sequences (boltzgen/data/parse/mmcif.py:980); send the file with that loop, or as PDB", s.spec.File)
	}
	return nil
}

func (s *specReader) entity(item ast.Node, path string) error {
	kind, err := s.single(item, path, false, "protein", "dna", "rna", "ligand", "file")
	if err != nil {
		return err
	}
	path += "." + kind.key
	if kind.key == "file" {
		return s.file(kind.value, path)
	}
	f, err := s.mapping(kind.value, path)
	if err != nil {
		return err
	}
	ids, err := s.ids(f, kind.pos, path)
	if err != nil {
		return err
	}
	if kind.key == "ligand" {
		s.spec.MaxResidues += len(ids)
		return nil
	}
	i := slices.IndexFunc(f, func(f yamlField) bool { return f.key == "sequence" })
	if i < 0 {
		return Errorf(kind.pos, "%s needs a sequence: residues to keep and lengths to design, like 80..140 or 15..20AAAAVTT18PPP", path)
	}
	seq, pos, err := s.text(f[i].value, path+".sequence")
	if err != nil {
		return err
	}
	_, longest, err := DesignedLength(seq)
	if err != nil {
		return Errorf(pos, "%s.sequence %q: %v", path, clip(seq), err)
	}
	s.spec.MaxResidues += longest * len(ids)
	return nil
}

// ids reads an entity's id: one chain id or a list of them, each new to the spec.
func (s *specReader) ids(f []yamlField, at Pos, path string) ([]string, error) {
	i := slices.IndexFunc(f, func(f yamlField) bool { return f.key == "id" })
	if i < 0 {
		return nil, Errorf(at, "%s needs an id", path)
	}
	ids, poss, err := s.texts(f[i].value, path+".id")
	if err != nil {
		return nil, err
	}
	for j, id := range ids {
		if err := checkChainID(id); err != nil {
			return nil, Errorf(poss[j], "%s.id %q: %v", path, id, err)
		}
		if slices.Contains(s.spec.chains, id) {
			return nil, Errorf(poss[j], "%s.id: chain %s is declared twice", path, id)
		}
		s.spec.chains = append(s.spec.chains, id)
	}
	return ids, nil
}

// DesignedLength reads BoltzGen's sequence notation: residue letters kept as they are,
// numbers of residues to design (17) and ranges of them (15..20), in any order, in parts
// that commas may separate (3..5,AAA, 10). It returns
// the shortest and longest chain the notation describes.
func DesignedLength(seq string) (shortest, longest int, err error) {
	for i := 0; i < len(seq); {
		c := seq[i]
		switch {
		case 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z':
			shortest++
			longest++
			i++
		case '0' <= c && c <= '9':
			j := i
			for j < len(seq) && '0' <= seq[j] && seq[j] <= '9' {
				j++
			}
			lo, err := strconv.Atoi(seq[i:j])
			if err != nil || lo > maxContigNumber {
				return 0, 0, fmt.Errorf("the number %s is too large", seq[i:j])
			}
			hi := lo
			if strings.HasPrefix(seq[j:], "..") {
				k := j + 2
				for k < len(seq) && '0' <= seq[k] && seq[k] <= '9' {
					k++
				}
				if hi, err = strconv.Atoi(seq[j+2 : k]); err != nil || hi > maxContigNumber {
					return 0, 0, fmt.Errorf("a range of lengths is <min>..<max>, like 80..140")
				}
				if lo > hi {
					return 0, 0, fmt.Errorf("the range %d..%d runs backwards", lo, hi)
				}
				j = k
			}
			shortest, longest = shortest+lo, longest+hi
			i = j
		case c == ',':
			// BoltzGen splits the notation at commas, each with any spaces after it
			// (data/parse/schema.py:936, re.split(r",\s*")), and reads the parts in turn.
			i++
			for i < len(seq) && (seq[i] == ' ' || seq[i] == '\t' || seq[i] == '\n' || seq[i] == '\r' || seq[i] == '\f' || seq[i] == '\v') {
				i++
			}
		default:
			return 0, 0, fmt.Errorf("%q at position %d is neither a residue letter nor a length (17 or 15..20)", c, i+1)
		}
	}
	if longest == 0 {
		return 0, 0, fmt.Errorf("describes no residue")
	}
	return shortest, longest, nil
}

// file reads a file entity: its path must name the structure sent, and every chain it
// names must be there.
func (s *specReader) file(n ast.Node, path string) error {
	f, err := s.mapping(n, path)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(f, func(f yamlField) bool { return f.key == "path" })
	if i < 0 {
		return Errorf(nodePos(n), "%s needs a path: the file name of the structure sent as the structure field", path)
	}
	names, poss, err := s.texts(f[i].value, path+".path")
	if err != nil {
		return err
	}
	if len(names) > 1 {
		return Errorf(poss[1], "%s.path names %d files; a spec may name one structure file, whose content is the structure field", path, len(names))
	}
	name, pos := names[0], poss[0]
	switch {
	case strings.HasPrefix(name, "/") || strings.HasPrefix(name, "~"):
		return Errorf(pos, "%s.path %q is an absolute path; name the structure by a file name only, like target.cif", path, name)
	case slices.Contains(strings.Split(strings.ReplaceAll(name, `\`, "/"), "/"), ".."):
		return Errorf(pos, "%s.path %q leaves the spec's folder (..); name the structure by a file name only, like target.cif", path, name)
	case strings.ContainsAny(name, `/\`):
		return Errorf(pos, "%s.path %q is in a folder; name the structure by a file name only, like target.cif", path, name)
	case !slices.Contains([]string{".cif", ".mmcif", ".pdb"}, strings.ToLower(filepath.Ext(name))):
		return Errorf(pos, "%s.path %q is not a structure file (.cif, .mmcif or .pdb); a spec may name one structure, sent as the structure field", path, name)
	case s.spec.File != "" && name != s.spec.File:
		return Errorf(pos, "%s.path names a second file, %s, after %s; a spec may name one structure file, whose content is the structure field", path, name, s.spec.File)
	case s.structure == nil:
		return Errorf(pos, "%s.path names %s, but no structure was sent; send its content as the structure field", path, name)
	}
	if s.spec.File == "" {
		s.spec.File, s.spec.FilePos = name, pos
	}
	return s.fileChains(f, path)
}

// Keys of a file entity whose items are {chain: {id: ...}} (or {group: ...}, {insertion:
// ...}) and name chains of the structure; an id of "all" names every chain.
var fileChainKeys = []string{"include", "exclude", "include_proximity", "binding_types", "structure_groups", "design",
	"secondary_structure", "design_insertions", "reset_res_index"}

// fileChains checks the chains a file entity names and adds its residues to MaxResidues:
// the included chains' residues (all of them unless include lists some) and the longest
// insertions.
func (s *specReader) fileChains(f []yamlField, path string) error {
	var included []string
	all := true
	for _, field := range f {
		if !slices.Contains(fileChainKeys, field.key) {
			continue
		}
		if t, ok := scalarText(field.value); ok && t == "all" {
			continue
		}
		items, err := s.list(field.value, path+"."+field.key)
		if err != nil {
			return err
		}
		for j, item := range items {
			at := fmt.Sprintf("%s.%s[%d]", path, field.key, j)
			wrapper, err := s.single(item, at, false, "chain", "group", "insertion")
			if err != nil {
				return err
			}
			inner, err := s.mapping(wrapper.value, at+"."+wrapper.key)
			if err != nil {
				return err
			}
			k := slices.IndexFunc(inner, func(f yamlField) bool { return f.key == "id" })
			if k < 0 {
				return Errorf(wrapper.pos, "%s.%s needs the id of a chain of the structure", at, wrapper.key)
			}
			id, pos, err := s.text(inner[k].value, at+"."+wrapper.key+".id")
			if err != nil {
				return err
			}
			if id == "all" {
				continue
			}
			c, ok := s.structure.ChainByAnyID(id)
			if !ok {
				return Errorf(pos, "%s.%s.id: the structure has no chain %s; its chains are %s", at, wrapper.key, id, s.structure.Describe())
			}
			// BoltzGen names an mmCIF's chains by label_asym_id (its subchains:
			// data/parse/mmcif.py:1049-1110) and a PDB's by their chain letter.
			if s.structure.Format == MMCIF && !slices.Contains(c.LabelIDs, id) {
				return Errorf(pos, "%s.%s.id: BoltzGen names an mmCIF's chains by label_asym_id, and chain %s of this file is %s there",
					at, wrapper.key, id, strings.Join(c.LabelIDs, " or "))
			}
			if field.key == "include" {
				all = false
				if !slices.Contains(included, c.ID) {
					included = append(included, c.ID)
				}
			}
			if field.key == "design_insertions" {
				if m := slices.IndexFunc(inner, func(f yamlField) bool { return f.key == "num_residues" }); m >= 0 {
					n, npos, err := s.text(inner[m].value, at+".insertion.num_residues")
					if err != nil {
						return err
					}
					_, longest, err := DesignedLength(n)
					if err != nil {
						return Errorf(npos, "%s.insertion.num_residues %q: %v", at, n, err)
					}
					s.spec.MaxResidues += longest
				}
			}
		}
	}
	for _, c := range s.structure.Chains {
		if all || slices.Contains(included, c.ID) {
			s.spec.MaxResidues += len(c.Residues) + len(c.Ligands)
		}
	}
	return nil
}
