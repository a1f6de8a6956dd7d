package catalog

import (
	"bytes"
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// documentJSON is the catalog document as a client reads it.
func documentJSON(t *testing.T, unavailable map[string]string, walls map[string]int) map[string]any {
	t.Helper()
	c := Default()
	c.MSAServer = "https://msa.example.org"
	b, err := json.Marshal(c.Document(unavailable, walls))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

func keys(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }

func TestDocumentShape(t *testing.T) {
	t.Parallel()
	unavailable := map[string]string{}
	for _, m := range Default().Models {
		if m.ID != "boltz2" && m.ID != "esmc-300m" {
			unavailable[m.ID] = "no live worker offers it"
		}
	}
	unavailable["openfold3"] = "weights missing: the OpenFold3 checkpoint of3-ob-2025-06-30-174k.pt"
	doc := documentJSON(t, unavailable, map[string]int{"boltz2": 311})
	if got, want := keys(doc), []string{"api_version", "limits", "models", "msa_search", "msa_server", "object", "protocols"}; !slices.Equal(got, want) {
		t.Fatalf("top-level keys %v, want %v", got, want)
	}
	if doc["object"] != "catalog" || doc["api_version"] != "1.0.0" || doc["msa_server"] != "https://msa.example.org" {
		t.Errorf("object %v, api_version %v, msa_server %v", doc["object"], doc["api_version"], doc["msa_server"])
	}

	var ids []string
	for _, raw := range doc["models"].([]any) {
		m := raw.(map[string]any)
		id := m["id"].(string)
		ids = append(ids, id)
		want := []string{"available", "capabilities", "fast", "id", "kind", "max_residues", "max_tokens", "measured_wall", "name", "params", "unavailable_reason"}
		if m["kind"] == "embed" {
			want = []string{"available", "capabilities", "d_model", "fast", "id", "kind", "max_residues", "measured_wall", "name", "params", "unavailable_reason"}
		}
		if got := keys(m); !slices.Equal(got, want) {
			t.Errorf("%s: keys %v, want %v", id, got, want)
		}
		if got, want := m["available"], id == "boltz2" || id == "esmc-300m"; got != want {
			t.Errorf("%s: available %v, want %v", id, got, want)
		}
		// unavailable_reason is null exactly when the model is available, else its reason.
		var wantReason any
		if why, ok := unavailable[id]; ok {
			wantReason = why
		}
		if got := m["unavailable_reason"]; got != wantReason {
			t.Errorf("%s: unavailable_reason %v, want %v", id, got, wantReason)
		}
		// measured_wall is the store's record, null for a model that has run nothing yet.
		if wall := m["measured_wall"]; (id == "boltz2") != (wall == 311.0) || (id != "boltz2" && wall != nil) {
			t.Errorf("%s: measured_wall %v", id, wall)
		}
		capKeys := []string{"affinity", "constraints", "cyclic", "ligands", "modified_residues", "msa", "nucleic_acids", "pae", "templates"}
		if got := keys(m["capabilities"].(map[string]any)); !slices.Equal(got, capKeys) {
			t.Errorf("%s: capabilities %v, want %v", id, got, capKeys)
		}
		for name, raw := range m["params"].(map[string]any) {
			p := raw.(map[string]any)
			if _, ok := p["default"]; !ok || p["type"] == nil || p["description"] == "" {
				t.Errorf("%s.%s: %v lacks type, default or description", id, name, p)
			}
			switch p["type"] {
			case "integer":
				if p["min"] == nil || p["max"] == nil {
					t.Errorf("%s.%s: integer without min and max", id, name)
				}
			case "string":
				if p["enum"] == nil {
					t.Errorf("%s.%s: string without enum", id, name)
				}
			}
		}
	}
	if want := Default().ModelIDs("predict"); !slices.Equal(ids[:len(want)], want) {
		t.Errorf("models start %v, want the prediction models %v in catalog order", ids, want)
	}
	if len(ids) != 14 {
		t.Errorf("%d models, want 14", len(ids))
	}

	protocols := doc["protocols"].([]any)
	if len(protocols) != 9 {
		t.Errorf("%d protocols, want 9", len(protocols))
	}
	for _, raw := range protocols {
		p := raw.(map[string]any)
		if got, want := keys(p), []string{"description", "id", "model", "params", "requires"}; !slices.Equal(got, want) {
			t.Errorf("%s: keys %v, want %v", p["id"], got, want)
		}
		if len(p["params"].(map[string]any)) == 0 {
			t.Errorf("%s: no params", p["id"])
		}
	}
}

func TestDocumentLimits(t *testing.T) {
	t.Parallel()
	limits := documentJSON(t, nil, nil)["limits"].(map[string]any)
	want := map[string]float64{
		"residue_ceiling": 1024, "chains_per_complex": 20, "ligands_per_complex": 20, "constraints_per_complex": 50,
		"targets_per_job": 100, "max_content_chars": 1_000_000, "structure_chars": 700_000,
		"embed_sequences_per_job": 50, "embed_residues_per_sequence": 2000, "request_body_bytes": 8 << 20,
		"active_jobs_per_owner": 16, "creates_per_owner_per_minute": 60, "queued_jobs": 1000, "retained_jobs": 1000,
		"list_default": 20, "list_max": 100, "wait_default_seconds": 25, "wait_max_seconds": 60,
		"boltzgen_designs_per_job": 1000, "rfd3_designs_per_job": 100, "name_chars": 256,
		"connections_per_client": 64, "held_waits_per_client": 16,
		"predict_runtime_seconds": 3600, "design_runtime_seconds": 14400, "embed_runtime_seconds": 600, "stall_seconds": 900,
		// The same again under the reference service's names, and its parameter ceilings.
		"max_residues": 1024, "max_chains_per_complex": 20, "max_ligands_per_complex": 20, "max_constraints_per_complex": 50,
		"max_complexes": 100, "max_designs": 1000, "max_budget": 1000, "max_rfd3_designs": 100, "max_rfd3_timesteps": 200,
		"max_structure_chars": 700_000, "max_embed_sequences": 50, "max_embed_sequence_residues": 2000,
		"max_recycling_steps": 10, "max_sampling_steps": 500, "max_diffusion_samples": 5,
		"max_active_jobs_per_ip": 16, "max_active_jobs_per_session": 16, "max_submits_per_min": 60, "max_submits_per_min_per_ip": 60,
		"max_retained_jobs": 1000, "max_runtime_predict_s": 3600, "max_runtime_design_s": 14400, "max_runtime_embed_s": 600,
		"max_stall_s": 900, "max_stall_design_s": 900, "max_stall_embed_s": 900,
	}
	for k, v := range want {
		if limits[k] != v {
			t.Errorf("limits.%s = %v, want %v", k, limits[k], v)
		}
	}
	for k := range limits {
		if _, ok := want[k]; !ok {
			t.Errorf("limits.%s is not checked by this test", k)
		}
	}
}

func TestDocumentParams(t *testing.T) {
	t.Parallel()
	models := documentJSON(t, nil, nil)["models"].([]any)
	find := func(id string) map[string]any {
		for _, m := range models {
			if m.(map[string]any)["id"] == id {
				return m.(map[string]any)["params"].(map[string]any)
			}
		}
		t.Fatalf("model %s missing", id)
		return nil
	}
	boltz2 := find("boltz2")
	if p := boltz2["recycling_steps"].(map[string]any); p["default"] != nil || p["min"] != 1.0 || p["max"] != 10.0 {
		t.Errorf("boltz2 recycling_steps = %v; want default null, range 1..10", p)
	}
	if p := boltz2["output_format"].(map[string]any); p["default"] != "cif" || p["aliases"].(map[string]any)["mmcif"] != "cif" {
		t.Errorf("boltz2 output_format = %v; want default cif and mmcif aliased to cif", p)
	}
	if p := find("boltzgen")["budget"].(map[string]any); p["not_above"] != "num_designs" {
		t.Errorf("boltzgen budget = %v; want not_above num_designs", p)
	}
	if p := find("rfd3")["seed"].(map[string]any); p["max"] != 2147483647.0 || p["default"] != 42.0 {
		t.Errorf("rfd3 seed = %v", p)
	}
	if p := find("esmc-600m")["fast"].(map[string]any); p["default"] != false {
		t.Errorf("esmc-600m fast = %v; want default false", p)
	}
}

func TestDocumentIsDeterministic(t *testing.T) {
	t.Parallel()
	first, _ := json.Marshal(Default().Document(map[string]string{"rfd3": "no worker is connected"}, nil))
	for range 5 {
		again, _ := json.Marshal(Default().Document(map[string]string{"rfd3": "no worker is connected"}, nil))
		if !bytes.Equal(first, again) {
			t.Fatal("two encodings of the same catalog differ")
		}
	}
}

// TestLimitsSetTakesEveryDocumentedName: every limit of this server's own names can be set;
// the reference service's names (PublicLimits) only show them.
func TestLimitsSetTakesEveryDocumentedName(t *testing.T) {
	t.Parallel()
	public := map[string]bool{}
	for f := range reflect.TypeFor[PublicLimits]().Fields() {
		public[f.Tag.Get("json")] = true
	}
	for name := range documentJSON(t, nil, nil)["limits"].(map[string]any) {
		if public[name] {
			continue
		}
		l := DefaultLimits()
		if err := l.Set(name, 7); err != nil {
			t.Errorf("Set(%q, 7): %v", name, err)
			continue
		}
		b, _ := json.Marshal(New(l).Document(nil, nil))
		var doc struct{ Limits map[string]any }
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		if doc.Limits[name] != 7.0 {
			t.Errorf("after Set(%q, 7) the document shows %v", name, doc.Limits[name])
		}
	}
}

func TestLimitsSetRejects(t *testing.T) {
	t.Parallel()
	l := DefaultLimits()
	if err := l.Set("targets", 5); err == nil || !strings.Contains(err.Error(), `unknown limit "targets"; valid limits are active_jobs_per_owner,`) {
		t.Errorf("Set(targets) = %v, want an unknown-limit error listing the names", err)
	}
	if err := l.Set("stall_seconds", 0); err == nil || !strings.Contains(err.Error(), "must be at least 1") {
		t.Errorf("Set(stall_seconds, 0) = %v, want a must-be-at-least-1 error", err)
	}
	if l != DefaultLimits() {
		t.Errorf("a refused Set changed the limits: %+v", l)
	}
}
