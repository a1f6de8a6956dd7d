package openfold3

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/toolkit"
	"github.com/chaperone-bio/chaperone/job"
)

// aggregated is OpenFold3's <prefix>_confidences_aggregated.json (writer.py,
// write_confidence_scores): avg_plddt on 0..100, and from the PAE head the summary scores
// by which samples are ranked. Per-chain scores stay in the file.
type aggregated struct {
	AvgPLDDT           *float64 `json:"avg_plddt"`
	GPDE               *float64 `json:"gpde"`
	PTM                *float64 `json:"ptm"`
	IPTM               *float64 `json:"iptm"`
	SampleRankingScore *float64 `json:"sample_ranking_score"`
}

// timing is the timing.json of a query and seed (callbacks.py, PredictTimer): the seconds
// its prediction step took.
type timing struct {
	RuntimeS *float64 `json:"runtime_s"`
}

// sample is one structure OpenFold3 wrote for a target.
type sample struct {
	structure, confidences, aggregated string
	scores                             aggregated
}

// results reads every target's row and files.
func (p *prediction) results(exit error) (*engine.Output, error) {
	failed, summary := readSummary(filepath.Join(p.out, "summary.txt"))
	logged := readErrorLog(filepath.Join(p.out, "logs", "predict_err_rank0.log"))
	targets := make([]toolkit.Target, len(p.targets))
	own := make([]float64, len(p.targets))
	for i, t := range p.targets {
		targets[i], own[i] = p.read(t, failed, summary, logged, exit)
	}
	// Each row's runtime is its own prediction step, plus an equal share of the rest of the
	// tool's time (start-up, weight loading): the rows add up to the wall time.
	share := max(p.elapsed.Seconds()-sum(own), 0) / float64(max(len(targets), 1))
	for i := range targets {
		targets[i].Row.RuntimeS = math.Round((own[i]+share)*1000) / 1000
	}
	return toolkit.Predictions("run_openfold", targets, exit)
}

func sum(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s
}

// read reads what OpenFold3 wrote for one target, and the seconds of its prediction step.
func (p *prediction) read(t *target, failed map[string]bool, summary bool, logged map[string]string, exit error) (toolkit.Target, float64) {
	name := t.cx.Name
	r := toolkit.Target{Row: job.PredictionRow{ID: name, Status: job.RowOK, NChains: t.cx.NumChains(),
		NResidues: t.cx.NumResidues(), MSA: t.msa()}}
	fail := func(format string, args ...any) (toolkit.Target, float64) {
		r.Row.Status, r.Row.Error, r.Files = job.RowFailed, fmt.Sprintf(format, args...), nil
		return r, 0
	}
	if failed[name] {
		return fail("%s", p.failure(name, logged))
	}
	seed := p.params.SeedOr(seed)
	dir := filepath.Join(p.out, name, fmt.Sprintf("seed_%d", seed))
	var samples []sample
	for k := 1; k <= p.params.DiffusionSamples; k++ {
		prefix := filepath.Join(dir, fmt.Sprintf("%s_seed_%d_sample_%d", name, seed, k))
		s := sample{structure: prefix + "_model." + p.params.OutputFormat, confidences: prefix + "_confidences.json",
			aggregated: prefix + "_confidences_aggregated.json"}
		_, err := os.Stat(s.structure)
		if err == nil {
			err = toolkit.ReadPythonJSON(s.aggregated, &s.scores)
		}
		if err != nil {
			switch {
			case k > 1:
				return fail("OpenFold3 wrote %d of the %d samples asked for; the run log has its output", k-1, p.params.DiffusionSamples)
			case !summary && exit != nil:
				return fail("run_openfold exited before it finished this target (%s); the run log has its output", firstLine(exit))
			case !summary:
				return fail("run_openfold ended without its summary and without a structure for this target; the run log has its output")
			}
			return fail("OpenFold3 wrote no structure for it and did not list it among its failed queries; the run log has its output")
		}
		samples = append(samples, s)
	}
	// OpenFold3 numbers samples in the order it generated them; its ranking score orders
	// them, best first (a sample without one last).
	slices.SortStableFunc(samples, func(a, b sample) int {
		x, y := a.scores.SampleRankingScore, b.scores.SampleRankingScore
		switch {
		case x == nil && y == nil:
			return 0
		case x == nil:
			return 1
		case y == nil:
			return -1
		}
		return -cmpFloat(*x, *y)
	})
	best := samples[0].scores
	if best.AvgPLDDT == nil || best.PTM == nil || best.SampleRankingScore == nil {
		return fail("OpenFold3's aggregated confidences of the best sample have no finite avg_plddt, ptm and " +
			"sample_ranking_score (its PAE head is on by default, so this is the tool's fault)")
	}
	for rank, s := range samples {
		path := name + "." + p.params.OutputFormat
		if rank > 0 {
			path = fmt.Sprintf("%s_sample_%d.%s", name, rank, p.params.OutputFormat)
		}
		r.Files = append(r.Files, toolkit.Artifact(path, name, job.ArtifactStructure, s.structure))
		for _, c := range []struct{ local, suffix string }{{s.confidences, "confidences"}, {s.aggregated, "confidences_aggregated"}} {
			if _, err := os.Stat(c.local); err == nil {
				r.Files = append(r.Files, toolkit.Artifact(fmt.Sprintf("%s/%s_model_%d_%s.json", name, name, rank, c.suffix),
					name, job.ArtifactConfidence, c.local))
			}
		}
	}
	r.Row.Samples = len(samples)
	plddt := *best.AvgPLDDT / 100
	r.Row.Scores = &job.Scores{PLDDT: plddt, PTM: *best.PTM, ComplexPLDDT: &plddt, ConfidenceScore: best.SampleRankingScore}
	if t.cx.NumChains() > 1 { // one chain has no interface
		r.Row.Scores.IPTM = best.IPTM
	}
	var tm timing
	if err := toolkit.ReadPythonJSON(filepath.Join(dir, "timing.json"), &tm); err == nil && tm.RuntimeS != nil {
		return r, max(*tm.RuntimeS, 0)
	}
	return r, 0
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// failure says why OpenFold3 failed a query it listed as failed, in its own words.
func (p *prediction) failure(name string, logged map[string]string) string {
	msg := logged[name]
	if msg == "" {
		msg = p.mon.errors[name]
	}
	if p.mon.oom[name] || strings.HasPrefix(msg, "OutOfMemoryError") {
		why := "OpenFold3 ran out of GPU memory predicting it"
		if msg != "" {
			why += " (" + msg + ")"
		}
		return why + "; fewer residues or diffusion_samples, or a GPU with more memory, would fit"
	}
	if msg == "" {
		return "OpenFold3 listed it among its failed queries and gave no reason; the run log has its output"
	}
	return "OpenFold3 failed it: " + msg
}

// readSummary reads the queries listed in summary.txt (writer.py, _write_summary) after
// "Failed Queries:", and whether the file is there.
func readSummary(path string) (map[string]bool, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, false
	}
	failed := map[string]bool{}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "Failed Queries:"); ok {
			for _, q := range strings.Split(rest, ",") {
				if q = strings.TrimSpace(q); q != "" {
					failed[q] = true
				}
			}
		}
	}
	return failed, true
}

// readErrorLog reads OpenFold3's predict_err_rank<r>.log (runner.py,
// _log_predict_exception): per query, "<Error Type>: <Error Message>" of its last entry.
func readErrorLog(path string) map[string]string {
	errs := map[string]string{}
	f, err := os.Open(path)
	if err != nil {
		return errs
	}
	defer f.Close()
	var queries []string
	var typ string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "Query ID(s): "):
			queries = strings.Split(strings.TrimPrefix(line, "Query ID(s): "), ", ")
		case strings.HasPrefix(line, "Error Type: "):
			typ = strings.TrimPrefix(line, "Error Type: ")
		case strings.HasPrefix(line, "Error Message: "):
			for _, q := range queries {
				errs[q] = typ + ": " + strings.TrimPrefix(line, "Error Message: ")
			}
		}
	}
	return errs
}
