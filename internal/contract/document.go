package contract

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// loader walks the OpenAPI document (not itself a JSON Schema) and compiles the schemas
// inside it by their location in the document.
type loader struct {
	root     map[string]any
	compiler *jsonschema.Compiler
}

// pathItem reads one entry of "paths".
func (l *loader) pathItem(template string, raw any) (*pathItem, error) {
	ptr := "/paths/" + escapeToken(template)
	ptr, obj, err := l.resolve(ptr, raw)
	if err != nil {
		return nil, err
	}
	item := &pathItem{template: template, ops: map[string]*operation{}}

	multi, err := l.multiSegmentParams(ptr, obj)
	if err != nil {
		return nil, err
	}
	parts := strings.Split(strings.TrimPrefix(template, "/"), "/")
	for i, p := range parts {
		name, isParam := strings.CutPrefix(p, "{")
		name, closed := strings.CutSuffix(name, "}")
		if isParam != closed || isParam && strings.ContainsAny(name, "{}") {
			return nil, fmt.Errorf("contract: path %s: segment %q mixes a parameter with literal text", template, p)
		}
		s := segment{literal: p, param: isParam, multi: isParam && multi[name]}
		if isParam {
			s.literal = ""
		}
		if s.multi && i != len(parts)-1 {
			return nil, fmt.Errorf("contract: path %s: multi-segment parameter {%s} must be the last segment", template, name)
		}
		item.segments = append(item.segments, s)
	}

	for _, m := range methods {
		rawOp, ok := obj[m]
		if !ok {
			continue
		}
		opPtr := ptr + "/" + m
		opObj, ok := rawOp.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("contract: %s: not an object", opPtr)
		}
		op := &operation{method: strings.ToUpper(m), template: template, responses: map[string]*response{}}
		rawResponses, _ := opObj["responses"].(map[string]any)
		if len(rawResponses) == 0 {
			return nil, fmt.Errorf("contract: %s %s: no responses", op.method, template)
		}
		for status, rawResp := range rawResponses {
			r, err := l.response(opPtr+"/responses/"+escapeToken(status), rawResp)
			if err != nil {
				return nil, fmt.Errorf("contract: %s %s %s: %w", op.method, template, status, err)
			}
			r.key = op.method + " " + template + " " + status
			op.responses[status] = r
		}
		item.ops[op.method] = op
	}
	if len(item.ops) == 0 {
		return nil, fmt.Errorf("contract: path %s declares no operation", template)
	}
	return item, nil
}

// multiSegmentParams collects the path parameters marked "x-multi-segment", declared on
// the path item or on any of its operations.
func (l *loader) multiSegmentParams(ptr string, item map[string]any) (map[string]bool, error) {
	multi := map[string]bool{}
	lists := []string{ptr + "/parameters"}
	for _, m := range methods {
		if _, ok := item[m]; ok {
			lists = append(lists, ptr+"/"+m+"/parameters")
		}
	}
	for _, listPtr := range lists {
		raw, err := l.lookup(listPtr)
		if err != nil {
			continue // no parameters there
		}
		list, ok := raw.([]any)
		if !ok {
			return nil, fmt.Errorf("contract: %s: not an array", listPtr)
		}
		for i, p := range list {
			_, param, err := l.resolve(fmt.Sprintf("%s/%d", listPtr, i), p)
			if err != nil {
				return nil, err
			}
			if param["in"] == "path" && param["x-multi-segment"] == true {
				name, _ := param["name"].(string)
				multi[name] = true
			}
		}
	}
	return multi, nil
}

// response reads one response object: its media types with compiled body schemas and its
// headers with compiled value schemas.
func (l *loader) response(ptr string, raw any) (*response, error) {
	ptr, obj, err := l.resolve(ptr, raw)
	if err != nil {
		return nil, err
	}
	r := &response{}
	content, _ := obj["content"].(map[string]any)
	for _, typ := range sortedKeys(content) {
		mObj, _ := content[typ].(map[string]any)
		m := media{typ: typ}
		if _, ok := mObj["schema"]; ok {
			if m.schema, err = l.compile(ptr + "/content/" + escapeToken(typ) + "/schema"); err != nil {
				return nil, err
			}
		}
		r.media = append(r.media, m)
	}
	headers, _ := obj["headers"].(map[string]any)
	for _, name := range sortedKeys(headers) {
		hPtr, hObj, err := l.resolve(ptr+"/headers/"+escapeToken(name), headers[name])
		if err != nil {
			return nil, err
		}
		h := header{name: name}
		h.required, _ = hObj["required"].(bool)
		if sch, ok := hObj["schema"]; ok {
			// Resolve a $ref here only to learn the type the header value decodes to.
			_, schObj, err := l.resolve(hPtr+"/schema", sch)
			if err != nil {
				return nil, err
			}
			h.typ, _ = schObj["type"].(string)
			if h.schema, err = l.compile(hPtr + "/schema"); err != nil {
				return nil, err
			}
		}
		r.headers = append(r.headers, h)
	}
	return r, nil
}

// fallback reads components/responses/<name>, or nil when the document lacks it.
func (l *loader) fallback(name string) (*response, error) {
	ptr := "/components/responses/" + escapeToken(name)
	raw, err := l.lookup(ptr)
	if err != nil {
		return nil, nil
	}
	r, err := l.response(ptr, raw)
	if err != nil {
		return nil, fmt.Errorf("contract: components/responses/%s: %w", name, err)
	}
	return r, nil
}

// compile compiles the schema at a JSON pointer into the document; its $refs resolve
// against the whole document.
func (l *loader) compile(ptr string) (*jsonschema.Schema, error) {
	s, err := l.compiler.Compile(docURL + "#" + encodePointer(ptr))
	if err != nil {
		return nil, fmt.Errorf("compile schema at %s: %w", ptr, err)
	}
	return s, nil
}

// resolve follows $ref chains of OpenAPI objects (responses, headers, parameters, path
// items) and returns where the object really lives, so the schemas inside it are compiled
// at their true location.
func (l *loader) resolve(ptr string, raw any) (string, map[string]any, error) {
	for range 32 {
		obj, ok := raw.(map[string]any)
		if !ok {
			return "", nil, fmt.Errorf("%s: not an object", ptr)
		}
		ref, ok := obj["$ref"].(string)
		if !ok {
			return ptr, obj, nil
		}
		target, ok := strings.CutPrefix(ref, "#")
		if !ok {
			return "", nil, fmt.Errorf("%s: $ref %q points outside the document", ptr, ref)
		}
		target, err := url.PathUnescape(target)
		if err != nil {
			return "", nil, fmt.Errorf("%s: $ref %q: %v", ptr, ref, err)
		}
		if raw, err = l.lookup(target); err != nil {
			return "", nil, fmt.Errorf("%s: $ref %q: %w", ptr, ref, err)
		}
		ptr = target
	}
	return "", nil, fmt.Errorf("%s: $ref chain too long", ptr)
}

// lookup evaluates a JSON pointer (RFC 6901) against the document.
func (l *loader) lookup(ptr string) (any, error) {
	return lookupPointer(l.root, ptr)
}

func lookupPointer(doc any, ptr string) (any, error) {
	if ptr == "" {
		return doc, nil
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil, fmt.Errorf("JSON pointer %q does not start with /", ptr)
	}
	v := doc
	for tok := range strings.SplitSeq(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch x := v.(type) {
		case map[string]any:
			next, ok := x[tok]
			if !ok {
				return nil, fmt.Errorf("JSON pointer %q: no member %q", ptr, tok)
			}
			v = next
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return nil, fmt.Errorf("JSON pointer %q: no element %q", ptr, tok)
			}
			v = x[i]
		default:
			return nil, errors.New("JSON pointer " + ptr + " runs into a scalar")
		}
	}
	return v, nil
}

// escapeToken escapes one JSON pointer token.
func escapeToken(tok string) string {
	return strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1")
}

// encodePointer makes a JSON pointer safe as a URI fragment ("{" and "}" of path
// templates are not), escaping each token the way the schema compiler unescapes it.
func encodePointer(ptr string) string {
	toks := strings.Split(ptr, "/")
	for i, t := range toks {
		toks[i] = url.PathEscape(t)
	}
	return strings.Join(toks, "/")
}
