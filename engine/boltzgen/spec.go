package boltzgen

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/chaperone-bio/chaperone/bio"
)

// entitiesYAML writes a spec of the sequences form as BoltzGen's entities: every chain of
// the target as it is, then the binder, a protein of the protocol's designed residues.
func entitiesYAML(spec *bio.DesignSpec, binder string) string {
	var b strings.Builder
	b.WriteString("# The target as sent (Boltz's sequences form) and the binder that the protocol designs.\nentities:\n")
	for _, e := range spec.Target.Entities {
		ids := quoted(e.IDs)
		switch {
		case e.Kind.Polymer():
			fmt.Fprintf(&b, "  - %s:\n      id: %s\n      sequence: %s\n", e.Kind, ids, quote(e.Sequence))
		case e.SMILES != "":
			fmt.Fprintf(&b, "  - ligand:\n      id: %s\n      smiles: %s\n", ids, quote(e.SMILES))
		default:
			fmt.Fprintf(&b, "  - ligand:\n      id: %s\n      ccd: %s\n", ids, quote(e.CCD[0]))
		}
	}
	fmt.Fprintf(&b, "  - protein:\n      id: %s\n      sequence: %s\n", quote(binderID(spec.Chains())), binder)
	return b.String()
}

// binderID is the first letter from B on that no chain of the target uses.
func binderID(taken []string) string {
	for _, c := range "BCDEFGHIJKLMNOPQRSTUVWXYZA" {
		if !slices.Contains(taken, string(c)) {
			return string(c)
		}
	}
	for i := 1; ; i++ {
		if id := fmt.Sprintf("B%d", i); !slices.Contains(taken, id) {
			return id
		}
	}
}

// quote writes s as a double-quoted YAML scalar, which JSON's string syntax is.
func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// quoted writes one id as a scalar and several as a flow list.
func quoted(ids []string) string {
	if len(ids) == 1 {
		return quote(ids[0])
	}
	q := make([]string, len(ids))
	for i, id := range ids {
		q[i] = quote(id)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
