package e2e

import (
	"archive/zip"
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/job"
)

// pictureEngine is a test engine for the web app's pages: it writes what the real design
// and embedding tools hand the page to draw (mmCIF files with atoms and pLDDT B-factors,
// npz files of pooled vectors), where the shell test engine writes placeholders. Its
// numbers are made up, derived from the job's input so that each run draws the same.
type pictureEngine struct{ models []string }

func (e pictureEngine) Name() string                              { return "picture" }
func (e pictureEngine) Models() []string                          { return e.models }
func (e pictureEngine) Check(context.Context, engine.Tools) error { return nil }

func (e pictureEngine) Run(ctx context.Context, run *engine.Run) (*engine.Output, error) {
	fmt.Fprintf(run.Log, "picture engine: %s job %s\n", run.Job.Kind, run.Job.ID)
	switch run.Job.Kind {
	case job.DesignKind:
		return e.design(run)
	case job.EmbedKind:
		return e.embed(run)
	}
	return nil, fmt.Errorf("picture engine: no %s", run.Job.Kind)
}

func (e pictureEngine) design(run *engine.Run) (*engine.Output, error) {
	out := &engine.Output{}
	n := 3
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("design_%d", i)
		local := filepath.Join(run.WorkDir, id+".cif")
		if err := os.WriteFile(local, []byte(helixCIF(id, 30+5*i, 95-10*float64(i))), 0o644); err != nil {
			return nil, err
		}
		rank := i
		out.Designs = append(out.Designs, job.Design{ID: id, Rank: &rank, Sequence: strings.Repeat("GSAEK", 6+i)[:30+5*i],
			File: id + ".cif", Metrics: map[string]any{"design_iptm": 0.9 - 0.1*float64(i), "design_ptm": 0.8 - 0.05*float64(i)}})
		out.Files = append(out.Files, engine.File{Artifact: job.Artifact{Path: id + ".cif", Target: id, Type: job.ArtifactStructure}, Local: local})
	}
	return out, nil
}

func (e pictureEngine) embed(run *engine.Run) (*engine.Output, error) {
	const dModel = 8
	emb := &job.Embedding{Model: run.Job.Model, Pool: "mean", Format: "npz", DModel: dModel}
	out := &engine.Output{Embedding: emb}
	for _, s := range run.Job.Input.Sequences {
		pooled := make([]float32, dModel)
		h := fnv.New64a()
		h.Write([]byte(s.Sequence))
		seed := h.Sum64()
		for j := range pooled {
			pooled[j] = float32(math.Sin(float64(seed%997) + float64(j)*1.7))
			seed /= 3
		}
		file := s.ID + ".npz"
		local := filepath.Join(run.WorkDir, file)
		if err := writePooledNPZ(local, pooled); err != nil {
			return nil, err
		}
		emb.Sequences = append(emb.Sequences, job.EmbeddedSequence{ID: s.ID, Length: len(s.Sequence), File: file})
		out.Files = append(out.Files, engine.File{Artifact: job.Artifact{Path: file, Target: s.ID, Type: job.ArtifactEmbedding}, Local: local})
	}
	return out, nil
}

// helixCIF is an mmCIF of n CA atoms on a helix along x, every B-factor plddt.
func helixCIF(id string, n int, plddt float64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "data_%s\n#\nloop_\n_atom_site.group_PDB\n_atom_site.id\n_atom_site.type_symbol\n_atom_site.label_atom_id\n"+
		"_atom_site.label_comp_id\n_atom_site.label_asym_id\n_atom_site.label_seq_id\n_atom_site.Cartn_x\n_atom_site.Cartn_y\n"+
		"_atom_site.Cartn_z\n_atom_site.B_iso_or_equiv\n", id)
	for i := range n {
		a := float64(i) * 100 * math.Pi / 180
		fmt.Fprintf(&b, "ATOM %d C CA ALA A %d %.3f %.3f %.3f %.2f\n", i+1, i+1, 1.5*float64(i), 2.3*math.Cos(a), 2.3*math.Sin(a), plddt)
	}
	b.WriteString("#\n")
	return b.String()
}

// writePooledNPZ writes an npz, deflated as np.savez_compressed does, with one float32
// array "pooled".
func writePooledNPZ(path string, v []float32) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	zw := zip.NewWriter(f)
	w, err := zw.Create("pooled.npy")
	if err == nil {
		header := fmt.Sprintf("{'descr': '<f4', 'fortran_order': False, 'shape': (%d,), }", len(v))
		header += strings.Repeat(" ", 63-(10+len(header))%64) + "\n"
		_, err = w.Write(append([]byte("\x93NUMPY\x01\x00"), byte(len(header)), byte(len(header)>>8)))
		if err == nil {
			_, err = w.Write([]byte(header))
		}
		if err == nil {
			err = binary.Write(w, binary.LittleEndian, v)
		}
	}
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
