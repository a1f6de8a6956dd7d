package protenix

import (
	"strings"
	"testing"

	"github.com/chaperone-bio/chaperone/bio"
)

func TestCheckInput(t *testing.T) {
	t.Parallel()
	a3m := "      msa: |\n        >q\n        MKTAYIAK\n"
	tests := []struct {
		name, input string
		server      bool
		want        string // "" accepts
	}{
		{"standard residues and X", ">A|protein\nMKTAYIAKXX\n", true, ""},
		{"selenocysteine", ">A|protein\nMKTAUIAK\n", true, "chain A: residue 5 is U, which protenix-v2 does not read"},
		{"an ambiguous residue", ">A|protein\nBKTAYIAK\n", false, "residue 1 is B"},
		// Every chain comes with its own alignment files, so the tools search none of them.
		{"an alignment sent beside one searched", "sequences:\n  - protein:\n      id: A\n      sequence: MKTAYIAK\n" + a3m +
			"  - protein:\n      id: B\n      sequence: GGSGG\n", true, ""},
		{"msa: empty beside a chain searched", ">A|protein|empty\nMKTAYIAK\n>B|protein\nGGSGG\n", true, ""},
		{"both mixes without the server", "sequences:\n  - protein:\n      id: A\n      sequence: MKTAYIAK\n" + a3m +
			"  - protein:\n      id: B\n      sequence: GGSGG\n      msa: empty\n  - protein:\n      id: C\n      sequence: GGSGG\n", false, ""},
		{"every chain searched, with DNA", ">A|protein\nMKTAYIAK\n>B|protein\nGGSGG\n>D|dna\nGATC\n", true, ""},
	}
	for _, tt := range tests {
		cx, err := bio.ParseInput("t", tt.input)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		err = New(Config{}).CheckInput("protenix-v2", cx, map[string]any{"use_msa_server": tt.server})
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: refused: %v", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.want)
		}
	}
}
