package boltz

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/chaperone-bio/chaperone/bio"
	"github.com/chaperone-bio/chaperone/catalog"
	"github.com/chaperone-bio/chaperone/job"
)

// submit validates a boltz2 request with one input against a catalog that has the
// engine's rules, as the server registers them.
func submit(t *testing.T, input, params string) error {
	t.Helper()
	c := catalog.Default()
	e := New(Config{})
	err := c.AddInputRule("boltz2", func(cx *bio.Complex, params map[string]any) error { return e.CheckInput("boltz2", cx, params) })
	if err != nil {
		t.Fatal(err)
	}
	in, _ := json.Marshal(input)
	body := `{"model": "boltz2", "input": ` + string(in)
	if params != "" {
		body += `, "params": ` + params
	}
	var r catalog.PredictRequest
	if err := catalog.Decode([]byte(body+"}"), &r); err != nil {
		t.Fatal(err)
	}
	_, err = c.NewPredict(&r)
	return err
}

const (
	protA  = "sequences:\n  - protein: {id: A, sequence: MKTAYI}\n"
	ligL   = "  - ligand: {id: L, smiles: CCO}\n"
	a3mFor = "      msa: |\n        >q\n        MKTAYI\n"
)

func TestCheckInputAccepts(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, input, params string }{
		{"an inline alignment and msa: empty mix with the server on", "sequences:\n  - protein:\n      id: A\n      sequence: MKTAYI\n" + a3mFor +
			"  - protein: {id: B, sequence: GG, msa: empty}\n", ""},
		// Boltz refuses to mix its own search with a sent alignment, but it is given every
		// alignment as a file, the searched ones too.
		{"an inline alignment and a searched chain mix", "sequences:\n  - protein:\n      id: A\n      sequence: MKTAYI\n" + a3mFor +
			"  - protein: {id: B, sequence: GG}\n", ""},
		{"an inline alignment and a server chain mix when the server is off", "sequences:\n  - protein:\n      id: A\n      sequence: MKTAYI\n" + a3mFor +
			"  - protein: {id: B, sequence: GG}\n", `{"use_msa_server": false}`},
		{"same sequence twice with the same settings", "sequences:\n  - protein: {id: A, sequence: MK, cyclic: true}\n  - protein: {id: B, sequence: MK, cyclic: true}\n", ""},
		{"affinity for one of two different ligands", protA + ligL + "  - ligand: {id: M, smiles: CCN}\nproperties:\n  - affinity: {binder: L}\n", ""},
		{"same sequence as protein and as RNA is no conflict", "sequences:\n  - protein: {id: A, sequence: ACG}\n  - rna: {id: B, sequence: ACG, cyclic: true}\n", ""},
		{"distances at both ends of Boltz's range", protA + ligL + "constraints:\n  - pocket: {binder: L, contacts: [[A, 1]], max_distance: 4}\n" +
			"  - contact: {token1: [A, 1], token2: [L, C1], max_distance: 20}\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if err := submit(t, tt.input, tt.params); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestCheckInputRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, input, reason string }{
		{"same sequence, different msa", "sequences:\n  - protein: {id: A, sequence: MK}\n  - protein: {id: B, sequence: MK, msa: empty}\n",
			"line 3, column 5: chains A and B have the same sequence, and Boltz reads them as copies of one molecule, so they must have the same msa, modifications and cyclic; list both ids on one entry (id: [A, B])"},
		{"same sequence, different modifications", "sequences:\n  - protein: {id: A, sequence: MK}\n  - protein: {id: B, sequence: MK, modifications: [{position: 1, ccd: MSE}]}\n",
			"chains A and B have the same sequence"},
		{"affinity for a ligand that another entry repeats", protA + ligL + "  - ligand: {id: M, smiles: CCO}\nproperties:\n  - affinity: {binder: L}\n",
			"line 6, column 5: affinity binder L: chain M is the same ligand, and Boltz reads the two as copies of one molecule"},
		{"affinity for a CCD ligand that another entry repeats", protA + "  - ligand: {id: M, ccd: SAH}\n  - ligand: {id: L, ccd: [SAH]}\nproperties:\n  - affinity: {binder: L}\n",
			"affinity binder L: chain M is the same ligand"},
		{"a pocket closer than 4 Å", protA + ligL + "constraints:\n  - pocket: {binder: L, contacts: [[A, 1]], max_distance: 2.5}\n",
			"line 5, column 5: max_distance 2.5 is outside the 4 to 20 Å that Boltz supports"},
		{"a contact further than 20 Å", protA + ligL + "constraints:\n  - contact: {token1: [A, 1], token2: [L, C1], max_distance: 25}\n",
			"max_distance 25 is outside the 4 to 20 Å"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := submit(t, tt.input, "")
			var inv *job.InvalidError
			if !errors.As(err, &inv) || inv.Field != "input" || !strings.Contains(inv.Reason, tt.reason) {
				t.Errorf("err = %v, want on input: %q", err, tt.reason)
			}
		})
	}
}
