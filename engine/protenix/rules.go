package protenix

import (
	"strings"

	"github.com/chaperone-bio/chaperone/bio"
	"github.com/chaperone-bio/chaperone/engine/toolkit"
)

// proteinLetters are the residue letters the tools read (json_parser.py, PROTEIN_1to3):
// the 20 standard amino acids and X.
const proteinLetters = "ACDEFGHIKLMNPQRSTVWYX"

// CheckInput refuses at submit what Protenix and OpenDDE require of an input beyond the
// catalog's capabilities:
//   - protein residues are the 20 standard letters and X: the tools have no residue for
//     B, Z, U or O and fail the target;
//   - with use_msa_server on, a target's protein chains are all aligned on the server or
//     none is: once one chain has no alignment file the tools search every protein chain
//     of the target and replace the alignments it had (runner/msa_search.py).
func (e *Engine) CheckInput(model string, cx *bio.Complex, params map[string]any) error {
	p, err := toolkit.NewPredictParams(params)
	if err != nil {
		return err
	}
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
	if !p.UseMSAServer {
		return nil
	}
	var auto, other *bio.Entity
	for i := range cx.Entities {
		en := &cx.Entities[i]
		switch {
		case en.Kind != bio.Protein:
		case en.MSA.Source == bio.MSAAuto && auto == nil:
			auto = en
		case en.MSA.Source != bio.MSAAuto && other == nil:
			other = en
		}
	}
	if auto != nil && other != nil {
		what := "the alignment you sent"
		if other.MSA.Source == bio.MSANone {
			what = "msa: empty"
		}
		return bio.Errorf(auto.Pos, "chain %s would be aligned on the MSA server while chain %s has %s, and %s then "+
			"aligns every protein chain of the target on the server, replacing it: send an alignment for %s too, "+
			"write msa: empty for it, or send use_msa_server false", auto.IDs[0], other.IDs[0], what, model, auto.IDs[0])
	}
	return nil
}
