package pydriver

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/chaperone-bio/chaperone/bio"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/toolkit"
	"github.com/chaperone-bio/chaperone/engine/toolkit/npy"
	"github.com/chaperone-bio/chaperone/job"
)

// foldSeed is ESMFold2's seed (decisions: Prediction rows and files), for a job stored before
// the catalog filled in its seed param; a seed is always passed, so that a rerun gives the
// same structures.
const foldSeed = 42

// foldChain is one chain of a fold request (driver.py).
type foldChain struct {
	ID            string             `json:"id"`
	Sequence      string             `json:"sequence"`
	A3M           string             `json:"a3m,omitempty"`
	Modifications []foldModification `json:"modifications,omitempty"`
}

type foldModification struct {
	Position int    `json:"position"` // 0-based, as ESMFold2's Modification takes it
	CCD      string `json:"ccd"`
}

type foldTarget struct {
	ID     string      `json:"id"`
	Chains []foldChain `json:"chains"`
}

type foldRequest struct {
	Op               string         `json:"op"`
	Model            map[string]any `json:"model"`
	Targets          []foldTarget   `json:"targets"`
	NumLoops         int            `json:"num_loops"`
	NumSamplingSteps int            `json:"num_sampling_steps"`
	Samples          int            `json:"num_diffusion_samples"`
	Seed             int            `json:"seed"`
	Format           string         `json:"format"`
	OutDir           string         `json:"out_dir"`
}

// sample is one structure the driver folded, with its PAE.
type sample struct {
	file          string
	ptm, plddt    float64
	iptm          *float64
	tokens        int
	pae           []float32
	originalIndex int
}

// CheckInput refuses at submit an alignment in Boltz's CSV, since ESMFold2 reads A3M.
func (e *Engine) CheckInput(model string, cx *bio.Complex, params map[string]any) error {
	if m, ok := e.model(model); !ok || m.loader != "esmfold2" {
		return nil
	}
	p, err := toolkit.NewPredictParams(params)
	if err != nil {
		return err
	}
	for _, en := range cx.Entities {
		if en.MSA.Source == bio.MSAInline && en.MSA.Format != bio.A3M {
			return bio.Errorf(en.Pos, "chain %s: %s reads alignments in A3M; send this one as A3M", en.IDs[0], model)
		}
		// esm's PDB writer keeps standard residues only (molecular_complex.py
		// to_protein_complex): the structure would silently lose the modified ones.
		if len(en.Modifications) > 0 && p.OutputFormat == "pdb" {
			return bio.Errorf(en.Pos, "chain %s has a modified residue (%s), which %s cannot write as PDB: esm's PDB writer keeps standard residues only; ask for output_format cif",
				en.IDs[0], en.Modifications[0].CCD, model)
		}
	}
	return nil
}

var _ engine.InputRules = (*Engine)(nil)

// fold runs an ESMFold2 prediction job: every target in one request, each target's
// samples ranked by pTM.
func (e *Engine) fold(ctx context.Context, run *engine.Run, ch channel, m model) (*engine.Output, error) {
	p, err := toolkit.NewPredictParams(run.Job.Params)
	if err != nil {
		return nil, err
	}
	complexes, err := bio.Complexes(run.Job.Input)
	if err != nil {
		return nil, err
	}
	raw := filepath.Join(run.WorkDir, "raw")
	if err := os.MkdirAll(raw, 0o755); err != nil {
		return nil, err
	}
	req := foldRequest{Op: "fold", Model: m.spec(p.Fast, run.Tools), NumLoops: m.loops, NumSamplingSteps: m.steps,
		Samples: p.DiffusionSamples, Seed: p.SeedOr(foldSeed), Format: p.OutputFormat, OutDir: raw}
	if p.RecyclingSteps != nil {
		req.NumLoops = *p.RecyclingSteps
	}
	if p.SamplingSteps != nil {
		req.NumSamplingSteps = *p.SamplingSteps
	}
	rows := make([]job.PredictionRow, len(complexes))
	for i, cx := range complexes {
		found, err := searchedAlignments(cx, p.UseMSAServer, run.Alignments)
		if err != nil {
			return nil, err
		}
		t, err := foldInput(cx, raw, found, run.Log)
		if err != nil {
			return nil, err
		}
		req.Targets = append(req.Targets, t)
		rows[i] = job.PredictionRow{ID: cx.Name, NChains: len(t.Chains)}
		for _, c := range t.Chains {
			rows[i].NResidues += len(c.Sequence)
			rows[i].MSA = rows[i].MSA || c.A3M != ""
		}
	}
	index := map[string]int{}
	for i, t := range req.Targets {
		index[t.ID] = i
	}
	samples := make([][]sample, len(complexes))
	failures := make([]string, len(complexes))
	started := time.Now()
	run.Report(job.Progress{Stage: job.StageFolding, Total: len(complexes)})
	_, err = exchange(ctx, run, ch, req, func(ev *event) error {
		i, ok := index[ev.Target]
		if !ok && ev.Event != "progress" {
			return fmt.Errorf("the driver sent a %s event of an unknown target %q", ev.Event, ev.Target)
		}
		switch ev.Event {
		case "progress":
			if ev.Done < 1 || ev.Done > len(rows) {
				return fmt.Errorf("the driver reported %d of %d targets done", ev.Done, len(rows))
			}
			rows[ev.Done-1].RuntimeS = time.Since(started).Seconds()
			started = time.Now()
			run.Report(job.Progress{Stage: job.StageFolding, Done: ev.Done, Total: len(complexes)})
		case "target_failed":
			failures[i] = ev.Message
			if ev.OOM {
				failures[i] = "out of memory: " + ev.Message
			}
		case "structure":
			s, err := structureOf(ev, raw)
			if err != nil {
				return err
			}
			samples[i] = append(samples[i], s)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	targets := make([]toolkit.Target, len(complexes))
	for i := range complexes {
		targets[i], err = foldResults(run.WorkDir, rows[i], samples[i], failures[i], p.OutputFormat, p.WritePAE)
		if err != nil {
			return nil, err
		}
	}
	return toolkit.Predictions(m.id, targets, nil)
}

// foldInput turns a target into the driver's chains, one per copy, with each alignment
// written to an A3M file under raw: the one sent with the job, or the one the alignment
// stage searched (nil when the job does not use the MSA server). The log says where each
// chain's alignment came from.
func foldInput(cx *bio.Complex, raw string, found *searched, log io.Writer) (foldTarget, error) {
	t := foldTarget{ID: cx.Name}
	for _, en := range cx.Entities {
		if en.Kind != bio.Protein {
			return t, fmt.Errorf("target %s: ESMFold2 here folds proteins only, and chain %s is %s", cx.Name, en.IDs[0], en.Kind)
		}
		var text, from string
		aligned := true
		switch {
		case en.MSA.Source == bio.MSAInline:
			text, from = en.MSA.Text, "the one sent with the job"
		case en.MSA.Source == bio.MSANone:
			aligned, from = false, "none (msa: empty), folded single-sequence"
		case found == nil:
			aligned, from = false, "none (use_msa_server is off), folded single-sequence"
		default:
			a := found.a3m[en.Sequence]
			text = a.text
			from = fmt.Sprintf("searched by the alignment stage (%s): the query, %d rows paired with the target's other chains and %d unpaired",
				found.source, a.paired, a.others)
		}
		fmt.Fprintf(log, "== chaperone: alignment of %s chain %s: %s ==\n", cx.Name, strings.Join(en.IDs, ","), from)
		var a3m string
		if aligned {
			a3m = filepath.Join(raw, cx.Name+"_"+en.IDs[0]+".a3m")
			if err := os.WriteFile(a3m, []byte(text), 0o644); err != nil {
				return t, err
			}
		}
		var mods []foldModification
		for _, mod := range en.Modifications {
			mods = append(mods, foldModification{Position: mod.Position - 1, CCD: mod.CCD})
		}
		for _, id := range en.IDs {
			t.Chains = append(t.Chains, foldChain{ID: id, Sequence: en.Sequence, A3M: a3m, Modifications: mods})
		}
	}
	return t, nil
}

// structureOf checks one structure event: its file is in raw, its scores are there and its
// PAE is square.
func structureOf(ev *event, raw string) (sample, error) {
	if filepath.Dir(ev.File) != raw {
		return sample{}, fmt.Errorf("the driver wrote a structure of %s outside the run's folder", ev.Target)
	}
	if ev.PTM == nil || ev.PLDDT == nil {
		return sample{}, fmt.Errorf("the driver gave sample %d of %s no pTM or pLDDT", ev.Sample, ev.Target)
	}
	pae, err := ev.floats(0, ev.Tokens*ev.Tokens)
	if err != nil {
		return sample{}, err
	}
	return sample{file: ev.File, ptm: *ev.PTM, plddt: *ev.PLDDT, iptm: ev.IPTM, tokens: ev.Tokens, pae: pae,
		originalIndex: ev.Sample}, nil
}

// foldResults ranks a target's samples by pTM and lays out its files: the best as
// <target>.<ext>, the others as <target>_sample_<k>.<ext>, the best one's PAE as
// <target>/pae.npz (and as <target>_pae.npz too when write_pae asks for it) and every
// sample's scores, in rank order, as <target>/confidence.json.
func foldResults(dir string, row job.PredictionRow, samples []sample, failure, ext string, writePAE bool) (toolkit.Target, error) {
	if len(samples) == 0 {
		if failure == "" {
			failure = "the model gave no structure"
		}
		row.Status, row.Error = job.RowFailed, failure
		return toolkit.Target{Row: row}, nil
	}
	slices.SortStableFunc(samples, func(a, b sample) int { return cmp.Compare(b.ptm, a.ptm) })
	t := toolkit.Target{Row: row}
	var scores []map[string]any
	for k, s := range samples {
		name := row.ID + "." + ext
		if k > 0 {
			name = row.ID + "_sample_" + strconv.Itoa(k) + "." + ext
		}
		if err := os.Rename(s.file, filepath.Join(dir, name)); err != nil {
			return t, fmt.Errorf("target %s: %w", row.ID, err)
		}
		t.Files = append(t.Files, toolkit.Artifact(name, row.ID, job.ArtifactStructure, filepath.Join(dir, name)))
		scores = append(scores, map[string]any{"file": name, "sample": s.originalIndex, "ptm": s.ptm, "iptm": s.iptm, "plddt": s.plddt})
	}
	best := samples[0]
	if err := os.MkdirAll(filepath.Join(dir, row.ID), 0o755); err != nil {
		return t, err
	}
	pae := filepath.Join(dir, row.ID, "pae.npz")
	if err := npy.WriteNPZ(pae, map[string]*npy.Array{"pae": {Shape: []int{best.tokens, best.tokens}, Data: best.pae}}); err != nil {
		return t, err
	}
	conf := filepath.Join(dir, row.ID, "confidence.json")
	b, err := json.MarshalIndent(scores, "", "  ")
	if err == nil {
		err = os.WriteFile(conf, b, 0o644)
	}
	if err != nil {
		return t, err
	}
	t.Files = append(t.Files,
		toolkit.Artifact(row.ID+"/pae.npz", row.ID, job.ArtifactPAE, pae),
		toolkit.Artifact(row.ID+"/confidence.json", row.ID, job.ArtifactConfidence, conf))
	if writePAE {
		f, err := toolkit.PAEMatrix(dir, row.ID, map[string]*npy.Array{"pae": {Shape: []int{best.tokens, best.tokens}, Data: best.pae}})
		if err != nil {
			return t, err
		}
		t.Files = append(t.Files, f)
	}
	ptm := best.ptm
	t.Row.Status, t.Row.Samples = job.RowOK, len(samples)
	t.Row.Scores = &job.Scores{PLDDT: best.plddt, PTM: best.ptm, ConfidenceScore: &ptm}
	if row.NChains > 1 {
		t.Row.Scores.IPTM = best.iptm
	}
	return t, nil
}
