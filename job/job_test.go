package job

import (
	"encoding/json"
	"reflect"
	"testing"
)

func ptr(f float64) *float64 { return &f }

func TestProgressValue(t *testing.T) {
	tests := []struct {
		name string
		p    Progress
		want *float64
	}{
		{"indeterminate", Progress{}, nil},
		{"counted", Progress{Done: 1, Total: 4}, ptr(0.25)},
		{"engine fraction wins", Progress{Done: 1, Total: 4, Fraction: ptr(0.6)}, ptr(0.6)},
		{"fraction clamped above", Progress{Fraction: ptr(1.7)}, ptr(1)},
		{"fraction clamped below", Progress{Fraction: ptr(-0.2)}, ptr(0)},
		{"done past total", Progress{Done: 5, Total: 4}, ptr(1)},
	}
	for _, tt := range tests {
		got := tt.p.Value()
		if (got == nil) != (tt.want == nil) || got != nil && *got != *tt.want {
			t.Errorf("%s: Value() = %v, want %v", tt.name, deref(got), deref(tt.want))
		}
	}
}

func deref(f *float64) any {
	if f == nil {
		return nil
	}
	return *f
}

func TestIDs(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := NewID()
		if !ValidID(id) || seen[id] {
			t.Fatalf("NewID gave %q (valid %v, repeated %v)", id, ValidID(id), seen[id])
		}
		seen[id] = true
	}
	for _, bad := range []string{"", "0123456789ABCDEF0123456789abcdef", "0123456789abcdef0123456789abcde", "../../../etc/passwd000000000000000"} {
		if ValidID(bad) {
			t.Errorf("ValidID(%q) = true", bad)
		}
	}
}

func TestOwnerRoundTrip(t *testing.T) {
	for _, o := range []Owner{{OwnerKey, "key_1"}, {OwnerSession, "abc"}, {OwnerIP, "::1"}, {OwnerIP, "10.0.0.1"}} {
		got, ok := ParseOwner(o.String())
		if !ok || got != o {
			t.Errorf("ParseOwner(%q) = %v, %v", o.String(), got, ok)
		}
	}
	for _, bad := range []string{"", "ip:", "user:x", "nocolon"} {
		if _, ok := ParseOwner(bad); ok {
			t.Errorf("ParseOwner(%q) accepted", bad)
		}
	}
}

func TestStatus(t *testing.T) {
	for s, want := range map[Status][2]bool{Queued: {false, true}, Running: {false, true},
		Succeeded: {true, false}, Failed: {true, false}, Canceled: {true, false}} {
		if s.Terminal() != want[0] || s.Active() != want[1] {
			t.Errorf("%s: Terminal %v Active %v", s, s.Terminal(), s.Active())
		}
	}
}

// TestPredictionRowJSON pins a row's JSON to what rows were before they were typed
// (marshalled maps): the same keys in the same order, null where a score is missing, and
// stored rows read back into the same row.
func TestPredictionRowJSON(t *testing.T) {
	t.Parallel()
	f := ptr
	tests := []struct {
		name   string
		row    PredictionRow
		before map[string]any // the row as the engine wrote it before
	}{
		{"one chain: no interface, so iptm is null",
			PredictionRow{ID: "target_1", Status: RowOK, NChains: 1, NResidues: 22, Samples: 1, MSA: true, RuntimeS: 12.5,
				Scores: &Scores{PLDDT: 0.8, PTM: 0.7, ComplexPLDDT: f(0.8), ConfidenceScore: f(0.78), ComplexIPLDDT: f(0.8), ComplexPDE: f(0.9), ComplexIPDE: f(1.6)}},
			map[string]any{"id": "target_1", "status": "ok", "n_chains": 1, "n_residues": 22, "samples": 1, "msa": true, "runtime_s": 12.5,
				"plddt": 0.8, "ptm": 0.7, "iptm": nil, "complex_plddt": 0.8, "confidence_score": 0.78, "complex_iplddt": 0.8, "complex_pde": 0.9, "complex_ipde": 1.6}},
		{"a score the tool left out is null",
			PredictionRow{ID: "ab", Status: RowOK, NChains: 2, NResidues: 30, Samples: 3, RuntimeS: 1,
				Scores: &Scores{PLDDT: 0.5, PTM: 0.6, IPTM: f(0.4), ComplexPLDDT: f(0.5), ConfidenceScore: f(0.48)}},
			map[string]any{"id": "ab", "status": "ok", "n_chains": 2, "n_residues": 30, "samples": 3, "msa": false, "runtime_s": 1.0,
				"plddt": 0.5, "ptm": 0.6, "iptm": 0.4, "complex_plddt": 0.5, "confidence_score": 0.48, "complex_iplddt": nil, "complex_pde": nil, "complex_ipde": nil}},
		{"failed before any structure: no scores",
			PredictionRow{ID: "skip", Status: RowFailed, Error: "Boltz could not process the input", NChains: 1, NResidues: 2, RuntimeS: 0.25},
			map[string]any{"id": "skip", "status": "failed", "error": "Boltz could not process the input", "n_chains": 1, "n_residues": 2,
				"samples": 0, "msa": false, "runtime_s": 0.25}},
		{"affinity with every model of the ensemble",
			PredictionRow{ID: "lig", Status: RowOK, NChains: 2, NResidues: 11, Samples: 1, RuntimeS: 3,
				Scores:   &Scores{PLDDT: 0.9, PTM: 0.8, IPTM: f(0.7), ComplexPLDDT: f(0.9), ConfidenceScore: f(0.86), ComplexIPLDDT: f(0.9), ComplexPDE: f(0.8), ComplexIPDE: f(1.6)},
				Affinity: &Affinity{PredValue: -0.5, ProbabilityBinary: 0.7, PredValue1: f(-0.4), ProbabilityBinary1: f(0.6), PredValue2: f(-0.6), ProbabilityBinary2: f(0.8)}},
			map[string]any{"id": "lig", "status": "ok", "n_chains": 2, "n_residues": 11, "samples": 1, "msa": false, "runtime_s": 3.0,
				"plddt": 0.9, "ptm": 0.8, "iptm": 0.7, "complex_plddt": 0.9, "confidence_score": 0.86, "complex_iplddt": 0.9, "complex_pde": 0.8, "complex_ipde": 1.6,
				"affinity_pred_value": -0.5, "affinity_probability_binary": 0.7, "affinity_pred_value1": -0.4, "affinity_probability_binary1": 0.6,
				"affinity_pred_value2": -0.6, "affinity_probability_binary2": 0.8}},
		{"affinity of the ensemble only, on a failed row that keeps its scores",
			PredictionRow{ID: "aff", Status: RowFailed, Error: "no affinity", NChains: 2, NResidues: 11, Samples: 1, RuntimeS: 3,
				Scores:   &Scores{PLDDT: 0.9, PTM: 0.8, IPTM: f(0.7), ComplexPLDDT: f(0.9), ConfidenceScore: f(0.86)},
				Affinity: &Affinity{PredValue: 1, ProbabilityBinary: 0}},
			map[string]any{"id": "aff", "status": "failed", "error": "no affinity", "n_chains": 2, "n_residues": 11, "samples": 1, "msa": false, "runtime_s": 3.0,
				"plddt": 0.9, "ptm": 0.8, "iptm": 0.7, "complex_plddt": 0.9, "confidence_score": 0.86, "complex_iplddt": nil, "complex_pde": nil, "complex_ipde": nil,
				"affinity_pred_value": 1.0, "affinity_probability_binary": 0.0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			want, err := json.Marshal(tt.before)
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.Marshal(tt.row)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("row JSON\n got %s\nwant %s", got, want)
			}
			var back PredictionRow
			if err := json.Unmarshal(want, &back); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back, tt.row) {
				t.Errorf("stored row reads back as %+v, want %+v", back, tt.row)
			}
		})
	}
}

func TestLargestInput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		r    Results
		want int
	}{
		{"nothing", Results{}, 0},
		{"the largest target that succeeded", Results{Rows: []PredictionRow{
			{Status: RowOK, NResidues: 120}, {Status: RowFailed, NResidues: 900}, {Status: RowOK, NResidues: 300}}}, 300},
		{"the longest embedded sequence", Results{Embedding: &Embedding{Sequences: []EmbeddedSequence{{Length: 7}, {Length: 40}}}}, 40},
		{"a design holds no size", Results{Designs: []Design{{ID: "d1", Sequence: "MKV"}}}, 0},
	}
	for _, tt := range tests {
		if got := tt.r.LargestInput(); got != tt.want {
			t.Errorf("%s: LargestInput = %d, want %d", tt.name, got, tt.want)
		}
	}
}
