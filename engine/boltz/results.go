package boltz

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/job"
)

// confidence is Boltz's confidence_<target>_model_<rank>.json (BoltzWriter): the summary
// scores of one sample. chains_ptm and pair_chains_iptm stay in the file.
type confidence struct {
	ConfidenceScore *float64 `json:"confidence_score"`
	PTM             *float64 `json:"ptm"`
	IPTM            *float64 `json:"iptm"`
	ComplexPLDDT    *float64 `json:"complex_plddt"`
	ComplexIPLDDT   *float64 `json:"complex_iplddt"`
	ComplexPDE      *float64 `json:"complex_pde"`
	ComplexIPDE     *float64 `json:"complex_ipde"`
}

// affinityKeys are the keys of Boltz's affinity_<target>.json (BoltzAffinityWriter); the
// last four come from the two models of the ensemble.
var affinityKeys = []string{"affinity_pred_value", "affinity_probability_binary", "affinity_pred_value1",
	"affinity_probability_binary1", "affinity_pred_value2", "affinity_probability_binary2"}

// outcome is what a run left behind, for reading the targets' results.
type outcome struct {
	dir     string // <out_dir>/boltz_results_<input folder>
	ext     string // structure file extension: cif or pdb
	samples int
	mon     *monitor
	crash   error         // boltz exited unsuccessfully
	wall    time.Duration // how long boltz ran
}

// result is one target's row and files, and when its loops finished, for runtime_s.
type result struct {
	row   map[string]any
	files []engine.File
	ended [numPhases]time.Time // zero where the target has no result of the loop
}

// read reads what Boltz wrote for one target. A target without all its samples, or
// without the affinity it asked for, gets a failed row whose error says why in Boltz's own
// words where Boltz gave any; the files it did get are kept.
func (o *outcome) read(t *target) *result {
	name := t.cx.Name
	dir := filepath.Join(o.dir, "predictions", name)
	r := &result{row: map[string]any{
		"id": name, "status": "ok", "n_chains": t.cx.NumChains(), "n_residues": t.cx.NumResidues(),
		"samples": 0, "msa": t.msa,
	}}
	fail := func(format string, args ...any) *result {
		r.row["status"], r.row["error"] = "failed", fmt.Sprintf(format, args...)
		return r
	}
	var best confidence
	for k := range o.samples {
		structure := filepath.Join(dir, fmt.Sprintf("%s_model_%d.%s", name, k, o.ext))
		confPath := filepath.Join(dir, fmt.Sprintf("confidence_%s_model_%d.json", name, k))
		_, sErr := os.Stat(structure)
		var conf confidence
		cErr := readJSON(confPath, &conf)
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
		r.files = append(r.files, file(path, name, job.ArtifactStructure, structure))
		r.files = append(r.files, file(name+"/"+filepath.Base(confPath), name, job.ArtifactConfidence, confPath))
		for prefix, typ := range map[string]string{"pae": job.ArtifactPAE, "pde": job.ArtifactConfidence, "plddt": job.ArtifactConfidence} {
			p := filepath.Join(dir, fmt.Sprintf("%s_%s_model_%d.npz", prefix, name, k))
			if _, err := os.Stat(p); err == nil {
				r.files = append(r.files, file(name+"/"+filepath.Base(p), name, typ, p))
			}
		}
		r.row["samples"] = k + 1
	}
	// The writer writes a target's files at the end of its batch; the last one written
	// marks when Boltz was done with it.
	for _, f := range r.files {
		if info, err := os.Stat(f.Local); err == nil {
			r.ended[phaseStructure] = later(r.ended[phaseStructure], info.ModTime())
		}
	}
	if !finite(best.ComplexPLDDT) || !finite(best.PTM) {
		return fail("Boltz's confidence file of the best sample has no finite complex_plddt and ptm")
	}
	// Boltz's mean pLDDT over the complex is complex_plddt, on a 0..1 scale already.
	r.row["plddt"], r.row["ptm"], r.row["complex_plddt"] = *best.ComplexPLDDT, *best.PTM, *best.ComplexPLDDT
	r.row["iptm"] = nil // no interface in one chain; Boltz writes 0 there
	if t.cx.NumChains() > 1 {
		r.row["iptm"] = value(best.IPTM)
	}
	for key, v := range map[string]*float64{"confidence_score": best.ConfidenceScore, "complex_iplddt": best.ComplexIPLDDT,
		"complex_pde": best.ComplexPDE, "complex_ipde": best.ComplexIPDE} {
		r.row[key] = value(v)
	}
	if t.cx.Affinity == nil {
		return r
	}
	affPath := filepath.Join(dir, "affinity_"+name+".json")
	var aff map[string]*float64
	info, err := os.Stat(affPath)
	if err == nil {
		err = readJSON(affPath, &aff)
	}
	if err != nil || !finite(aff["affinity_pred_value"]) || !finite(aff["affinity_probability_binary"]) {
		why := "its affinity loop wrote no result for it"
		switch {
		case o.mon.oom[phaseAffinity] > 0:
			why = fmt.Sprintf("it ran out of memory in the affinity loop (%q)", oomWarning)
		case o.crash != nil:
			why = "it exited before the affinity loop finished (" + firstLine(o.crash) + ")"
		}
		return fail("Boltz predicted the structure but no affinity: %s; the structure files are kept", why)
	}
	r.ended[phaseAffinity] = info.ModTime()
	for _, k := range affinityKeys {
		if v, ok := aff[k]; ok && finite(v) {
			r.row[k] = *v
		}
	}
	r.files = append(r.files, file(name+"/affinity_"+name+".json", name, job.ArtifactAffinity, affPath))
	return r
}

// missing says, in Boltz's words where it gave any, why a target has no structure.
func (o *outcome) missing(name string) string {
	if msg, ok := o.mon.skipped[name]; ok {
		return "Boltz could not process the input and skipped it: " + msg
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

// runtimes sets every row's runtime_s: the target's own time in each prediction loop,
// measured between the moments Boltz finished writing the results of consecutive targets
// (the modification times of their files) from the loop's first progress line, plus an
// equal share of the rest of the run (start-up, input processing and MSA searches, weight
// loading). The rows of a run add up to the tool's wall time.
func (o *outcome) runtimes(results []*result) {
	own := make([]float64, len(results))
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
			own[i] += d
			attributed += d
			prev = later(prev, results[i].ended[phase])
		}
	}
	share := max(o.wall.Seconds()-attributed, 0) / float64(max(len(results), 1))
	for i, r := range results {
		r.row["runtime_s"] = math.Round((own[i]+share)*1000) / 1000
	}
}

func file(path, target, typ, local string) engine.File {
	return engine.File{Artifact: job.Artifact{Path: path, Target: target, Type: typ}, Local: local}
}

// readJSON reads a JSON file that Python wrote: json.dumps writes NaN and Infinity for
// values that are not finite, which are null here.
func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(pythonJSON(b), v)
}

// pythonJSON replaces Python's NaN, Infinity and -Infinity outside strings by null.
func pythonJSON(b []byte) []byte {
	if !bytes.Contains(b, []byte("NaN")) && !bytes.Contains(b, []byte("Infinity")) {
		return b
	}
	var out []byte
	inString := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inString {
			out = append(out, c)
			if c == '\\' && i+1 < len(b) {
				i++
				out = append(out, b[i])
			} else if c == '"' {
				inString = false
			}
			continue
		}
		switch {
		case c == '"':
			inString = true
		case bytes.HasPrefix(b[i:], []byte("NaN")):
			out, i = append(out, "null"...), i+2
			continue
		case bytes.HasPrefix(b[i:], []byte("-Infinity")):
			out, i = append(out, "null"...), i+8
			continue
		case bytes.HasPrefix(b[i:], []byte("Infinity")):
			out, i = append(out, "null"...), i+7
			continue
		}
		out = append(out, c)
	}
	return out
}

func finite(v *float64) bool { return v != nil && !math.IsNaN(*v) && !math.IsInf(*v, 0) }

// value is a score for a row: the number, or null when Boltz gave none.
func value(v *float64) any {
	if !finite(v) {
		return nil
	}
	return *v
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
