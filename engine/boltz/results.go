package boltz

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/toolkit"
	"github.com/chaperone-bio/chaperone/engine/toolkit/npy"
	"github.com/chaperone-bio/chaperone/job"
)

// confidence is Boltz's confidence_<target>_model_<rank>.json (BoltzWriter): the summary
// scores of one sample, nil where Boltz wrote none or NaN (toolkit.ReadPythonJSON).
// chains_ptm and pair_chains_iptm stay in the file.
type confidence struct {
	ConfidenceScore *float64 `json:"confidence_score"`
	PTM             *float64 `json:"ptm"`
	IPTM            *float64 `json:"iptm"`
	ComplexPLDDT    *float64 `json:"complex_plddt"`
	ComplexIPLDDT   *float64 `json:"complex_iplddt"`
	ComplexPDE      *float64 `json:"complex_pde"`
	ComplexIPDE     *float64 `json:"complex_ipde"`
}

// affinity is Boltz's affinity_<target>.json (BoltzAffinityWriter); the last four come
// from the two models of the ensemble.
type affinity struct {
	PredValue          *float64 `json:"affinity_pred_value"`
	ProbabilityBinary  *float64 `json:"affinity_probability_binary"`
	PredValue1         *float64 `json:"affinity_pred_value1"`
	ProbabilityBinary1 *float64 `json:"affinity_probability_binary1"`
	PredValue2         *float64 `json:"affinity_pred_value2"`
	ProbabilityBinary2 *float64 `json:"affinity_probability_binary2"`
}

// outcome is what a run left behind, for reading the targets' results.
type outcome struct {
	dir     string // <out_dir>/boltz_results_<input folder>
	ext     string // structure file extension: cif or pdb
	samples int
	// writePAE asks for the best sample's PAE and PDE as <target>_pae.npz, and with it
	// Boltz's own arrays of every sample.
	writePAE bool
	mon      *monitor
	recursed map[string]bool // targets Boltz retried without end, so runs went on without them
	crash    error           // boltz exited unsuccessfully
	wall     time.Duration   // how long boltz ran
}

// result is one target's row and files, and when its loops finished, for runtime_s.
type result struct {
	toolkit.Target
	ended [numPhases]time.Time // zero where the target has no result of the loop
}

// read reads what Boltz wrote for one target. A target without all its samples, or
// without the affinity it asked for, gets a failed row whose error says why in Boltz's own
// words where Boltz gave any; the files it did get are kept.
func (o *outcome) read(t *target) *result {
	name := t.cx.Name
	dir := filepath.Join(o.dir, "predictions", name)
	r := &result{Target: toolkit.Target{Row: job.PredictionRow{ID: name, Status: job.RowOK,
		NChains: t.cx.NumChains(), NResidues: t.cx.NumResidues(), MSA: t.msa}}}
	fail := func(format string, args ...any) *result {
		r.Row.Status, r.Row.Error = job.RowFailed, fmt.Sprintf(format, args...)
		return r
	}
	var best confidence
	for k := range o.samples {
		structure := filepath.Join(dir, fmt.Sprintf("%s_model_%d.%s", name, k, o.ext))
		confPath := filepath.Join(dir, fmt.Sprintf("confidence_%s_model_%d.json", name, k))
		_, sErr := os.Stat(structure)
		var conf confidence
		cErr := toolkit.ReadPythonJSON(confPath, &conf)
		if sErr != nil || cErr != nil {
			if k == 0 {
				return fail("%s", o.missing(name))
			}
			return fail("Boltz wrote %d of the %d samples asked for; %s", k, o.samples, o.missing(name))
		}
		if k == 0 {
			best = conf
		}
		path := name + "." + o.ext
		if k > 0 {
			path = fmt.Sprintf("%s_sample_%d.%s", name, k, o.ext)
		}
		r.Files = append(r.Files, toolkit.Artifact(path, name, job.ArtifactStructure, structure))
		r.Files = append(r.Files, toolkit.Artifact(name+"/"+filepath.Base(confPath), name, job.ArtifactConfidence, confPath))
		if o.writePAE {
			r.Files = append(r.Files, fullArrays(dir, name, k)...)
		}
		r.Row.Samples = k + 1
	}
	if o.writePAE {
		if err := r.paeMatrix(dir, name); err != nil {
			return fail("write_pae: %v", err)
		}
	}
	// The writer writes a target's files at the end of its batch; the last one written
	// marks when Boltz was done with it.
	for _, f := range r.Files {
		if info, err := os.Stat(f.Local); err == nil {
			r.ended[phaseStructure] = later(r.ended[phaseStructure], info.ModTime())
		}
	}
	if best.ComplexPLDDT == nil || best.PTM == nil {
		return fail("Boltz's confidence file of the best sample has no finite complex_plddt and ptm")
	}
	// Boltz's mean pLDDT over the complex is complex_plddt, on a 0..1 scale already.
	r.Row.Scores = &job.Scores{PLDDT: *best.ComplexPLDDT, PTM: *best.PTM, ComplexPLDDT: best.ComplexPLDDT,
		ConfidenceScore: best.ConfidenceScore, ComplexIPLDDT: best.ComplexIPLDDT,
		ComplexPDE: best.ComplexPDE, ComplexIPDE: best.ComplexIPDE}
	if t.cx.NumChains() > 1 { // one chain has no interface; Boltz writes 0 there
		r.Row.Scores.IPTM = best.IPTM
	}
	if t.cx.Affinity == nil {
		return r
	}
	affPath := filepath.Join(dir, "affinity_"+name+".json")
	var aff affinity
	info, err := os.Stat(affPath)
	if err == nil {
		err = toolkit.ReadPythonJSON(affPath, &aff)
	}
	if err != nil || aff.PredValue == nil || aff.ProbabilityBinary == nil {
		why := "its affinity loop wrote no result for it"
		msg, unprepared := o.mon.unprepared[phaseAffinity][name]
		switch {
		case unprepared:
			why = "Boltz could not prepare it for the affinity model and skipped it: " + msg + o.recursion(name)
		case o.mon.oom[phaseAffinity] > 0:
			why = fmt.Sprintf("it ran out of memory in the affinity loop (%q)", oomWarning)
		case o.crash != nil:
			why = "it exited before the affinity loop finished (" + firstLine(o.crash) + ")"
		}
		return fail("Boltz predicted the structure but no affinity: %s; the structure files are kept", why)
	}
	r.ended[phaseAffinity] = info.ModTime()
	r.Row.Affinity = &job.Affinity{PredValue: *aff.PredValue, ProbabilityBinary: *aff.ProbabilityBinary,
		PredValue1: aff.PredValue1, ProbabilityBinary1: aff.ProbabilityBinary1,
		PredValue2: aff.PredValue2, ProbabilityBinary2: aff.ProbabilityBinary2}
	r.Files = append(r.Files, toolkit.Artifact(name+"/affinity_"+name+".json", name, job.ArtifactAffinity, affPath))
	return r
}

// missing says, in Boltz's words where it gave any, why a target has no structure.
func (o *outcome) missing(name string) string {
	if msg, ok := o.mon.skipped[name]; ok {
		return "Boltz could not process the input and skipped it: " + msg
	}
	if msg, ok := o.mon.unprepared[phaseStructure][name]; ok {
		return "Boltz could not prepare it for the model and skipped it: " + msg + o.recursion(name)
	}
	_, recErr := os.Stat(filepath.Join(o.dir, "processed", "records", name+".json"))
	switch {
	case recErr == nil && o.crash == nil && o.mon.oom[phaseStructure] > 0:
		// The structure loop catches only out-of-memory errors and skips the batch
		// (boltz2.py, predict_step); every other error ends the run.
		return fmt.Sprintf("Boltz ran out of memory predicting it (%q); fewer residues or diffusion_samples, or a GPU with more memory, would fit", oomWarning)
	case o.crash != nil:
		return "boltz exited before it finished this target (" + firstLine(o.crash) + "); the run log has its output"
	case recErr != nil:
		return "Boltz did not process the input and gave no reason; the run log has its output"
	}
	return "Boltz wrote no structure for it and gave no reason; the run log has its output"
}

// recursion adds, for a target Boltz retried without end, what the engine did about it.
func (o *outcome) recursion(name string) string {
	if !o.recursed[name] {
		return ""
	}
	return " (as the first target of its loop, which Boltz then retries without end; boltz was stopped and run again without it)"
}

// runtimes sets every row's runtime_s: the target's own time in each prediction loop,
// measured between the moments Boltz finished writing the results of consecutive targets
// (the modification times of their files) from the loop's first progress line, plus an
// equal share of the rest of the run (start-up, input processing, weight loading). The
// rows of a run add up to the tool's wall time. An affinity row splits its runtime_s in
// two: its own time in the affinity loop, and the rest (the structure's).
func (o *outcome) runtimes(results []*result) {
	own := make([][numPhases]float64, len(results))
	attributed := 0.0
	for phase := phaseStructure; phase < numPhases; phase++ {
		start := o.mon.loopStart[phase]
		if start.IsZero() {
			continue
		}
		idx := make([]int, 0, len(results))
		for i, r := range results {
			if !r.ended[phase].IsZero() {
				idx = append(idx, i)
			}
		}
		sort.Slice(idx, func(a, b int) bool { return results[idx[a]].ended[phase].Before(results[idx[b]].ended[phase]) })
		prev := start
		for _, i := range idx {
			d := max(results[i].ended[phase].Sub(prev).Seconds(), 0)
			own[i][phase] += d
			attributed += d
			prev = later(prev, results[i].ended[phase])
		}
	}
	share := max(o.wall.Seconds()-attributed, 0) / float64(max(len(results), 1))
	ms := func(s float64) float64 { return math.Round(s*1000) / 1000 }
	for i, r := range results {
		total := share
		for _, d := range own[i] {
			total += d
		}
		r.Row.RuntimeS = ms(total)
		if a := r.Row.Affinity; a != nil {
			affinity := ms(own[i][phaseAffinity])
			structure := ms(r.Row.RuntimeS - affinity)
			a.StructureRuntimeS, a.RuntimeS = &structure, &affinity
		}
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return strings.TrimSuffix(s, "; last output:")
}

// paeMatrix adds the best sample's PAE (and PDE, where Boltz wrote it) as <target>_pae.npz.
func (r *result) paeMatrix(dir, name string) error {
	arrays := map[string]*npy.Array{}
	for _, key := range []string{"pae", "pde"} {
		file := fmt.Sprintf("%s_%s_model_0.npz", key, name)
		m, err := npy.ReadNPZ(filepath.Join(dir, file))
		if err != nil {
			if key == "pae" {
				return fmt.Errorf("boltz wrote no readable PAE matrix (%s)", file)
			}
			continue
		}
		arrays[key] = m[key]
	}
	f, err := toolkit.PAEMatrix(dir, name, arrays)
	if err != nil {
		return err
	}
	r.Files = append(r.Files, f)
	return nil
}

// fullArrays are Boltz's arrays of sample k: its PAE, PDE and pLDDT, token by token. Boltz-2
// writes them whatever --write_full_pae and --write_full_pde say (the writer saves what
// the model returns, boltz/data/write/writer.py:223-247 in 2.2.1, and the model returns all
// three whenever it predicts confidence), so they come with the job only when it asked
// for write_pae: a PAE of 2,000 tokens is 16 MB a sample, and the pLDDT is in the
// structure's B-factors already.
func fullArrays(dir, name string, k int) []engine.File {
	var files []engine.File
	for _, npz := range []struct{ prefix, typ string }{{"pae", job.ArtifactPAE}, {"pde", job.ArtifactConfidence}, {"plddt", job.ArtifactConfidence}} {
		p := filepath.Join(dir, fmt.Sprintf("%s_%s_model_%d.npz", npz.prefix, name, k))
		if _, err := os.Stat(p); err == nil {
			files = append(files, toolkit.Artifact(name+"/"+filepath.Base(p), name, npz.typ, p))
		}
	}
	return files
}
