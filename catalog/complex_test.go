package catalog

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/chaperone-bio/chaperone/bio"
	"github.com/chaperone-bio/chaperone/job"
)

// tight is a catalog whose complex caps are small enough to cross with short inputs.
func tight() *Catalog {
	return New(Limits{ResidueCeiling: 40, ChainsPerComplex: 3, LigandsPerComplex: 2, ConstraintsPerComplex: 1, TargetsPerJob: 3})
}

// body builds a prediction request with one YAML or FASTA input.
func body(model, input string, params string) string {
	b, _ := json.Marshal(input)
	s := `{"input": ` + string(b)
	if model != "" {
		s += `, "model": "` + model + `"`
	}
	if params != "" {
		s += `, "params": ` + params
	}
	return s + "}"
}

const (
	protA  = "sequences:\n  - protein: {id: A, sequence: MKTAYI}\n"
	ligL   = "  - ligand: {id: L, smiles: CCO}\n"
	a3mFor = "      msa: |\n        >q\n        MKTAYI\n"
)

func TestComplexes(t *testing.T) {
	t.Parallel()
	got, err := Complexes(job.Input{Targets: []job.Target{{Name: "a", Content: ">x\nMK\n"}, {Name: "b", Content: protA + ligL}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Name != "a" || got[1].Name != "b" || got[1].NumChains() != 2 {
		t.Errorf("complexes %+v %+v", got[0], got[1])
	}
	for _, in := range []job.Input{{Sequence: "MKT"}, {Input: ">x\nMKT\n"}} {
		got, err := Complexes(in)
		if err != nil || len(got) != 1 || got[0].Name != SingleTarget || got[0].Entities[0].Sequence != "MKT" {
			t.Errorf("Complexes(%+v) = %+v, %v", in, got, err)
		}
	}
	_, err = Complexes(job.Input{Targets: []job.Target{{Name: "a", Content: ">x\nMK\n"}, {Name: "b", Content: "sequences: 3"}}})
	wantInvalid(t, err, "targets[1].content", "line 1, column 12: sequences must be a list")
}

func TestNewPredictAcceptsInputs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body string
	}{
		{"a complex at every cap", body("", "sequences:\n  - protein: {id: [A, B], sequence: "+strings.Repeat("A", 19)+"}\n  - ligand: {id: L, ccd: SAH}\n"+
			"constraints:\n  - pocket: {binder: L, contacts: [[A, 1]], max_distance: 4}\n", "")},
		{"an inline alignment and msa: empty mix with the server on", body("", "sequences:\n  - protein:\n      id: A\n      sequence: MKTAYI\n"+a3mFor+
			"  - protein: {id: B, sequence: GG, msa: empty}\n", "")},
		{"an inline alignment and a server chain mix when the server is off", body("", "sequences:\n  - protein:\n      id: A\n      sequence: MKTAYI\n"+a3mFor+
			"  - protein: {id: B, sequence: GG}\n", `{"use_msa_server": false}`)},
		{"same sequence twice with the same settings", body("", "sequences:\n  - protein: {id: A, sequence: MK, cyclic: true}\n  - protein: {id: B, sequence: MK, cyclic: true}\n", "")},
		{"affinity for one of two different ligands", body("", protA+ligL+"  - ligand: {id: M, smiles: CCN}\nproperties:\n  - affinity: {binder: L}\n", "")},
		{"same sequence as protein and as RNA is no conflict", body("", "sequences:\n  - protein: {id: A, sequence: ACG}\n  - rna: {id: B, sequence: ACG, cyclic: true}\n", "")},
		{"one-letter chains in pdb output", body("", protA+ligL, `{"output_format": "pdb"}`)},
		{"protenix takes ligands and nucleic acids", body("protenix-v2", protA+ligL+"  - dna: {id: D, sequence: ACGT}\n", "")},
		{"esmfold2 takes proteins with msa: empty", body("esmfold2", "sequences:\n  - protein: {id: A, sequence: MK, msa: empty}\n", "")},
		{"targets named like samples of nothing", `{"targets": [{"name": "x_sample_1", "content": ">a\nMK"}]}`},
		{"targets named like structure files of nothing", `{"targets": [{"name": "x.cif", "content": ">a\nMK"}, {"name": "y_sample_1.cif", "content": ">a\nMK"}]}`},
		{"a target named like another's file of the other format", `{"targets": [{"name": "x", "content": ">a\nMK"}, {"name": "x.pdb", "content": ">a\nMK"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := predict(tight(), tt.body); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestNewPredictRejectsInputs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body, field, reason string
	}{
		{"YAML error names the field, line and column", body("", "sequences:\n  - protein: {id: A, sequence: MKJ}\n", ""),
			"input", "line 2, column 32: sequences[0].protein.sequence position 3: 'J' is not an amino-acid letter"},
		{"a target's error names the target", `{"targets": [{"content": ">a\nMK"}, {"content": ">b\nM1"}]}`,
			"targets[1].content", "line 1: record b: protein sequence position 2: '1'"},
		{"too many chains", body("", "sequences:\n  - protein: {id: [A, B, C, D], sequence: MK}\n", ""),
			"input", "has 4 chains, over the cap of 3 (chains_per_complex)"},
		{"too many ligands", body("", "sequences:\n  - ligand: {id: [L, M, N], ccd: SAH}\n", ""),
			"input", "has 3 ligand chains, over the cap of 2 (ligands_per_complex)"},
		{"too many constraints", body("", protA+ligL+"constraints:\n  - contact: {token1: [A, 1], token2: [L, C1]}\n  - contact: {token1: [A, 2], token2: [L, C1]}\n", ""),
			"input", "has 2 constraints, over the cap of 1 (constraints_per_complex)"},
		{"residues over the model's ceiling count every copy", body("", "sequences:\n  - protein: {id: [A, B], sequence: "+strings.Repeat("A", 20)+"}\n  - ligand: {id: L, ccd: SAH}\n", ""),
			"input", "has 41 residues over all its chains; boltz2 takes at most 40 (max_residues)"},
		{"a ligand on a protein-only model", body("esmfold2", protA+ligL, ""),
			"input", "line 3, column 5: chain L is a ligand, which esmfold2 does not take; models that do: boltz2, protenix-v2, openfold3"},
		{"DNA on a protein-only model", body("opendde", protA+"  - dna: {id: D, sequence: ACGT}\n", ""),
			"input", "chain D is DNA, which opendde does not take; models that do: boltz2, protenix-v2, openfold3"},
		{"RNA on a protein-only model", body("esmfold2", ">A|rna\nACGU\n", ""),
			"input", "line 1: chain A is RNA, which esmfold2 does not take"},
		{"affinity off boltz2", body("protenix-v2", protA+ligL+"properties:\n  - affinity: {binder: L}\n", ""),
			"input", "line 5, column 5: the input asks for affinity, which protenix-v2 does not take; models that do: boltz2"},
		{"constraints off boltz2", body("openfold3", protA+ligL+"constraints:\n  - contact: {token1: [A, 1], token2: [L, C1]}\n", ""),
			"input", "the input has constraints, which openfold3 does not take; models that do: boltz2"},
		{"templates off boltz2", body("protenix-v2", protA+"templates:\n  - cif: \"data_x\\n_atom_site.id\\n\"\n", ""),
			"input", "the input has templates, which protenix-v2 does not take; models that do: boltz2"},
		{"cyclic off boltz2", body("openfold3", "sequences:\n  - protein: {id: A, sequence: MK, cyclic: true}\n", ""),
			"input", "chain A is cyclic, which openfold3 does not take"},
		{"an alignment on a single-sequence model", body("esmfold2-fast", "sequences:\n  - protein:\n      id: A\n      sequence: MKTAYI\n"+a3mFor, ""),
			"input", "chain A has an alignment, which esmfold2-fast does not take"},
		{"two-character chain ids in PDB output", body("", "sequences:\n  - protein: {id: A1, sequence: MK}\n", `{"output_format": "pdb"}`),
			"input", "line 2, column 5: chain A1: the PDB format holds one character per chain id"},
		{"Boltz: same sequence, different msa", body("", "sequences:\n  - protein: {id: A, sequence: MK}\n  - protein: {id: B, sequence: MK, msa: empty}\n", ""),
			"input", "line 3, column 5: chains A and B have the same sequence, and Boltz reads them as copies of one molecule, so they must have the same msa, modifications and cyclic; list both ids on one entry (id: [A, B])"},
		{"Boltz: same sequence, different modifications", body("", "sequences:\n  - protein: {id: A, sequence: MK}\n  - protein: {id: B, sequence: MK, modifications: [{position: 1, ccd: MSE}]}\n", ""),
			"input", "chains A and B have the same sequence"},
		{"Boltz: an inline alignment beside a server chain", body("", "sequences:\n  - protein:\n      id: A\n      sequence: MKTAYI\n"+a3mFor+"  - protein: {id: B, sequence: GG}\n", ""),
			"input", "line 8, column 5: chain B would be aligned on the MSA server while chain A has the alignment you sent, and Boltz cannot mix the two"},
		{"Boltz: affinity for a ligand that another entry repeats", body("", protA+ligL+"  - ligand: {id: M, smiles: CCO}\nproperties:\n  - affinity: {binder: L}\n", ""),
			"input", "line 6, column 5: affinity binder L: chain M is the same ligand, and Boltz reads the two as copies of one molecule"},
		{"Boltz: affinity for a CCD ligand that another entry repeats", body("", protA+"  - ligand: {id: M, ccd: SAH}\n  - ligand: {id: L, ccd: [SAH]}\nproperties:\n  - affinity: {binder: L}\n", ""),
			"input", "affinity binder L: chain M is the same ligand"},
		{"Boltz: a pocket closer than 4 Å", body("", protA+ligL+"constraints:\n  - pocket: {binder: L, contacts: [[A, 1]], max_distance: 2.5}\n", ""),
			"input", "line 5, column 5: max_distance 2.5 is outside the 4 to 20 Å that Boltz supports"},
		{"Boltz: a contact further than 20 Å", body("", protA+ligL+"constraints:\n  - contact: {token1: [A, 1], token2: [L, C1], max_distance: 25}\n", ""),
			"input", "max_distance 25 is outside the 4 to 20 Å"},
		{"a target named like another's samples", `{"targets": [{"name": "x", "content": ">a\nMK"}, {"name": "X_sample_2", "content": ">a\nMK"}]}`,
			"targets[1].name", `"X_sample_2" is the name of the further samples of targets[0] (x_sample_<k>.cif); rename it`},
		{"a target named like another's structure file", `{"targets": [{"name": "x", "content": ">a\nMK"}, {"name": "X.cif", "content": ">a\nMK"}]}`,
			"targets[1].name", `"X.cif" is the name of the structure file of targets[0] (x.cif), and the files of a target go in a folder of its name; rename it`},
		{"a target named like another's sample file", `{"targets": [{"name": "x_sample_1.pdb", "content": ">a\nMK"}, {"name": "x", "content": ">a\nMK"}], "params": {"output_format": "pdb"}}`,
			"targets[0].name", `"x_sample_1.pdb" is the name of the further samples of targets[1] (x_sample_<k>.pdb); rename it`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := predict(tight(), tt.body)
			if err == nil {
				t.Fatalf("accepted: %+v", got)
			}
			wantInvalid(t, err, tt.field, tt.reason)
		})
	}
}

// TestNewPredictKeepsTheInput checks that the job stores the caller's input as sent; the
// engine parses it again.
func TestNewPredictKeepsTheInput(t *testing.T) {
	t.Parallel()
	in := protA + ligL
	j, err := predict(tight(), body("", in, ""))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(j.Input, job.Input{Input: in}) {
		t.Errorf("input %+v", j.Input)
	}
	cx, err := Complexes(j.Input)
	if err != nil || len(cx) != 1 || cx[0].Entities[1].Kind != bio.Ligand {
		t.Errorf("Complexes = %+v, %v", cx, err)
	}
}
