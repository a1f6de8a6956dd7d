package contract

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/pb33f/libopenapi/datamodel"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// readDoc returns api/openapi.json decoded, failing the test if it is not JSON.
func readDoc(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile("../../api/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("api/openapi.json is not JSON: %v", err)
	}
	return v.(map[string]any)
}

// oas31Schema compiles the OpenAPI Initiative's JSON Schema of OpenAPI 3.1 documents, as
// libopenapi ships it. It checks the structure of a document, not the schemas inside it;
// those are compiled by Load.
func oas31Schema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	oas, err := jsonschema.UnmarshalJSON(strings.NewReader(datamodel.OpenAPI31SchemaData))
	if err != nil {
		t.Fatal(err)
	}
	id, _ := oas.(map[string]any)["$id"].(string)
	if !strings.HasPrefix(id, "https://spec.openapis.org/oas/3.1/schema/") {
		t.Fatalf("libopenapi's OpenAPI 3.1 schema has $id %q, not one of the 3.1 schemas", id)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(id, oas); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(id)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestDocumentIsOpenAPI31 validates the document against the OpenAPI Initiative's own
// schema of 3.1 documents, which catches misplaced or misspelled OpenAPI keywords that the
// response checks would never touch.
func TestDocumentIsOpenAPI31(t *testing.T) {
	t.Parallel()
	doc := readDoc(t)
	if err := oas31Schema(t).Validate(doc); err != nil {
		t.Errorf("api/openapi.json is not a valid OpenAPI 3.1 document:\n%v", err)
	}
	if doc["openapi"] != "3.1.0" {
		t.Errorf("openapi = %v, want 3.1.0", doc["openapi"])
	}
	info := doc["info"].(map[string]any)
	if info["title"] != "chaperone" || info["version"] != "1.0.0" {
		t.Errorf("info title, version = %v, %v; want chaperone, 1.0.0", info["title"], info["version"])
	}
}

// TestOpenAPI31SchemaRejects proves that the schema check above can fail: each case breaks
// the real document in one place, and the schema must name that place.
func TestOpenAPI31SchemaRejects(t *testing.T) {
	t.Parallel()
	schema := oas31Schema(t)
	tests := []struct {
		name  string
		spoil func(doc map[string]any)
		want  string
	}{
		{"an OpenAPI 3.0 version", func(doc map[string]any) { doc["openapi"] = "3.0.3" }, "/openapi"},
		{"no info", func(doc map[string]any) { delete(doc, "info") }, "'info'"},
		{"a misspelled top-level keyword", func(doc map[string]any) { doc["path"] = doc["paths"] }, "'/path'"},
		{"a response without a description", func(doc map[string]any) {
			resp := mustPointer(t, doc, "/paths/~1v1~1health/get/responses/200").(map[string]any)
			delete(resp, "description")
		}, "/paths/~1v1~1health/get/responses/200"},
		{"a parameter in an unknown place", func(doc map[string]any) {
			param := mustPointer(t, doc, "/components/parameters/JobID").(map[string]any)
			param["in"] = "body"
		}, "/components/parameters/JobID"},
	}
	for _, tt := range tests {
		doc := readDoc(t)
		tt.spoil(doc)
		err := schema.Validate(doc)
		if err == nil {
			t.Errorf("%s: the schema accepts the document", tt.name)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error does not name %s:\n%v", tt.name, tt.want, err)
		}
	}
}

// mustPointer resolves a JSON pointer into the document, failing the test if it does not.
func mustPointer(t *testing.T, doc map[string]any, ptr string) any {
	t.Helper()
	v, err := lookupPointer(doc, ptr)
	if err != nil {
		t.Fatalf("%s: %v", ptr, err)
	}
	return v
}

// TestDocumentRefsResolve follows every $ref in the document, schema or not.
func TestDocumentRefsResolve(t *testing.T) {
	t.Parallel()
	doc := readDoc(t)
	n := 0
	var walk func(ptr string, v any)
	walk = func(ptr string, v any) {
		switch x := v.(type) {
		case map[string]any:
			if ref, ok := x["$ref"].(string); ok {
				n++
				target, ok := strings.CutPrefix(ref, "#")
				if !ok {
					t.Errorf("%s: $ref %q leaves the document", ptr, ref)
				} else if _, err := lookupPointer(doc, target); err != nil {
					t.Errorf("%s: $ref %q does not resolve: %v", ptr, ref, err)
				}
			}
			for k, v := range x {
				walk(ptr+"/"+escapeToken(k), v)
			}
		case []any:
			for i, v := range x {
				walk(fmt.Sprintf("%s/%d", ptr, i), v)
			}
		}
	}
	walk("", doc)
	if n == 0 {
		t.Error("found no $ref at all")
	}
}

// TestDocumentOperations holds the document to the rules of the interface that are about
// its shape rather than about any one response.
func TestDocumentOperations(t *testing.T) {
	t.Parallel()
	doc := readDoc(t)
	creates := []string{"/v1/predictions", "/v1/designs", "/v1/embeddings"}
	noCredentials := []string{"/v1/health", "/v1/ready", "/v1/models", "/v1/openapi.json", "/metrics", "/errors/{slug}"}
	ids := map[string]string{}

	resolve := func(v any) map[string]any {
		for {
			m, _ := v.(map[string]any)
			ref, ok := m["$ref"].(string)
			if !ok {
				return m
			}
			var err error
			if v, err = lookupPointer(doc, strings.TrimPrefix(ref, "#")); err != nil {
				t.Fatalf("$ref %q: %v", ref, err)
			}
		}
	}
	requiredHeader := func(resp map[string]any, name string) bool {
		h, _ := resp["headers"].(map[string]any)
		return h[name] != nil && resolve(h[name])["required"] == true
	}

	for path, rawItem := range doc["paths"].(map[string]any) {
		item := resolve(rawItem)
		for _, m := range methods {
			rawOp, ok := item[m]
			if !ok {
				continue
			}
			op := rawOp.(map[string]any)
			name := strings.ToUpper(m) + " " + path

			id, _ := op["operationId"].(string)
			if id == "" {
				t.Errorf("%s: no operationId", name)
			} else if other, dup := ids[id]; dup {
				t.Errorf("%s: operationId %q already used by %s", name, id, other)
			}
			ids[id] = name

			responses := op["responses"].(map[string]any)
			statuses := sortedKeys(responses)
			if !slices.ContainsFunc(statuses, func(s string) bool { return s[0] == '2' }) {
				t.Errorf("%s: no 2xx response", name)
			}
			for _, s := range statuses {
				resp := resolve(responses[s])
				content, _ := resp["content"].(map[string]any)
				if len(content) == 0 && s != "304" { // a 304 has no body (RFC 9110 §15.4.5)
					t.Errorf("%s %s: declares no content", name, s)
				}
				if s[0] == '4' || s[0] == '5' {
					if len(content) != 1 || content["application/problem+json"] == nil {
						t.Errorf("%s %s: an error must be application/problem+json only, has %v", name, s, sortedKeys(content))
					}
				}
				switch s {
				case "202":
					if !requiredHeader(resp, "Location") {
						t.Errorf("%s 202: Location is not a required header", name)
					}
				case "429", "503":
					if !requiredHeader(resp, "Retry-After") {
						t.Errorf("%s %s: Retry-After is not a required header", name, s)
					}
				}
			}

			want := []string{}
			switch {
			case slices.Contains(creates, path):
				want = []string{"200", "202", "400", "401", "413", "422", "429", "500", "503"}
			case strings.HasPrefix(path, "/v1/jobs/{job_id}"):
				want = []string{"200", "401", "404", "500"}
			case path == "/v1/jobs":
				want = []string{"200", "400", "401", "500"}
			case strings.HasPrefix(path, "/v1/"):
				want = []string{"200", "500"}
			}
			for _, s := range want {
				if responses[s] == nil {
					t.Errorf("%s: does not declare %s", name, s)
				}
			}
			if !slices.Contains(creates, path) && path != "/v1/ready" && responses["503"] != nil {
				t.Errorf("%s: declares 503, which only creation calls and readiness answer", name)
			}

			sec, hasSec := op["security"].([]any)
			if slices.Contains(noCredentials, path) != (hasSec && len(sec) == 0) {
				t.Errorf("%s: security = %v; want [] exactly on %v", name, op["security"], noCredentials)
			}

			// Every template parameter is declared in the path, and no other.
			declared := map[string]bool{}
			for _, list := range []any{item["parameters"], op["parameters"]} {
				ps, _ := list.([]any)
				for _, p := range ps {
					p := resolve(p)
					if p["in"] == "path" {
						declared[p["name"].(string)] = true
						if p["required"] != true {
							t.Errorf("%s: path parameter %v is not required", name, p["name"])
						}
					}
				}
			}
			inTemplate := map[string]bool{}
			for seg := range strings.SplitSeq(path, "/") {
				if p, ok := strings.CutPrefix(seg, "{"); ok {
					inTemplate[strings.TrimSuffix(p, "}")] = true
				}
			}
			if !maps2Equal(declared, inTemplate) {
				t.Errorf("%s: path parameters declared %v, template has %v", name, sortedKeys(declared), sortedKeys(inTemplate))
			}
		}
	}

	// Every error slug the server may use has a documented response that names it.
	responsesText := fmt.Sprint(doc["components"].(map[string]any)["responses"])
	slugs, _ := lookupPointer(doc, "/components/schemas/ErrorSlug/enum")
	for _, s := range slugs.([]any) {
		if !strings.Contains(responsesText, s.(string)) {
			t.Errorf("no component response uses the slug %v", s)
		}
	}
}

// TestDocumentEnums pins the model and protocol ids to interface.md §2.4, so a typo in
// the document cannot pass the response checks unnoticed.
func TestDocumentEnums(t *testing.T) {
	t.Parallel()
	doc := readDoc(t)
	predict := []string{"boltz2", "esmfold2", "esmfold2-fast", "protenix-v2", "openfold3", "opendde", "opendde-abag"}
	design := []string{"boltzgen", "rfd3"}
	embed := []string{"esmc-300m", "esmc-600m", "esmc-6b", "saprot-650m", "saprot-1.3b"}
	protocols := []string{"protein-anything", "peptide-anything", "nanobody-anything", "antibody-anything",
		"protein-small_molecule", "protein-redesign", "rfd3-binder", "rfd3-scaffold", "rfd3-na-binder"}
	cases := []struct {
		ptr  string
		want []string
	}{
		{"/components/schemas/PredictModel/enum", predict},
		{"/components/schemas/DesignModel/enum", design},
		{"/components/schemas/EmbedModel/enum", embed},
		{"/components/schemas/Protocol/enum", protocols},
		{"/components/schemas/CatalogModel/properties/id/enum", slices.Concat(predict, design, embed)},
		{"/components/schemas/Job/properties/model/enum", slices.Concat(predict, embed)},
		{"/components/schemas/Job/properties/protocol/enum", protocols},
	}
	for _, tc := range cases {
		v, err := lookupPointer(doc, tc.ptr)
		if err != nil {
			t.Errorf("%s: %v", tc.ptr, err)
			continue
		}
		var got []string
		for _, e := range v.([]any) {
			if e != nil { // the nullable enums also list null
				got = append(got, e.(string))
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s = %v, want %v", tc.ptr, got, tc.want)
		}
	}
	defaults := map[string]string{
		"/components/schemas/PredictRequest/properties/model/default": "boltz2",
		"/components/schemas/EmbedRequest/properties/model/default":   "esmc-600m",
	}
	for ptr, want := range defaults {
		if v, _ := lookupPointer(doc, ptr); v != want {
			t.Errorf("%s = %v, want %s", ptr, v, want)
		}
	}
}

func maps2Equal(a, b map[string]bool) bool {
	return slices.Equal(sortedKeys(a), sortedKeys(b))
}
