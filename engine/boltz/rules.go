package boltz

import (
	"slices"

	"github.com/chaperone-bio/chaperone/bio"
	"github.com/chaperone-bio/chaperone/engine/toolkit"
)

// Boltz's supported range for pocket and contact distances (docs/prediction.md).
const minDistance, maxDistance = 4, 20

// CheckInput refuses at submit what Boltz-2 itself requires of an input beyond the
// schema (src/boltz/data/parse/schema.py):
//   - entries with the same type and sequence are one entity to Boltz, which takes the
//     modifications and cyclic flag of the first for all and fails unless their MSAs agree;
//     so are ligand entries with the same SMILES or CCD codes, which makes each a copy and
//     none of them an affinity binder;
//   - pocket and contact distances are supported between 4 and 20 Å.
//
// Boltz also refuses a target that mixes an alignment file with one it is to search itself
// (schema.py:1311), but this engine hands it every alignment as a file, the searched ones
// too, so a target may mix alignments sent with alignments searched.
func (e *Engine) CheckInput(model string, cx *bio.Complex, params map[string]any) error {
	if _, err := toolkit.NewPredictParams(params); err != nil {
		return err
	}
	for i, en := range cx.Entities {
		if !en.Kind.Polymer() {
			continue
		}
		for _, prev := range cx.Entities[:i] {
			if prev.Kind != en.Kind || prev.Sequence != en.Sequence {
				continue
			}
			if prev.MSA != en.MSA || prev.Cyclic != en.Cyclic || !slices.Equal(prev.Modifications, en.Modifications) {
				return bio.Errorf(en.Pos, "chains %s and %s have the same sequence, and Boltz reads them as copies of one "+
					"molecule, so they must have the same msa, modifications and cyclic; list both ids on one entry "+
					"(id: [%s, %s]) or make those fields agree", prev.IDs[0], en.IDs[0], prev.IDs[0], en.IDs[0])
			}
		}
	}
	if a := cx.Affinity; a != nil {
		binder, _ := cx.Entity(a.Binder)
		for _, en := range cx.Entities {
			if en.Kind == bio.Ligand && en.IDs[0] != binder.IDs[0] && en.SMILES == binder.SMILES && slices.Equal(en.CCD, binder.CCD) {
				return bio.Errorf(a.Pos, "affinity binder %s: chain %s is the same ligand, and Boltz reads the two as copies of one "+
					"molecule, which it predicts no affinity for; give the binder a single copy", a.Binder, en.IDs[0])
			}
		}
	}
	for _, k := range cx.Constraints {
		d := 0.0
		switch {
		case k.Pocket != nil:
			d = k.Pocket.MaxDistance
		case k.Contact != nil:
			d = k.Contact.MaxDistance
		}
		if d != 0 && (d < minDistance || d > maxDistance) {
			return bio.Errorf(k.Pos, "max_distance %g is outside the %d to %d Å that Boltz supports", d, minDistance, maxDistance)
		}
	}
	return nil
}
