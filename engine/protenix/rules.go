package protenix

import (
	"strings"

	"github.com/chaperone-bio/chaperone/bio"
)

// proteinLetters are the residue letters the tools read (json_parser.py, PROTEIN_1to3):
// the 20 standard amino acids and X.
const proteinLetters = "ACDEFGHIKLMNPQRSTVWYX"

// CheckInput refuses at submit what Protenix and OpenDDE require of an input beyond the
// catalog's capabilities: protein residues are the 20 standard letters and X, as the
// tools have no residue for B, Z, U or O and fail the target. (Chains aligned on the
// server may sit beside chains with alignments sent or msa: empty: every chain comes with
// its own files, so the tools search none of them.)
func (e *Engine) CheckInput(model string, cx *bio.Complex, params map[string]any) error {
	for _, en := range cx.Entities {
		if en.Kind != bio.Protein {
			continue
		}
		if i := strings.IndexFunc(en.Sequence, func(r rune) bool { return !strings.ContainsRune(proteinLetters, r) }); i >= 0 {
			return bio.Errorf(en.Pos, "chain %s: residue %d is %c, which %s does not read; it takes the 20 standard "+
				"amino acids and X (write selenocysteine or pyrrolysine as C or K with a modification to SEC or PYL)",
				en.IDs[0], i+1, en.Sequence[i], model)
		}
	}
	return nil
}
