package client

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestRowsKeepTheAPIsShape: a row marshals back to exactly what the server sent. A failed
// target has no scores, and a score the model gave as null stays null, so that neither a
// program reading the CLI's --json nor a table shows a zero the model never predicted.
func TestRowsKeepTheAPIsShape(t *testing.T) {
	t.Parallel()
	for _, sent := range []string{
		`{"id":"a","status":"ok","n_chains":1,"n_residues":22,"samples":1,"msa":true,"plddt":0.81,"ptm":0.7,
		  "complex_plddt":0.81,"iptm":null,"confidence_score":0.79,"complex_pde":0.8,"runtime_s":3.2}`,
		`{"id":"b","status":"failed","error":"Boltz ran out of memory","n_chains":2,"n_residues":40,"samples":0,
		  "msa":false,"runtime_s":1.5}`,
	} {
		var r Row
		if err := json.Unmarshal([]byte(sent), &r); err != nil {
			t.Fatal(err)
		}
		again, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var want, got map[string]any
		if err := json.Unmarshal([]byte(sent), &want); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(again, &got); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("the round trip changed the row:\n sent %v\n  got %v", want, got)
		}
	}

	// A typed field set by the program wins over the null it was sent as.
	var r Row
	if err := json.Unmarshal([]byte(`{"id":"a","status":"ok","iptm":null}`), &r); err != nil {
		t.Fatal(err)
	}
	if r.IPTM != nil || r.PLDDT != nil {
		t.Fatalf("null and absent scores decode as nil: %+v", r)
	}
	v := 0.5
	r.IPTM = &v
	b, _ := json.Marshal(r)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil || m["iptm"] != 0.5 {
		t.Errorf("marshaled %s, want iptm 0.5", b)
	}
}
