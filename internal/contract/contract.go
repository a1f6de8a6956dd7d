// Package contract checks recorded HTTP responses against chaperone's OpenAPI document
// (api/openapi.json), so that tests of the real server prove it answers what the document
// promises and the document never drifts from the server unnoticed.
//
// A Checker is built once from the document with Load. Each Check finds the documented
// response for a request's method, path and status, and reports every way the recorded
// response departs from it: an undocumented status, a Content-Type the response does not
// declare, a missing required header (Location on 202, Retry-After on 429 and 503, ...),
// a header value outside its schema, or a JSON body that fails its schema (JSON Schema
// draft 2020-12, with formats such as date-time asserted). The Checker remembers which
// documented responses passed, so an end-to-end test can assert that it exercised them all.
//
// Two answers have no operation of their own in the document and are checked against
// named components instead: a 404 for a path the document does not list is checked
// against components/responses/NotFound, and a 405 for a method a listed path does not
// declare against components/responses/MethodNotAllowed, whose Allow header must then name
// every method the path declares.
//
// A path parameter marked "x-multi-segment": true matches one or more path segments (the
// artifact path of /v1/jobs/{job_id}/artifacts/{path}); every other parameter matches
// exactly one. Path parameters are matched by shape only, never validated, because the
// server answers a malformed id with the 404 of the operation it addressed.
//
// The package imports nothing of chaperone's and is meant for tests only.
package contract

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// docURL is the name the document is registered under with the schema compiler, so that
// every "#/components/schemas/X" resolves inside the document itself.
const docURL = "file:///chaperone/openapi.json"

// methods are the operation keys of an OpenAPI path item.
var methods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// Checker checks responses against one OpenAPI document. It is safe for concurrent use.
type Checker struct {
	paths []*pathItem
	// Fallbacks for answers no operation documents (see the package doc); nil when the
	// document lacks the component.
	notFound         *response
	methodNotAllowed *response

	mu      sync.Mutex
	covered map[string]bool // every documented response key → passed a Check
}

type pathItem struct {
	template string
	segments []segment
	ops      map[string]*operation // by upper-case method
}

type segment struct {
	literal string // empty for a parameter
	param   bool
	multi   bool // matches one or more segments
}

type operation struct {
	method, template string
	responses        map[string]*response // by status key: "200", "4XX", "default"
}

type response struct {
	key     string // "GET /v1/jobs 200"; empty for fallbacks
	media   []media
	headers []header
}

type media struct {
	typ    string             // "application/json", may be "text/*"
	schema *jsonschema.Schema // nil: the body is not checked
}

type header struct {
	name     string
	required bool
	typ      string // JSON type of the schema, to decode the header value for validation
	schema   *jsonschema.Schema
}

// Load parses an OpenAPI 3.1 document and compiles the schema of every documented
// response body and header, so a broken $ref or schema fails here rather than in the
// middle of a test run.
func Load(doc []byte) (*Checker, error) {
	raw, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return nil, fmt.Errorf("contract: parse document: %w", err)
	}
	root, ok := raw.(map[string]any)
	if !ok {
		return nil, errors.New("contract: document is not a JSON object")
	}
	if v, _ := root["openapi"].(string); !strings.HasPrefix(v, "3.1.") {
		return nil, fmt.Errorf("contract: openapi version %q, want 3.1.x", v)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(docURL, raw); err != nil {
		return nil, fmt.Errorf("contract: %w", err)
	}
	l := &loader{root: root, compiler: c}

	ch := &Checker{covered: map[string]bool{}}
	paths, _ := root["paths"].(map[string]any)
	if len(paths) == 0 {
		return nil, errors.New("contract: document has no paths")
	}
	for _, template := range sortedKeys(paths) {
		item, err := l.pathItem(template, paths[template])
		if err != nil {
			return nil, err
		}
		ch.paths = append(ch.paths, item)
		for _, op := range item.ops {
			for _, r := range op.responses {
				ch.covered[r.key] = false
			}
		}
	}
	if ch.notFound, err = l.fallback("NotFound"); err != nil {
		return nil, err
	}
	if ch.methodNotAllowed, err = l.fallback("MethodNotAllowed"); err != nil {
		return nil, err
	}
	return ch, nil
}

// Check reports how a recorded response departs from the document, or nil when it
// conforms. path is the request path as sent (a query string is ignored). A HEAD request
// is checked as the GET of the same path, without a body. The error names the operation,
// the status and every problem found.
func (c *Checker) Check(method, path string, status int, header http.Header, body []byte) error {
	method = strings.ToUpper(method)
	head := method == http.MethodHead
	if head {
		method = http.MethodGet
	}
	path = requestPath(path)

	item := c.match(path)
	if item == nil {
		if status == http.StatusNotFound && c.notFound != nil {
			return prefix(method+" "+path+" (no documented path) 404",
				c.notFound.check(header, body, head))
		}
		return fmt.Errorf("%s %s: no documented path matches, so only 404 is allowed, got %d",
			method, path, status)
	}
	op := item.ops[method]
	if op == nil {
		if status == http.StatusMethodNotAllowed && c.methodNotAllowed != nil {
			errs := []error{c.methodNotAllowed.check(header, body, head)}
			errs = append(errs, checkAllow(item, header))
			return prefix(method+" "+item.template+" (undeclared method) 405", errors.Join(errs...))
		}
		return fmt.Errorf("%s %s: method not documented for %s (documented: %s), so only 405 is allowed, got %d",
			method, path, item.template, strings.Join(item.methods(), ", "), status)
	}
	r := op.lookup(status)
	if r == nil {
		return fmt.Errorf("%s %s: status %d not documented (documented: %s)",
			method, item.template, status, strings.Join(sortedKeys(op.responses), ", "))
	}
	if err := r.check(header, body, head); err != nil {
		return prefix(fmt.Sprintf("%s %s %d", method, item.template, status), err)
	}
	c.mu.Lock()
	c.covered[r.key] = true
	c.mu.Unlock()
	return nil
}

// Operations lists every documented operation as "METHOD /path", sorted.
func (c *Checker) Operations() []string {
	var ops []string
	for _, item := range c.paths {
		for _, op := range item.ops {
			ops = append(ops, op.method+" "+op.template)
		}
	}
	slices.Sort(ops)
	return ops
}

// Responses lists every documented response as "METHOD /path STATUS" (STATUS as the
// document spells it: "200", "4XX" or "default"), sorted.
func (c *Checker) Responses() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return sortedKeys(c.covered)
}

// Covered maps every documented response ("METHOD /path STATUS") to whether a Check of
// this Checker has passed against it. The map is a copy.
func (c *Checker) Covered() map[string]bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := make(map[string]bool, len(c.covered))
	for k, v := range c.covered {
		m[k] = v
	}
	return m
}

// Uncovered lists the documented responses no passing Check has exercised yet, sorted.
func (c *Checker) Uncovered() []string {
	var out []string
	for k, ok := range c.Covered() {
		if !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// match finds the path item for a request path. Like a router, it prefers the template
// with the most literal segments, so /v1/jobs/{job_id}/results wins over a multi-segment
// parameter that could also swallow "results".
func (c *Checker) match(path string) *pathItem {
	segs := strings.Split(strings.TrimPrefix(path, "/"), "/")
	var best *pathItem
	bestScore := -1
	for _, item := range c.paths {
		if !item.matches(segs) {
			continue
		}
		score := 0
		for _, s := range item.segments {
			if !s.param {
				score += 2
			} else if !s.multi {
				score++
			}
		}
		if score > bestScore {
			best, bestScore = item, score
		}
	}
	return best
}

func (p *pathItem) matches(segs []string) bool {
	for i, s := range p.segments {
		if s.multi {
			// Validated at Load to be the last template segment.
			rest := segs[min(i, len(segs)):]
			return len(rest) > 0 && !slices.Contains(rest, "")
		}
		if i >= len(segs) {
			return false
		}
		if s.param {
			if segs[i] == "" {
				return false
			}
		} else if segs[i] != s.literal {
			return false
		}
	}
	return len(segs) == len(p.segments)
}

func (p *pathItem) methods() []string {
	return sortedKeys(p.ops)
}

// lookup finds the response for a status as OpenAPI does: exact code, then range, then
// default.
func (o *operation) lookup(status int) *response {
	code := strconv.Itoa(status)
	if r := o.responses[code]; r != nil {
		return r
	}
	if r := o.responses[code[:1]+"XX"]; r != nil {
		return r
	}
	return o.responses["default"]
}

// check reports every departure of one recorded response from its documentation.
func (r *response) check(h http.Header, body []byte, head bool) error {
	var errs []error
	var m *media
	if len(r.media) > 0 {
		ct := h.Get("Content-Type")
		declared := make([]string, len(r.media))
		for i := range r.media {
			declared[i] = r.media[i].typ
		}
		mt, _, err := mime.ParseMediaType(ct)
		switch {
		case ct == "":
			errs = append(errs, fmt.Errorf("missing Content-Type header (documented: %s)", strings.Join(declared, ", ")))
		case err != nil:
			errs = append(errs, fmt.Errorf("Content-Type %q does not parse: %v", ct, err))
		default:
			for i := range r.media {
				if mediaMatches(r.media[i].typ, mt) {
					m = &r.media[i]
					break
				}
			}
			if m == nil {
				errs = append(errs, fmt.Errorf("Content-Type %q is not documented (documented: %s)", mt, strings.Join(declared, ", ")))
			}
		}
	}
	for _, hd := range r.headers {
		errs = append(errs, hd.check(h))
	}
	if m != nil && m.schema != nil && !head && isJSON(m.typ) {
		errs = append(errs, validateBody(m.schema, body))
	}
	return errors.Join(errs...)
}

func (hd header) check(h http.Header) error {
	vals := h.Values(hd.name)
	if len(vals) == 0 {
		if hd.required {
			return fmt.Errorf("missing required header %s", hd.name)
		}
		return nil
	}
	if hd.schema == nil {
		return nil
	}
	v := strings.TrimSpace(vals[0])
	var inst any = v
	switch hd.typ {
	case "integer", "number":
		if _, err := strconv.ParseFloat(v, 64); err != nil {
			return fmt.Errorf("header %s: %q is not a number", hd.name, v)
		}
		inst = json.Number(v)
	case "boolean":
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("header %s: %q is not a boolean", hd.name, v)
		}
		inst = b
	}
	if err := hd.schema.Validate(inst); err != nil {
		return fmt.Errorf("header %s: %q does not match its schema: %w", hd.name, v, err)
	}
	return nil
}

func validateBody(s *jsonschema.Schema, body []byte) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("body is not JSON: %v", err)
	}
	if err := s.Validate(inst); err != nil {
		return fmt.Errorf("body does not match its schema: %w", err)
	}
	return nil
}

// checkAllow makes sure a 405's Allow header names every method the path declares, since
// that is the only way a client learns what it may send instead.
func checkAllow(item *pathItem, h http.Header) error {
	allowed := map[string]bool{}
	for _, v := range h.Values("Allow") {
		for m := range strings.SplitSeq(v, ",") {
			allowed[strings.ToUpper(strings.TrimSpace(m))] = true
		}
	}
	if len(allowed) == 0 {
		return nil // the missing header is reported by the response check
	}
	var missing []string
	for _, m := range item.methods() {
		if !allowed[m] {
			missing = append(missing, m)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("Allow header %q does not name %s", h.Get("Allow"), strings.Join(missing, ", "))
	}
	return nil
}

// mediaMatches reports whether a media type the document declares (possibly a range such
// as "text/*") covers the one received. Parameters such as charset were already dropped.
func mediaMatches(declared, got string) bool {
	declared = strings.ToLower(declared)
	if declared == got || declared == "*/*" {
		return true
	}
	if typ, ok := strings.CutSuffix(declared, "/*"); ok {
		return strings.HasPrefix(got, typ+"/")
	}
	return false
}

// isJSON reports whether a media type carries JSON: application/json or any +json type
// such as application/problem+json.
func isJSON(mt string) bool {
	mt = strings.ToLower(mt)
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}

// requestPath strips what is not the path: a scheme and host, a query, a fragment.
func requestPath(p string) string {
	if strings.Contains(p, "://") {
		if u, err := url.Parse(p); err == nil {
			return u.EscapedPath()
		}
	}
	if i := strings.IndexAny(p, "?#"); i >= 0 {
		p = p[:i]
	}
	return p
}

func prefix(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
