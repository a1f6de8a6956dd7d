package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/chaperone-bio/chaperone/internal/standin"
)

// atom is one atom the stand-in places: a CA per residue, one atom per ligand.
type atom struct {
	chain, resName, element, name string
	resSeq                        int
}

func atoms(q query) []atom {
	var out []atom
	smiles := map[string]string{}
	for _, c := range q.Chains {
		if c.SMILES != nil {
			smiles[*c.SMILES] = ""
		}
	}
	keys := make([]string, 0, len(smiles))
	for s := range smiles {
		keys = append(keys, s)
	}
	sort.Strings(keys)
	for i, s := range keys {
		smiles[s] = fmt.Sprintf("LIG%d", i)
	}
	for _, c := range q.Chains {
		for _, id := range c.ChainIDs {
			switch strings.ToUpper(c.MoleculeType) {
			case "LIGAND":
				res := "UNL"
				if c.SMILES != nil {
					res = smiles[*c.SMILES]
				} else if len(c.CCDCodes) > 0 {
					res = c.CCDCodes[0]
				}
				out = append(out, atom{chain: id, resName: res, element: "C", name: "C1", resSeq: 1})
			default:
				for i := 0; i < len(*c.Sequence); i++ {
					res := standin.ThreeLetter[(*c.Sequence)[i]]
					name := "CA"
					if m := strings.ToUpper(c.MoleculeType); m != "PROTEIN" {
						res, name = string((*c.Sequence)[i]), "P"
						if m == "DNA" {
							res = "D" + res
						}
					}
					if nc, ok := c.NonCanonicalResidues[strconv.Itoa(i+1)]; ok {
						res = nc
					}
					if res == "" {
						res = "UNK"
					}
					out = append(out, atom{chain: id, resName: res, element: name[:1], name: name, resSeq: i + 1})
				}
			}
		}
	}
	return out
}

// writeQuery writes one query's samples for one seed, as OF3OutputWriter does.
func writeQuery(out, name string, seed int, q query, samples int, format string) {
	dir := filepath.Join(out, name, fmt.Sprintf("seed_%d", seed))
	_ = os.MkdirAll(dir, 0o755)
	as := atoms(q)
	var chains []string
	for _, a := range as {
		if !slices.Contains(chains, a.chain) {
			chains = append(chains, a.chain)
		}
	}
	for k := 1; k <= samples; k++ {
		sampleName := strconv.Itoa(k)
		prefix := filepath.Join(dir, fmt.Sprintf("%s_seed_%d_sample_%d", name, seed, k))
		plddt := make([]float64, len(as))
		for i := range as {
			plddt[i] = math.Round(score(30, 95, name, sampleName, strconv.Itoa(i))*100) / 100
		}
		writeStructure(prefix+"_model."+format, format, name, as, plddt, k)
		n := len(as)
		pde := make([][]float64, n)
		for i := range pde {
			pde[i] = make([]float64, n)
			for j := range pde[i] {
				pde[i][j] = math.Abs(float64(i-j)) / 4
			}
		}
		writeJSON(prefix+"_confidences.json", map[string]any{"plddt": plddt, "pde": pde})
		mean := 0.0
		for _, v := range plddt {
			mean += v
		}
		agg := map[string]any{"avg_plddt": mean / float64(max(n, 1)), "gpde": score(0.5, 3, name, sampleName, "gpde")}
		{ // the PAE head's scores, on by default since 0.4
			// Later samples score better, so that generation order is not rank order.
			ptm := score(0.3, 0.5, name, sampleName, "ptm") + 0.08*float64(k)
			iptm := score(0.2, 0.45, name, sampleName, "iptm") + 0.08*float64(k)
			chainPTM := map[string]float64{}
			pairs := map[string]float64{}
			for _, a := range chains {
				chainPTM[a] = score(0.3, 0.95, name, sampleName, a)
				for _, b := range chains {
					pairs[fmt.Sprintf("(%s, %s)", a, b)] = score(0.2, 0.9, name, sampleName, a, b)
				}
			}
			agg["ptm"], agg["iptm"] = ptm, iptm
			agg["disorder"], agg["has_clash"] = 0.0, 0.0
			agg["sample_ranking_score"] = 0.8*iptm + 0.2*ptm
			agg["chain_ptm"], agg["chain_pair_iptm"], agg["bespoke_iptm"] = chainPTM, pairs, pairs
		}
		writeJSON(prefix+"_confidences_aggregated.json", agg)
	}
}

// writeStructure writes made-up coordinates as mmCIF or PDB, pLDDT in the B-factor.
func writeStructure(path, format, name string, as []atom, plddt []float64, sample int) {
	var b strings.Builder
	coord := func(i int) (float64, float64, float64) {
		return 3.8 * float64(i), float64(sample), 0
	}
	if format == "pdb" {
		for i, a := range as {
			x, y, z := coord(i)
			fmt.Fprintf(&b, "ATOM  %5d  %-3s %3s %1s%4d    %8.3f%8.3f%8.3f%6.2f%6.2f          %2s\n",
				i+1, a.name, a.resName, a.chain, a.resSeq, x, y, z, 1.0, plddt[i], a.element)
		}
		b.WriteString("END\n")
	} else {
		b.WriteString(standin.AtomSiteLoop(name, "group_PDB", "id", "type_symbol", "label_atom_id", "label_comp_id",
			"label_asym_id", "label_seq_id", "auth_asym_id", "Cartn_x", "Cartn_y", "Cartn_z", "occupancy", "B_iso_or_equiv"))
		for i, a := range as {
			x, y, z := coord(i)
			fmt.Fprintf(&b, "ATOM %d %s %s %s %s %d %s %.3f %.3f %.3f 1.00 %.2f\n", i+1, a.element, a.name, a.resName, a.chain, a.resSeq, a.chain, x, y, z, plddt[i])
		}
		b.WriteString("#\n")
	}
	_ = os.WriteFile(path, []byte(b.String()), 0o644)
}
