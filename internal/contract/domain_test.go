package contract_test

import (
	"bytes"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/chaperone-bio/chaperone/catalog"
	"github.com/chaperone-bio/chaperone/job"
)

// TestDocumentMatchesDomain keeps the document in step with the Go types the server
// marshals, so a new stage, artifact type, limit or catalog field shows up here before a
// client meets it.
func TestDocumentMatchesDomain(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../api/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	schemas := v.(map[string]any)["components"].(map[string]any)["schemas"].(map[string]any)
	at := func(path ...string) any {
		var x any = schemas
		for _, p := range path {
			x = x.(map[string]any)[p]
		}
		return x
	}
	strs := func(x any) []string {
		var out []string
		for _, e := range x.([]any) {
			if s, ok := e.(string); ok { // nullable enums also list null
				out = append(out, s)
			}
		}
		slices.Sort(out)
		return out
	}
	keys := func(x any) []string {
		var out []string
		for k := range x.(map[string]any) {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}

	enums := []struct {
		name      string
		doc, want []string
	}{
		{"stages", strs(at("Stage", "enum")), job.Stages},
		{"statuses", strs(at("Status", "enum")), []string{string(job.Queued), string(job.Running),
			string(job.Succeeded), string(job.Failed), string(job.Canceled)}},
		{"kinds", strs(at("Kind", "enum")), []string{string(job.PredictKind), string(job.DesignKind), string(job.EmbedKind)}},
		{"artifact types", strs(at("Artifact", "properties", "type", "enum")), []string{job.ArtifactStructure,
			job.ArtifactConfidence, job.ArtifactPAE, job.ArtifactAffinity, job.ArtifactEmbedding, job.ArtifactTable,
			job.ArtifactMetrics, job.ArtifactLog}},
		{"param types", strs(at("CatalogParam", "properties", "type", "enum")), []string{string(catalog.Boolean),
			string(catalog.Integer), string(catalog.Number), string(catalog.String)}},
		{"required limits", strs(at("Limits", "required")), jsonFields(reflect.TypeFor[catalog.LimitsDoc]())},
		{"documented limits", keys(at("Limits", "properties")), jsonFields(reflect.TypeFor[catalog.LimitsDoc]())},
	}
	for _, tc := range enums {
		want := slices.Sorted(slices.Values(tc.want))
		if !slices.Equal(tc.doc, want) {
			t.Errorf("%s: document has %v, Go has %v", tc.name, tc.doc, want)
		}
	}

	// Objects marshalled from Go structs: the document's properties are exactly the
	// struct's JSON fields.
	structs := []struct {
		schema string
		typ    reflect.Type
	}{
		{"Catalog", reflect.TypeFor[catalog.CatalogDoc]()},
		{"CatalogModel", reflect.TypeFor[catalog.ModelDoc]()},
		{"CatalogProtocol", reflect.TypeFor[catalog.ProtocolDoc]()},
		{"CatalogParam", reflect.TypeFor[catalog.ParamDoc]()},
		{"Capabilities", reflect.TypeFor[catalog.Capabilities]()},
		{"Design", reflect.TypeFor[job.Design]()},
		{"EmbeddedSequence", reflect.TypeFor[job.EmbeddedSequence]()},
	}
	for _, s := range structs {
		doc, goFields := keys(at(s.schema, "properties")), jsonFields(s.typ)
		if !slices.Equal(doc, goFields) {
			t.Errorf("%s: document has %v, Go type %v has %v", s.schema, doc, s.typ, goFields)
		}
	}
}

// jsonFields lists the JSON names of a struct's fields, flattening embedded structs as
// encoding/json does, sorted.
func jsonFields(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-" || !f.IsExported():
		case f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct:
			out = append(out, jsonFields(f.Type)...)
		case name == "":
			out = append(out, f.Name)
		default:
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}
