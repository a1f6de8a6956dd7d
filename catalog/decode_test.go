package catalog

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/chaperone-bio/chaperone/job"
)

// wantInvalid fails unless err is a *job.InvalidError on field whose reason contains reason.
func wantInvalid(t *testing.T, err error, field, reason string) {
	t.Helper()
	var inv *job.InvalidError
	if !errors.As(err, &inv) {
		t.Fatalf("error = %v (%T), want *job.InvalidError on %q", err, err, field)
	}
	if inv.Field != field || !strings.Contains(inv.Reason, reason) {
		t.Errorf("error = field %q, reason %q; want field %q, reason containing %q", inv.Field, inv.Reason, field, reason)
	}
}

func TestDecodeErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		body   string
		into   any
		field  string
		reason string
	}{
		{"empty body", ``, &PredictRequest{}, "", "the request body is empty"},
		{"syntax error names the byte", `{"model": boltz2}`, &PredictRequest{}, "", "malformed JSON at byte 11: invalid character 'b'"},
		{"truncated body", `{"model": "boltz2"`, &PredictRequest{}, "", "malformed JSON at byte 18: the body ends"},
		{"trailing data", `{"model": "boltz2"} {}`, &PredictRequest{}, "", "malformed JSON at byte 20: data after the end"},
		{"trailing garbage", "{}\n]", &PredictRequest{}, "", "malformed JSON at byte 3"},
		{"not an object", `["boltz2"]`, &PredictRequest{}, "", "the request body must be a JSON object, not an array"},
		{"unknown field lists the valid ones", `{"modle": "boltz2"}`, &PredictRequest{}, "modle",
			"unknown field; valid fields are model, name, input, sequence, targets, params"},
		{"field names are case-sensitive", `{"Model": "boltz2"}`, &PredictRequest{}, "Model", "unknown field"},
		{"wrong type", `{"model": 2}`, &PredictRequest{}, "model", "must be a string, not a number"},
		{"sequence must be a string", `{"sequence": ["MK"]}`, &PredictRequest{}, "sequence", "must be a string, not an array"},
		{"params must be an object", `{"params": [1]}`, &PredictRequest{}, "params", "must be an object, not an array"},
		{"targets must be an array", `{"targets": {"content": "x"}}`, &PredictRequest{}, "targets", "must be an array, not an object"},
		{"target content path has its index", `{"targets": [{"content": ">a\nMK"}, {"content": 5}]}`, &PredictRequest{},
			"targets[1].content", "must be a string, not a number"},
		{"unknown target field", `{"targets": [{"content": "x", "title": "a"}]}`, &PredictRequest{},
			"targets[0].title", "valid fields are name, content"},
		{"design field type", `{"protocol": "rfd3-binder", "contig": true}`, &DesignRequest{}, "contig", "must be a string, not a boolean"},
		{"embed sequence item of the wrong type", `{"sequences": ["MK", 7]}`, &EmbedRequest{},
			"sequences[1]", `must be a sequence string or an object {"id": ..., "sequence": ...}, not a number`},
		{"embed sequence object with an unknown key", `{"sequences": [{"sequence": "MK", "name": "a"}]}`, &EmbedRequest{},
			"sequences[0].name", "unknown field; valid fields are id, sequence"},
		{"duplicate key at the top", `{"sequence": "MK", "sequence": "XX"}`, &PredictRequest{}, "", `the key "sequence" appears twice`},
		{"duplicate key in a target", `{"targets": [{"content": "x"}, {"content": "a", "name": "n", "content": "b"}]}`, &PredictRequest{},
			"targets[1]", `the key "content" appears twice`},
		{"duplicate key in params", `{"params": {"fast": true, "fast": false}}`, &PredictRequest{}, "params", `the key "fast" appears twice`},
		{"embed sequence id of the wrong type", `{"sequences": [{"id": 1, "sequence": "MK"}]}`, &EmbedRequest{},
			"sequences[0].id", "must be a string, not a number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			wantInvalid(t, Decode([]byte(tt.body), tt.into), tt.field, tt.reason)
		})
	}
}

func TestDecodeAccepts(t *testing.T) {
	t.Parallel()
	t.Run("embed sequences as strings and objects", func(t *testing.T) {
		t.Parallel()
		var r EmbedRequest
		body := `{"model": "esmc-300m", "sequences": ["MKT", {"id": "b", "sequence": "GG"}, {"sequence": "AA"}]}`
		if err := Decode([]byte(body), &r); err != nil {
			t.Fatal(err)
		}
		want := []EmbedSequence{{Sequence: "MKT"}, {ID: "b", Sequence: "GG"}, {Sequence: "AA"}}
		if !reflect.DeepEqual(r.Sequences, want) {
			t.Errorf("Sequences = %+v, want %+v", r.Sequences, want)
		}
	})
	t.Run("null counts as omitted", func(t *testing.T) {
		t.Parallel()
		var r PredictRequest
		if err := Decode([]byte(`{"model": null, "sequence": null, "input": "x", "params": null}`), &r); err != nil {
			t.Fatal(err)
		}
		if r.Model != "" || r.Seq != nil || r.Input == nil || r.Params != nil {
			t.Errorf("decoded %+v", r)
		}
	})
	t.Run("params values are kept raw for the model to check", func(t *testing.T) {
		t.Parallel()
		var r PredictRequest
		if err := Decode([]byte(` {"params": {"fast": "yes", "anything": [1]}} `+"\n"), &r); err != nil {
			t.Fatal(err)
		}
		if string(r.Params["fast"]) != `"yes"` || string(r.Params["anything"]) != `[1]` {
			t.Errorf("params = %s", r.Params)
		}
	})
}

// FuzzDecode checks that no body makes Decode or the job constructors panic, and that every
// refusal is a *job.InvalidError, which the API answers with 400.
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{
		`{"model": "boltz2", "sequence": "MK", "params": {"fast": true, "sampling_steps": 1e9}}`,
		`{"targets": [{"name": "a", "content": ">a\nMK"}, {"content": "x"}]}`,
		`{"sequences": ["MK", {"id": "b", "sequence": "GG"}, null]}`,
		`{"input": ">a\nMK\n>b\nGG\n", "params": {"pool": "max"}}`,
		`{"protocol": "rfd3-binder", "structure": "ATOM  1", "contig": "A1-10,/0,5-20", "params": {"seed": -1}}`,
		`{"protocol": "protein-anything", "spec": "x", "params": {"budget": 50, "num_designs": 2}}`,
		`{"model": 1}`, `[]`, `{"a":`, `{} {}`, `null`, `"x"`,
	} {
		f.Add([]byte(seed))
	}
	c := Default()
	f.Fuzz(func(t *testing.T, body []byte) {
		// ok reports whether err is nil, and fails the test unless it is an InvalidError.
		ok := func(err error) bool {
			var inv *job.InvalidError
			if err != nil && !errors.As(err, &inv) {
				t.Fatalf("body %q: %v (%T), want a *job.InvalidError", body, err, err)
			}
			return err == nil
		}
		var p PredictRequest
		if ok(Decode(body, &p)) {
			_, err := c.NewPredict(&p)
			ok(err)
		}
		var d DesignRequest
		if ok(Decode(body, &d)) {
			_, err := c.NewDesign(&d)
			ok(err)
		}
		var e EmbedRequest
		if ok(Decode(body, &e)) {
			_, err := c.NewEmbed(&e)
			ok(err)
		}
	})
}
