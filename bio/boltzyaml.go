package bio

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

const (
	// visitsPerByte bounds the values one YAML input may expand to through anchors and
	// aliases, in proportion to its length: the reader looks at a value a few times, and
	// without aliases no text has more values than bytes. An alias bomb fails at once.
	visitsPerByte = 10
	// maxFlowDepth bounds the nesting of flow collections ([…] and {…}). The YAML parser
	// takes time quadratic in it, and Boltz's schema nests three deep at most.
	maxFlowDepth = 32
	// maxAtomName is the longest atom name Boltz stores.
	maxAtomName = 4
	// maxAffinityAtoms is Boltz's limit on the heavy atoms of an affinity ligand.
	maxAffinityAtoms = 128
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

// readYAML parses text as one YAML document and returns a reader of it with the document's
// body; several documents are an error whose advice is onePer.
func readYAML(text, onePer string) (*yamlReader, ast.Node, error) {
	if !utf8.ValidString(text) {
		return nil, nil, &Error{Msg: "the input is not valid UTF-8 text"}
	}
	// YAML breaks lines at \r\n, \r and \n alike and reads every break in a scalar as \n
	// (YAML 1.2 §5.4), but the lexer counts a \r\n inside a quoted scalar as two lines: with
	// the breaks made \n first, an error's line is the one an editor shows.
	text = strings.ReplaceAll(strings.ReplaceAll(text, "\r\n", "\n"), "\r", "\n")
	tokens := lexer.Tokenize(text)
	depth := 0
	for _, tk := range tokens {
		switch tk.Type {
		case token.SequenceStartType, token.MappingStartType:
			if depth++; depth > maxFlowDepth {
				return nil, nil, Errorf(tokenPos(tk), "brackets are nested more than %d deep", maxFlowDepth)
			}
		case token.SequenceEndType, token.MappingEndType:
			depth--
		}
	}
	file, err := parser.Parse(tokens, 0)
	if err != nil {
		var se *yaml.SyntaxError
		if errors.As(err, &se) && se.Token != nil {
			return nil, nil, Errorf(tokenPos(se.Token), "YAML syntax: %s", se.Message)
		}
		return nil, nil, &Error{Msg: "YAML syntax: " + err.Error()}
	}
	var docs []*ast.DocumentNode
	for _, d := range file.Docs {
		if d != nil && d.Body != nil {
			docs = append(docs, d)
		}
	}
	switch {
	case len(docs) == 0:
		return nil, nil, &Error{Msg: "the input is empty"}
	case len(docs) > 1:
		return nil, nil, Errorf(nodePos(docs[1].Body), "the input holds %d YAML documents; %s", len(docs), onePer)
	}
	r := &yamlReader{chains: chainTable{}, anchors: map[string][]*ast.AnchorNode{},
		budget: visitsPerByte * (len(text) + 100)}
	ast.Walk(r, docs[0])
	return r, docs[0].Body, nil
}

// yamlReader turns the AST of one Boltz YAML document into a Complex.
type yamlReader struct {
	c       *Complex
	chains  chainTable
	anchors map[string][]*ast.AnchorNode // by name, in document order
	budget  int                          // values left to look at
}

// Visit collects the anchors of the document, for resolving aliases (ast.Visitor).
func (r *yamlReader) Visit(n ast.Node) ast.Visitor {
	if a, ok := n.(*ast.AnchorNode); ok {
		name := a.Name.GetToken().Value
		r.anchors[name] = append(r.anchors[name], a)
	}
	return r
}

func tokenPos(tk *token.Token) Pos {
	if tk == nil || tk.Position == nil {
		return Pos{}
	}
	return Pos{Line: tk.Position.Line, Column: tk.Position.Column}
}

func nodePos(n ast.Node) Pos {
	if n == nil {
		return Pos{}
	}
	return tokenPos(n.GetToken())
}

// resolve looks through anchors, tags and aliases to the value a node stands for. Every
// call counts against the budget, which also ends an alias that refers to itself.
func (r *yamlReader) resolve(n ast.Node) (ast.Node, error) {
	for {
		if r.budget--; r.budget < 0 {
			return nil, Errorf(nodePos(n), "the YAML expands to too many values through anchors and aliases")
		}
		switch v := n.(type) {
		case *ast.AnchorNode:
			n = v.Value
		case *ast.TagNode:
			n = v.Value
		case *ast.AliasNode:
			// An alias refers to the last anchor of its name before it; a name may be
			// anchored again, so search by position rather than take the last.
			name := v.Value.GetToken().Value
			offset := v.GetToken().Position.Offset
			same := r.anchors[name]
			i := sort.Search(len(same), func(i int) bool { return same[i].GetToken().Position.Offset >= offset })
			if i == 0 {
				return nil, Errorf(nodePos(v), "alias *%s refers to no anchor &%s before it", name, name)
			}
			n = same[i-1].Value
		default:
			return n, nil
		}
	}
}

// yamlField is one key and value of a mapping.
type yamlField struct {
	key   string
	pos   Pos // of the key
	value ast.Node
}

// mapping reads a mapping node; path names it in errors.
func (r *yamlReader) mapping(n ast.Node, path string) ([]yamlField, error) {
	n, err := r.resolve(n)
	if err != nil {
		return nil, err
	}
	var pairs []*ast.MappingValueNode
	switch v := n.(type) {
	case *ast.MappingNode:
		pairs = v.Values
	case *ast.MappingValueNode:
		pairs = []*ast.MappingValueNode{v}
	default:
		return nil, Errorf(nodePos(n), "%s must be a mapping of keys to values, not %s", path, describe(n))
	}
	fields := make([]yamlField, 0, len(pairs))
	for _, p := range pairs {
		if _, merge := p.Key.(*ast.MergeKeyNode); merge {
			return nil, Errorf(nodePos(p.Key), "%s: merge keys (<<) are not supported; write the keys out", path)
		}
		k, err := r.resolve(p.Key)
		if err != nil {
			return nil, err
		}
		key, ok := scalarText(k)
		if !ok {
			return nil, Errorf(nodePos(p.Key), "%s: keys must be plain words", path)
		}
		fields = append(fields, yamlField{key: key, pos: nodePos(k), value: p.Value})
	}
	return fields, nil
}

// fields reads a mapping whose keys must all be among allowed.
func (r *yamlReader) fields(n ast.Node, path string, allowed ...string) (map[string]yamlField, error) {
	list, err := r.mapping(n, path)
	if err != nil {
		return nil, err
	}
	out := make(map[string]yamlField, len(list))
	for _, f := range list {
		if !slices.Contains(allowed, f.key) {
			return nil, Errorf(f.pos, "%s: unknown key %q; valid keys are %s", path, f.key, strings.Join(allowed, ", "))
		}
		out[f.key] = f
	}
	return out, nil
}

// list reads a sequence node.
func (r *yamlReader) list(n ast.Node, path string) ([]ast.Node, error) {
	n, err := r.resolve(n)
	if err != nil {
		return nil, err
	}
	s, ok := n.(*ast.SequenceNode)
	if !ok {
		return nil, Errorf(nodePos(n), "%s must be a list, not %s", path, describe(n))
	}
	return s.Values, nil
}

// scalarText is the text of a scalar node, as written for numbers and booleans; false for
// collections and null.
func scalarText(n ast.Node) (string, bool) {
	switch v := n.(type) {
	case *ast.StringNode:
		return v.Value, true
	case *ast.LiteralNode:
		return v.Value.Value, true
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.InfinityNode, *ast.NanNode:
		return n.GetToken().Value, true
	}
	return "", false
}

// text reads a single value as text. Numbers and booleans count as their text, as a chain
// id of 1 means "1"; an empty value is an error.
func (r *yamlReader) text(n ast.Node, path string) (string, Pos, error) {
	n, err := r.resolve(n)
	if err != nil {
		return "", Pos{}, err
	}
	s, ok := scalarText(n)
	if !ok || s == "" {
		return "", nodePos(n), Errorf(nodePos(n), "%s must be a single value, not %s", path, describe(n))
	}
	return s, nodePos(n), nil
}

// texts reads a value that is one item or a list of items, like an id or [A, B].
func (r *yamlReader) texts(n ast.Node, path string) ([]string, []Pos, error) {
	rn, err := r.resolve(n)
	if err != nil {
		return nil, nil, err
	}
	items := []ast.Node{rn}
	s, isList := rn.(*ast.SequenceNode)
	if isList {
		if len(s.Values) == 0 {
			return nil, nil, Errorf(nodePos(rn), "%s is an empty list", path)
		}
		items = s.Values
	}
	var out []string
	var poss []Pos
	for i, item := range items {
		p := path
		if isList {
			p = fmt.Sprintf("%s[%d]", path, i)
		}
		s, pos, err := r.text(item, p)
		if err != nil {
			return nil, nil, err
		}
		out, poss = append(out, s), append(poss, pos)
	}
	return out, poss, nil
}

// integer reads a whole number.
func (r *yamlReader) integer(n ast.Node, path string) (int, Pos, error) {
	n, err := r.resolve(n)
	if err != nil {
		return 0, Pos{}, err
	}
	v, ok := n.(*ast.IntegerNode)
	if !ok {
		return 0, nodePos(n), Errorf(nodePos(n), "%s must be a whole number, not %s", path, describe(n))
	}
	switch i := v.Value.(type) {
	case int64:
		if i >= math.MinInt32 && i <= math.MaxInt32 {
			return int(i), nodePos(n), nil
		}
	case uint64:
		if i <= math.MaxInt32 {
			return int(i), nodePos(n), nil
		}
	}
	return 0, nodePos(n), Errorf(nodePos(n), "%s: %s is out of range", path, v.GetToken().Value)
}

// number reads a finite number, whole or not.
func (r *yamlReader) number(n ast.Node, path string) (float64, Pos, error) {
	n, err := r.resolve(n)
	if err != nil {
		return 0, Pos{}, err
	}
	switch v := n.(type) {
	case *ast.FloatNode:
		return v.Value, nodePos(n), nil
	case *ast.IntegerNode:
		i, _, err := r.integer(v, path)
		return float64(i), nodePos(n), err
	}
	return 0, nodePos(n), Errorf(nodePos(n), "%s must be a number, not %s", path, describe(n))
}

// boolean reads true or false; the YAML 1.1 words that Boltz's PyYAML also reads as
// booleans (yes, no, on, off) are accepted.
func (r *yamlReader) boolean(n ast.Node, path string) (bool, error) {
	n, err := r.resolve(n)
	if err != nil {
		return false, err
	}
	if b, ok := n.(*ast.BoolNode); ok {
		return b.Value, nil
	}
	if s, ok := n.(*ast.StringNode); ok {
		switch strings.ToLower(s.Value) {
		case "yes", "on":
			return true, nil
		case "no", "off":
			return false, nil
		}
	}
	return false, Errorf(nodePos(n), "%s must be true or false, not %s", path, describe(n))
}

// isNull reports whether a value is missing: null, ~ or nothing after the colon.
func (r *yamlReader) isNull(n ast.Node) (bool, error) {
	n, err := r.resolve(n)
	if err != nil {
		return false, err
	}
	_, null := n.(*ast.NullNode)
	return null || n == nil, nil
}

// describe names what a node is, for errors.
func describe(n ast.Node) string {
	switch v := n.(type) {
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	case *ast.NullNode, nil:
		return "empty"
	case *ast.BoolNode:
		return "a boolean"
	case *ast.IntegerNode, *ast.FloatNode, *ast.InfinityNode, *ast.NanNode:
		return "a number"
	case *ast.StringNode:
		if v.Value == "" {
			return "empty"
		}
		return fmt.Sprintf("the text %q", clip(v.Value))
	case *ast.LiteralNode:
		return "a block of text"
	}
	return "that"
}

// clip shortens text quoted in an error.
func clip(s string) string {
	if len(s) > 40 {
		return s[:37] + "..."
	}
	return s
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

// single reads a mapping of exactly one key, one of kinds, like "- protein: {...}"; the key
// is compared in lower case when lower is set, as Boltz does for entity and property types.
func (r *yamlReader) single(n ast.Node, path string, lower bool, kinds ...string) (yamlField, error) {
	list, err := r.mapping(n, path)
	if err != nil {
		return yamlField{}, err
	}
	if len(list) != 1 {
		return yamlField{}, Errorf(nodePos(n), "%s must hold exactly one of %s, not %d keys", path, strings.Join(kinds, ", "), len(list))
	}
	f := list[0]
	if lower {
		f.key = strings.ToLower(f.key)
	}
	if !slices.Contains(kinds, f.key) {
		return yamlField{}, Errorf(f.pos, "%s: unknown type %q; valid types are %s", path, list[0].key, strings.Join(kinds, ", "))
	}
	return f, nil
}

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

// template reads one item of the templates list.
func (r *yamlReader) template(item ast.Node, path string) error {
	f, err := r.fields(item, path, "cif", "pdb", "chain_id", "template_id", "force", "threshold")
	if err != nil {
		return err
	}
	cf, isCIF := f["cif"]
	pf, isPDB := f["pdb"]
	if isCIF == isPDB {
		return Errorf(nodePos(item), "%s needs exactly one of cif (mmCIF text) and pdb (PDB text)", path)
	}
	t := Template{Format: MMCIF, Pos: cf.pos}
	src := cf
	if isPDB {
		t.Format, t.Pos, src = PDB, pf.pos, pf
	}
	text, pos, err := r.text(src.value, path+"."+src.key)
	if err != nil {
		return err
	}
	if !strings.Contains(text, "\n") {
		return Errorf(pos, "%s.%s %q is a path to a file, and the service never reads files on the server; "+
			"paste the structure itself as text in a YAML block (%s: |)", path, src.key, text, src.key)
	}
	if got := StructureFormat(text); got != t.Format {
		want := map[string]string{MMCIF: "mmCIF text (a data_ block with _atom_site records)", PDB: "PDB text (ATOM or HETATM records)"}
		return Errorf(pos, "%s.%s must be %s", path, src.key, want[t.Format])
	}
	t.Text = text
	if cf, ok := f["chain_id"]; ok {
		ids, poss, err := r.texts(cf.value, path+".chain_id")
		if err != nil {
			return err
		}
		for i, id := range ids {
			e, err := r.chainOf(id, poss[i], path+".chain_id")
			if err != nil {
				return err
			}
			if e.Kind != Protein {
				return Errorf(poss[i], "%s.chain_id: chain %s is a %s; templates are for protein chains", path, id, e.Kind)
			}
		}
		t.ChainIDs = ids
	}
	if tf, ok := f["template_id"]; ok {
		ids, _, err := r.texts(tf.value, path+".template_id")
		if err != nil {
			return err
		}
		if t.ChainIDs != nil && len(ids) != len(t.ChainIDs) {
			return Errorf(tf.pos, "%s: template_id names %d chains and chain_id %d; they pair up one to one", path, len(ids), len(t.ChainIDs))
		}
		t.TemplateIDs = ids
	}
	if ff, ok := f["force"]; ok {
		if t.Force, err = r.boolean(ff.value, path+".force"); err != nil {
			return err
		}
	}
	if tf, ok := f["threshold"]; ok {
		v, pos, err := r.number(tf.value, path+".threshold")
		if err != nil {
			return err
		}
		if !(v > 0) || math.IsInf(v, 0) {
			return Errorf(pos, "%s.threshold must be a positive distance in ångströms", path)
		}
		t.Threshold = v
	}
	if t.Force && t.Threshold == 0 {
		return Errorf(t.Pos, "%s: force needs a threshold, the distance in ångströms the prediction may deviate from the template", path)
	}
	r.c.Templates = append(r.c.Templates, t)
	return nil
}

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
