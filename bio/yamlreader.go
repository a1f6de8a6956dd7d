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
)

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

// yamlReader reads the AST of one YAML document with positioned errors: a Boltz input
// into a Complex, and, inside specReader, a BoltzGen design spec.
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
