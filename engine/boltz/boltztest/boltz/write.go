package main

// What the stand-in writes: Boltz's output files for a predicted record.

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/chaperone-bio/chaperone/engine/toolkit/npy"
	"github.com/chaperone-bio/chaperone/internal/standin"
)

// write writes the predictions of one record as BoltzWriter does: every sample ranked by
// confidence_score, best first, with its structure, confidence summary and npz arrays.
func (p *predictor) write(rec record) {
	time.Sleep(20 * time.Millisecond) // a target takes time, which the engine measures
	dir := filepath.Join(p.out, "predictions", rec.ID)
	must(os.MkdirAll(dir, 0o755))
	n := p.int("--diffusion_samples")
	tokens := 0
	for _, c := range rec.Chains {
		tokens += c.Residues
	}
	type sample struct{ plddt, ptm, iptm, score float64 }
	samples := make([]sample, n)
	scores := make([]float64, n)
	for k := range samples {
		s := standin.Random(fmt.Sprintf("%s/%d", rec.ID, k))
		sm := sample{plddt: standin.Round(0.55 + 0.4*s(0)), ptm: standin.Round(0.5 + 0.45*s(1))}
		if len(rec.Chains) > 1 {
			sm.iptm = standin.Round(0.3 + 0.6*s(2))
		}
		// confidence_score as Boltz2.predict_step computes it.
		second := sm.iptm
		if second == 0 {
			second = sm.ptm
		}
		sm.score = standin.Round((4*sm.plddt + second) / 5)
		samples[k], scores[k] = sm, sm.score
	}
	for rank, k := range standin.Ranked(scores) {
		sm := samples[k]
		base := fmt.Sprintf("%s_model_%d", rec.ID, rank)
		if p.opts["--output_format"] == "pdb" {
			writeFile(filepath.Join(dir, base+".pdb"), pdb(rec, sm.plddt))
		} else {
			writeFile(filepath.Join(dir, base+".cif"), mmcif(rec, sm.plddt))
		}
		chainsPTM := make([]kv, len(rec.Chains))
		pairs := make([]kv, len(rec.Chains))
		for i := range rec.Chains {
			chainsPTM[i] = kv{strconv.Itoa(i), sm.ptm}
			row := make([]kv, len(rec.Chains))
			for j := range rec.Chains {
				v := sm.iptm
				if i == j {
					v = sm.ptm
				}
				row[j] = kv{strconv.Itoa(j), v}
			}
			pairs[i] = kv{strconv.Itoa(i), row}
		}
		writeOrdered(filepath.Join(dir, "confidence_"+base+".json"), []kv{
			{"confidence_score", sm.score}, {"ptm", sm.ptm}, {"iptm", sm.iptm}, {"ligand_iptm", 0.0},
			{"protein_iptm", sm.iptm}, {"complex_plddt", sm.plddt}, {"complex_iplddt", sm.plddt},
			{"complex_pde", 0.8}, {"complex_ipde", 1.6}, {"chains_ptm", chainsPTM}, {"pair_chains_iptm", pairs},
		})
		writeNPZ(filepath.Join(dir, "plddt_"+base+".npz"), "plddt", []int{tokens}, float32(sm.plddt))
		writeNPZ(filepath.Join(dir, "pae_"+base+".npz"), "pae", []int{tokens, tokens}, 4)
		writeNPZ(filepath.Join(dir, "pde_"+base+".npz"), "pde", []int{tokens, tokens}, 2)
		if rec.Affinity && rank == 0 {
			writeNPZ(filepath.Join(dir, "pre_affinity_"+rec.ID+".npz"), "coords", []int{tokens, 3}, 0)
		}
	}
}

// kv is a key of a JSON object that keeps its order, as Python's dicts do.
type kv struct {
	key   string
	value any
}

// writeOrdered writes an object as json.dumps(..., indent=4) does.
func writeOrdered(path string, obj []kv) {
	var b bytes.Buffer
	writeValue(&b, obj, 0)
	writeFile(path, b.String())
}

func writeValue(b *bytes.Buffer, v any, indent int) {
	switch x := v.(type) {
	case []kv:
		b.WriteString("{\n")
		for i, e := range x {
			fmt.Fprintf(b, "%s%q: ", strings.Repeat(" ", indent+4), e.key)
			writeValue(b, e.value, indent+4)
			if i < len(x)-1 {
				b.WriteString(",")
			}
			b.WriteString("\n")
		}
		b.WriteString(strings.Repeat(" ", indent) + "}")
	case float64:
		s := strconv.FormatFloat(x, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		b.WriteString(s)
	}
}

func mmcif(rec record, plddt float64) string {
	var b strings.Builder
	b.WriteString(standin.AtomSiteLoop(rec.ID, "group_PDB", "id", "type_symbol", "label_atom_id", "label_comp_id",
		"label_asym_id", "label_seq_id", "Cartn_x", "Cartn_y", "Cartn_z", "B_iso_or_equiv"))
	atom := 0
	for _, c := range rec.Chains {
		for r := range c.Residues {
			atom++
			fmt.Fprintf(&b, "ATOM %d C CA ALA %s %d %.3f %.3f %.3f %.2f\n", atom, c.Name, r+1, 3.8*float64(atom), 0.0, 0.0, plddt*100)
		}
	}
	b.WriteString("#\n")
	return b.String()
}

func pdb(rec record, plddt float64) string {
	var b strings.Builder
	atom := 0
	for _, c := range rec.Chains {
		for r := range c.Residues {
			atom++
			fmt.Fprintf(&b, "%-6s%5d  CA  ALA %1s%4d    %8.3f%8.3f%8.3f%6.2f%6.2f           C\n", "ATOM", atom, c.Name, r+1,
				3.8*float64(atom), 0.0, 0.0, 1.0, plddt*100)
		}
	}
	b.WriteString("END\n")
	return b.String()
}

// writeNPZ writes a compressed .npz holding one float32 array filled with fill, as
// np.savez_compressed does.
func writeNPZ(path, key string, shape []int, fill float32) {
	a := &npy.Array{Shape: shape}
	data := make([]float32, a.Len())
	for i := range data {
		data[i] = fill
	}
	a.Data = data
	must(npy.WriteNPZ(path, map[string]*npy.Array{key: a}))
}

// writeJSON and writeFile write what Boltz writes; the stand-in cannot go on without it.
func writeJSON(path string, v any) { must(standin.WriteJSON(path, v)) }

func writeFile(path, content string) { must(os.WriteFile(path, []byte(content), 0o644)) }

func must(err error) {
	if err != nil {
		panic(err)
	}
}
