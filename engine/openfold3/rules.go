package openfold3

import (
	"strings"

	"github.com/chaperone-bio/chaperone/bio"
)

// CheckInput refuses at submit what OpenFold3 itself cannot fold, beyond the catalog's
// capabilities (core/data/primitives/structure/query.py, structure_with_ref_mols_from_query):
//   - a ligand chain of several CCD codes raises NotImplementedError;
//   - a polymer and a different molecule written with the same text (a protein and a DNA
//     chain both "ACGT") get one entity id, as copies of one molecule, since OpenFold3
//     groups chains into entities by that text alone.
func (e *Engine) CheckInput(model string, cx *bio.Complex, params map[string]any) error {
	kinds := map[string]bio.Kind{}
	for _, en := range cx.Entities {
		if en.Kind == bio.Ligand && len(en.CCD) > 1 {
			return bio.Errorf(en.Pos, "ligand %s: OpenFold3 takes one CCD code per ligand chain, not %d (%s); "+
				"give each code its own chain, or the whole ligand as SMILES", en.IDs[0], len(en.CCD), strings.Join(en.CCD, ", "))
		}
		text := en.Sequence
		if en.SMILES != "" {
			text = en.SMILES
		} else if len(en.CCD) == 1 {
			text = en.CCD[0]
		}
		if k, ok := kinds[text]; ok && k != en.Kind {
			return bio.Errorf(en.Pos, "chain %s is %s written as %q, the same text as a %s chain, and OpenFold3 would make "+
				"the two one molecule; change one of them", en.IDs[0], en.Kind, text, k)
		}
		kinds[text] = en.Kind
	}
	return nil
}
