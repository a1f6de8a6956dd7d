package bio

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/chaperone-bio/chaperone/internal/testpython"
)

// gemmiChains is what gemmi, an independent reader, makes of a structure file: for each
// chain of the first model (by author id), its polymer type and every residue but water.
const gemmiChains = `
import gemmi, json, sys
st = gemmi.read_structure(sys.argv[1])
st.setup_entities()
out = {"models": len(st), "chains": []}
for ch in st[0]:
    kind = {gemmi.PolymerType.PeptideL: "protein", gemmi.PolymerType.Dna: "dna",
            gemmi.PolymerType.Rna: "rna"}.get(ch.get_polymer().check_polymer_type(), "ligand")
    residues = [{"num": r.seqid.num, "icode": r.seqid.icode.strip(), "name": r.name,
                 "polymer": r.entity_type == gemmi.EntityType.Polymer}
                for r in ch if not r.is_water()]
    if residues:
        out["chains"].append({"id": ch.name, "kind": kind, "residues": residues})
json.dump(out, sys.stdout)
`

type gemmiResidue struct {
	Num     int    `json:"num"`
	ICode   string `json:"icode"`
	Name    string `json:"name"`
	Polymer bool   `json:"polymer"`
}

type gemmiChain struct {
	ID       string         `json:"id"`
	Kind     Kind           `json:"kind"`
	Residues []gemmiResidue `json:"residues"`
}

type gemmiStructure struct {
	Models int          `json:"models"`
	Chains []gemmiChain `json:"chains"`
}

// TestReadStructureAgreesWithGemmi reads the test structures (altlocs, hydrogens, waters,
// insertion codes, modified residues, ligands after TER, author ids that differ from
// label ids, two models) with ReadStructure and with gemmi: both must see the same chains,
// kinds and residues.
func TestReadStructureAgreesWithGemmi(t *testing.T) {
	t.Parallel()
	python := testpython.Require(t, "gemmi")
	files, err := filepath.Glob(filepath.Join("testdata", "structures", "*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no test structures: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			t.Parallel()
			out, err := exec.Command(python, "-c", gemmiChains, file).Output()
			if err != nil {
				t.Fatalf("gemmi: %v", err)
			}
			var want gemmiStructure
			if err := json.Unmarshal(out, &want); err != nil {
				t.Fatal(err)
			}
			text, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			s, err := ReadStructure(string(text))
			if err != nil {
				t.Fatalf("ReadStructure: %v", err)
			}
			if got := asGemmi(s); !reflect.DeepEqual(got, want) {
				t.Errorf("ReadStructure sees\n%+v\ngemmi sees\n%+v", got, want)
			}
		})
	}
}

// asGemmi is a structure in the shape gemmiChains prints; gemmi lists a chain's polymer
// residues and then its ligands in file order, as ReadStructure keeps them.
func asGemmi(s *Structure) gemmiStructure {
	g := gemmiStructure{Models: s.Models}
	for _, c := range s.Chains {
		gc := gemmiChain{ID: c.ID, Kind: c.Kind}
		for _, r := range c.Residues {
			gc.Residues = append(gc.Residues, gemmiResidue{Num: r.Num, ICode: r.ICode, Name: r.Name, Polymer: true})
		}
		for _, r := range c.Ligands {
			gc.Residues = append(gc.Residues, gemmiResidue{Num: r.Num, ICode: r.ICode, Name: r.Name})
		}
		g.Chains = append(g.Chains, gc)
	}
	return g
}
