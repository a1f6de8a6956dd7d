package main

// What the stand-in writes: the tools' output files for a predicted task, as DataDumper
// (runner/dumper.py) writes them.

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/chaperone-bio/chaperone/internal/standin"
)

// summaryConfidence is <name>_summary_confidence_sample_<rank>.json, in the order of
// sample_confidence.py.
type summaryConfidence struct {
	PLDDT               float64     `json:"plddt"`
	GPDE                float64     `json:"gpde"`
	PTM                 float64     `json:"ptm"`
	IPTM                float64     `json:"iptm"`
	ChainGPDE           []float64   `json:"chain_gpde"`
	ChainPairGPDE       [][]float64 `json:"chain_pair_gpde"`
	ChainPTM            []float64   `json:"chain_ptm"`
	ChainIPTM           []float64   `json:"chain_iptm"`
	ChainPairIPTM       [][]float64 `json:"chain_pair_iptm"`
	ChainPairIPTMGlobal [][]float64 `json:"chain_pair_iptm_global"`
	ChainPLDDT          []float64   `json:"chain_plddt"`
	ChainPairPLDDT      [][]float64 `json:"chain_pair_plddt"`
	HasClash            float64     `json:"has_clash"`
	Disorder            float64     `json:"disorder"`
	RankingScore        float64     `json:"ranking_score"`
	NumRecycles         int         `json:"num_recycles"`
}

// fullData is <name>_full_data_sample_<rank>.json (get_clean_full_confidence).
type fullData struct {
	AtomPLDDT      []float64   `json:"atom_plddt"`
	TokenPairPDE   [][]float64 `json:"token_pair_pde"`
	ContactProbs   [][]float64 `json:"contact_probs"`
	TokenPairPAE   [][]float64 `json:"token_pair_pae"`
	TokenHasFrame  []bool      `json:"token_has_frame"`
	TokenAsymID    []int       `json:"token_asym_id"`
	AtomToTokenIdx []int       `json:"atom_to_token_idx"`
}

// dump writes a task's samples of one seed as DataDumper does: ranked by ranking_score
// within the seed, best first.
func (r *runner) dump(name string, seed int, chains []chain) error {
	dir := filepath.Join(r.out, name, fmt.Sprintf("seed_%d", seed), "predictions")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	n := r.int("--sample")
	samples := make([]summaryConfidence, n)
	scores := make([]float64, n)
	tokens := 0
	for _, c := range chains {
		tokens += c.residues
	}
	for k := range samples {
		s := standin.Random(fmt.Sprintf("%s/%d/%d", name, seed, k))
		sc := summaryConfidence{PLDDT: standin.Round(55 + 40*s(0)), GPDE: standin.Round(1 + s(1)), PTM: standin.Round(0.5 + 0.45*s(2)),
			NumRecycles: r.int("--cycle")}
		if len(chains) > 1 {
			sc.IPTM = standin.Round(0.3 + 0.6*s(3))
		}
		sc.RankingScore = standin.Round(0.8*sc.IPTM + 0.2*sc.PTM)
		for range chains {
			sc.ChainGPDE = append(sc.ChainGPDE, sc.GPDE)
			sc.ChainPTM = append(sc.ChainPTM, sc.PTM)
			sc.ChainIPTM = append(sc.ChainIPTM, sc.IPTM)
			sc.ChainPLDDT = append(sc.ChainPLDDT, sc.PLDDT)
			row := make([]float64, len(chains))
			for j := range row {
				row[j] = sc.IPTM
			}
			sc.ChainPairGPDE = append(sc.ChainPairGPDE, row)
			sc.ChainPairIPTM = append(sc.ChainPairIPTM, row)
			sc.ChainPairIPTMGlobal = append(sc.ChainPairIPTMGlobal, row)
			sc.ChainPairPLDDT = append(sc.ChainPairPLDDT, row)
		}
		samples[k], scores[k] = sc, sc.RankingScore
	}
	for rank, k := range standin.Ranked(scores) {
		sc := samples[k]
		if err := standin.WriteJSONIndent(filepath.Join(dir, fmt.Sprintf("%s_summary_confidence_sample_%d.json", name, rank)), sc); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s_sample_%d.cif", name, rank)), []byte(mmcif(name, chains, sc.PLDDT)), 0o644); err != nil {
			return err
		}
		if !r.flag("--need_atom_confidence") {
			continue
		}
		fd := fullData{}
		for ci, c := range chains {
			for range c.residues {
				fd.AtomPLDDT = append(fd.AtomPLDDT, sc.PLDDT)
				fd.TokenHasFrame = append(fd.TokenHasFrame, c.polymer)
				fd.TokenAsymID = append(fd.TokenAsymID, ci)
				fd.AtomToTokenIdx = append(fd.AtomToTokenIdx, len(fd.AtomToTokenIdx))
			}
		}
		for range tokens {
			row := make([]float64, tokens)
			for j := range row {
				row[j] = 4.25
			}
			fd.TokenPairPAE = append(fd.TokenPairPAE, row)
			fd.TokenPairPDE = append(fd.TokenPairPDE, row)
			fd.ContactProbs = append(fd.ContactProbs, row)
		}
		if err := standin.WriteJSON(filepath.Join(dir, fmt.Sprintf("%s_full_data_sample_%d.json", name, rank)), fd); err != nil {
			return err
		}
	}
	return nil
}

// mmcif writes a structure as biotite does for the tools: one atom per residue, label
// and author ids alike, no label_seq_id for a ligand, pLDDT as the B-factor.
func mmcif(name string, chains []chain, plddt float64) string {
	var b strings.Builder
	b.WriteString(standin.AtomSiteLoop(name, "group_PDB", "id", "type_symbol", "label_atom_id", "label_alt_id",
		"label_comp_id", "label_asym_id", "label_entity_id", "label_seq_id", "pdbx_PDB_ins_code", "Cartn_x", "Cartn_y",
		"Cartn_z", "occupancy", "B_iso_or_equiv", "auth_seq_id", "auth_asym_id", "pdbx_PDB_model_num"))
	atom := 0
	for ci, c := range chains {
		for i, res := range c.resNames {
			atom++
			group, seq, atomName, el := "HETATM", ".", "C1", "C"
			if c.polymer {
				group, seq, atomName = "ATOM", strconv.Itoa(i+1), "CA"
			}
			fmt.Fprintf(&b, "%s %d %s %s . %s %s %d %s ? %.3f %.3f %.3f 1.0 %.2f %d %s 1\n", group, atom, el, atomName,
				res, c.id, ci+1, seq, 3.8*float64(atom), 0.0, 0.0, plddt, i+1, c.id)
		}
	}
	b.WriteString("#\n")
	return b.String()
}
