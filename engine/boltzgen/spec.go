package boltzgen

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
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
			if e.Cyclic {
				b.WriteString("      cyclic: true\n")
			}
			// BoltzGen 0.3.2 reads no alignment: its design and folding steps pass an empty
			// set of MSAs (task/predict/data_from_yaml.py:258, data_from_generated.py:454).
			// A chain sent single-sequence says so; an inline alignment is not written.
			if e.MSA.Source == bio.MSANone {
				b.WriteString("      msa: empty\n")
			}
		case e.SMILES != "":
			fmt.Fprintf(&b, "  - ligand:\n      id: %s\n      smiles: %s\n", ids, quote(e.SMILES))
		default:
			// A ligand of several CCD codes is one chain of those residues in BoltzGen too
			// (data/parse/schema.py:975-983).
			fmt.Fprintf(&b, "  - ligand:\n      id: %s\n      ccd: %s\n", ids, quoted(e.CCD))
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

// quoted writes one value as a scalar and several as a flow list.
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

// nameFor is the name under which BoltzGen reads a structure of the format as that format:
// name itself when its suffix already says so, else its stem with .pdb or .cif.
func nameFor(name, format string) string {
	isPDB := strings.HasSuffix(name, ".pdb")
	switch {
	case format == bio.PDB && !isPDB:
		return strings.TrimSuffix(name, filepath.Ext(name)) + ".pdb"
	case format == bio.MMCIF && isPDB:
		return strings.TrimSuffix(name, ".pdb") + ".cif"
	}
	return name
}

// renameFile rewrites every file entity's path from one name to another in a spec in the
// entities form, keeping the rest of the text (comments too) as it is, and checks the result
// names the new one.
func renameFile(text, from, to string, structure *bio.Structure) (string, error) {
	path := regexp.MustCompile(`(\bpath\s*:\s*)(["']?)` + regexp.QuoteMeta(from) + `(["']?)`)
	renamed := path.ReplaceAllString(text, "${1}${2}"+strings.ReplaceAll(to, "$", "$$")+"${3}")
	spec, err := bio.ParseDesignSpec(renamed, structure)
	if err != nil || spec.File != to {
		return "", fmt.Errorf("renaming the structure %s to %s in the spec: %v", from, to, err)
	}
	return renamed, nil
}
