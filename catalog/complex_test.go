package catalog

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
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

func TestNewPredictAcceptsInputs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body string
	}{
		{"a complex at every cap", body("", "sequences:\n  - protein: {id: [A, B], sequence: "+strings.Repeat("A", 19)+"}\n  - ligand: {id: L, ccd: ZN}\n"+
			"constraints:\n  - pocket: {binder: L, contacts: [[A, 1]], max_distance: 4}\n", "")},
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
		{"a SMILES ligand counts its heavy atoms", body("", protA+"  - ligand: {id: L, smiles: '"+strings.Repeat("C", 35)+"'}\n", ""),
			"input", "has 41 tokens (a token per residue and per ligand heavy atom); boltz2 takes at most 40 (max_tokens)"},
		{"a CCD ligand of known size counts its heavy atoms", body("", protA+"  - ligand: {id: [L, M], ccd: SAH}\n", ""),
			"input", "has 58 tokens (a token per residue and per ligand heavy atom); boltz2 takes at most 40 (max_tokens)"},
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
	cx, err := bio.Complexes(j.Input)
	if err != nil || len(cx) != 1 || cx[0].Entities[1].Kind != bio.Ligand {
		t.Errorf("Complexes = %+v, %v", cx, err)
	}
}

// TestInputRules: a rule an engine registers runs on every target of its model's jobs,
// with the accepted params, and its error is placed in the target's field.
func TestInputRules(t *testing.T) {
	t.Parallel()
	c := tight()
	var seen []string
	rule := func(cx *bio.Complex, params map[string]any) error {
		seen = append(seen, fmt.Sprintf("%s %v", cx.Name, params["use_msa_server"]))
		if cx.NumChains() > 1 {
			return bio.Errorf(cx.Entities[1].Pos, "chain %s: the tool takes one chain", cx.Entities[1].IDs[0])
		}
		return nil
	}
	if err := c.AddInputRule("protenix-v2", rule); err != nil {
		t.Fatal(err)
	}
	if _, err := predict(c, `{"model": "protenix-v2", "targets": [{"name": "a", "content": ">x\nMK"}], "params": {"use_msa_server": false}}`); err != nil {
		t.Fatal(err)
	}
	_, err := predict(c, `{"model": "protenix-v2", "targets": [{"name": "a", "content": ">x\nMK"}, {"name": "b", "content": ">x\nMK\n>y\nGG"}]}`)
	wantInvalid(t, err, "targets[1].content", "line 3: chain B: the tool takes one chain")
	if want := []string{"a false", "a true", "b true"}; !slices.Equal(seen, want) {
		t.Errorf("the rule saw %v, want %v", seen, want)
	}
	if _, err := predict(c, body("openfold3", protA+ligL, "")); err != nil {
		t.Errorf("a rule of protenix-v2 ran on openfold3: %v", err)
	}
	if err := c.AddInputRule("nope", rule); err == nil {
		t.Error("a rule for a model the catalog lacks was accepted")
	}
}
