package protenix

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/toolkit"
	"github.com/chaperone-bio/chaperone/engine/toolkit/npy"
	"github.com/chaperone-bio/chaperone/engine/toolkit/pdbfile"
	"github.com/chaperone-bio/chaperone/job"
)

// summary is the tools' <name>_summary_confidence_sample_<rank>.json
// (protenix/model/sample_confidence.py, and OpenDDE's copy of it): the scores of one
// sample, nil where the tool wrote none or NaN. pLDDT is on 0..100. The per-chain arrays
// stay in the file.
type summary struct {
	PLDDT        *score `json:"plddt"`
	PTM          *score `json:"ptm"`
	IPTM         *score `json:"iptm"`
	RankingScore *score `json:"ranking_score"`
}

// score is a number the tools write from a tensor: a plain number, or a list of one.
type score float64

func (s *score) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '[' {
		var l []float64
		if err := json.Unmarshal(b, &l); err != nil || len(l) != 1 {
			return fmt.Errorf("a score is a number or a list of one, not %s", b)
		}
		*s = score(l[0])
		return nil
	}
	return json.Unmarshal(b, (*float64)(s))
}

func (s *score) value() *float64 {
	if s == nil {
		return nil
	}
	v := float64(*s)
	return &v
}

// sample is one structure the tool wrote for a target.
type sample struct {
	structure, summary, fullData string // files; fullData is "" when the tool wrote none
	scores                       summary
}

// outcome is what a run left behind, for reading the targets' results.
type outcome struct {
	out, pdb string // the tool's output folder, and where converted PDB files go
	format   string // output_format: cif or pdb
	samples  int
	writePAE bool // write_pae: the best sample's token-pair PAE as <target>_pae.npz
	tool     string
	mon      *monitor
	crash    error // the tool exited unsuccessfully
}

// read reads what the tool wrote for one target: its error in ERR/, or its samples from
// every seed's folder, ranked by ranking_score.
func (o *outcome) read(t *target) toolkit.Target {
	name := t.cx.Name
	r := toolkit.Target{Row: job.PredictionRow{ID: name, Status: job.RowOK, NChains: t.cx.NumChains(),
		NResidues: t.cx.NumResidues(), MSA: t.msa}}
	fail := func(format string, args ...any) toolkit.Target {
		r.Row.Status, r.Row.Error, r.Files = job.RowFailed, fmt.Sprintf(format, args...), nil
		return r
	}
	if msg := o.toolError(name); msg != "" {
		return fail("%s failed on it: %s", o.tool, msg)
	}
	samples, err := o.samplesOf(name)
	switch {
	case err != nil:
		return fail("%s", err)
	case len(samples) == 0:
		return fail("%s", o.missing())
	case len(samples) < o.samples:
		return fail("%s wrote %d of the %d samples asked for; %s", o.tool, len(samples), o.samples, o.missing())
	}
	samples = samples[:o.samples]
	for k, s := range samples {
		ext := "cif"
		structure := s.structure
		if o.format == "pdb" {
			ext = "pdb"
			if structure, err = o.toPDB(name, k, s.structure); err != nil {
				return fail("its structure cannot be written as PDB: %v; ask for output_format cif", err)
			}
		}
		path := name + "." + ext
		if k > 0 {
			path = fmt.Sprintf("%s_sample_%d.%s", name, k, ext)
		}
		r.Files = append(r.Files, toolkit.Artifact(path, name, job.ArtifactStructure, structure))
		r.Files = append(r.Files, toolkit.Artifact(fmt.Sprintf("%s/%s_summary_confidence_sample_%d.json", name, name, k),
			name, job.ArtifactConfidence, s.summary))
		if s.fullData != "" {
			// The full data holds the token-pair PAE with the atom pLDDT and contact
			// probabilities.
			r.Files = append(r.Files, toolkit.Artifact(fmt.Sprintf("%s/%s_full_data_sample_%d.json", name, name, k),
				name, job.ArtifactPAE, s.fullData))
		}
	}
	r.Row.Samples = len(samples)
	best := samples[0].scores
	if best.PLDDT == nil || best.PTM == nil {
		return fail("%s's confidence file of the best sample has no finite plddt and ptm", o.tool)
	}
	if o.writePAE {
		f, err := o.paeMatrix(name, samples[0].fullData)
		if err != nil {
			return fail("write_pae: %v", err)
		}
		r.Files = append(r.Files, f)
	}
	plddt := float64(*best.PLDDT) / 100 // the tools write the mean atom pLDDT on 0..100
	r.Row.Scores = &job.Scores{PLDDT: plddt, PTM: float64(*best.PTM), ComplexPLDDT: &plddt,
		ConfidenceScore: best.RankingScore.value()}
	if t.cx.NumChains() > 1 { // one chain has no interface
		r.Row.Scores.IPTM = best.IPTM.value()
	}
	return r
}

// samplesOf reads every sample of a target over all seeds (<out>/<name>/seed_<seed>/
// predictions/), best ranking_score first; the tools rank within a seed only.
func (o *outcome) samplesOf(name string) ([]sample, error) {
	summaries, _ := filepath.Glob(filepath.Join(o.out, globEscape(name), "seed_*", "predictions", globEscape(name)+"_summary_confidence_sample_*.json"))
	sort.Strings(summaries)
	var samples []sample
	for _, path := range summaries {
		dir, file := filepath.Split(path)
		rank := strings.TrimSuffix(strings.TrimPrefix(file, name+"_summary_confidence_sample_"), ".json")
		s := sample{summary: path, structure: filepath.Join(dir, fmt.Sprintf("%s_sample_%s.cif", name, rank))}
		if _, err := os.Stat(s.structure); err != nil {
			continue
		}
		if err := toolkit.ReadPythonJSON(path, &s.scores); err != nil {
			return nil, fmt.Errorf("%s wrote a confidence file that cannot be read: %v", o.tool, err)
		}
		full := filepath.Join(dir, fmt.Sprintf("%s_full_data_sample_%s.json", name, rank))
		if _, err := os.Stat(full); err == nil {
			s.fullData = full
		}
		samples = append(samples, s)
	}
	rankingScore := func(s sample) float64 {
		if s.scores.RankingScore == nil {
			return math.Inf(-1)
		}
		return float64(*s.scores.RankingScore)
	}
	sort.SliceStable(samples, func(i, j int) bool { return rankingScore(samples[i]) > rankingScore(samples[j]) })
	return samples, nil
}

// globEscape quotes the characters filepath.Match reads specially.
func globEscape(s string) string {
	var b strings.Builder
	for _, c := range s {
		if strings.ContainsRune(`*?[\`, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// errPrefix is how the tools begin an error in ERR/<name>.txt: "[Rank 0] <name> failed: ".
var errPrefix = regexp.MustCompile(`^\[Rank \d+\] .*? failed: `)

// toolError is the tool's own error for a target, from ERR/<name>.txt: its first line,
// with a hint when it ran out of memory.
func (o *outcome) toolError(name string) string {
	b, err := os.ReadFile(filepath.Join(o.out, "ERR", name+".txt"))
	if err != nil {
		return ""
	}
	msg := errPrefix.ReplaceAllString(firstLine(string(b)), "")
	if msg == "" {
		msg = "an error without a message; the run log has its output"
	}
	if strings.Contains(msg, "out of memory") {
		msg += " (fewer residues or diffusion_samples, or a GPU with more memory, would fit)"
	}
	return msg
}

// fileErrorMessage reads the message out of the dict that inference_jsons logs,
// {'<input file>': '<error>'}, so that the row does not carry the run's paths.
var fileErrorMessage = regexp.MustCompile(`^\{'[^']*': ['"](.*)['"]\}$`)

// missing says, in the tool's words where it gave any, why a target has no structure.
func (o *outcome) missing() string {
	if msg := o.mon.fileError; msg != "" {
		if g := fileErrorMessage.FindStringSubmatch(msg); g != nil {
			msg = g[1]
		}
		return fmt.Sprintf("%s could not run the job's input: %s", o.tool, msg)
	}
	if b, err := os.ReadFile(filepath.Join(o.out, "ERR", "error.txt")); err == nil {
		return fmt.Sprintf("%s could not read the job's input: %s", o.tool, firstLine(string(b)))
	}
	if o.crash != nil {
		exit, _, _ := strings.Cut(firstLine(o.crash.Error()), ";")
		return fmt.Sprintf("%s exited before it finished this target (%s); the run log has its output", o.tool, exit)
	}
	return fmt.Sprintf("%s wrote no structure for it and gave no reason; the run log has its output", o.tool)
}

// toPDB converts the mmCIF of sample k of a target to PDB.
func (o *outcome) toPDB(name string, k int, cif string) (string, error) {
	b, err := os.ReadFile(cif)
	if err != nil {
		return "", err
	}
	pdb, err := pdbfile.FromMMCIF(b)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(o.pdb, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(o.pdb, fmt.Sprintf("%s_%d.pdb", name, k))
	return path, os.WriteFile(path, pdb, 0o644)
}

// runtimes sets every row's runtime_s: the model time the tool logged for the target
// (over all seeds), plus an equal share of the rest of the run (start-up, weight loading,
// alignment searches, featurising). The rows of a run add up to the tool's wall time.
func (o *outcome) runtimes(targets []toolkit.Target, wall time.Duration) {
	own := 0.0
	for _, t := range targets {
		own += o.mon.forward[t.Row.ID]
	}
	// The tools log model time to a hundredth of a second; a run shorter than what they
	// logged keeps the rows' proportions and adds up to the wall time still.
	scale := 1.0
	if own > wall.Seconds() {
		scale = wall.Seconds() / own
	}
	share := max(wall.Seconds()-own, 0) / float64(max(len(targets), 1))
	for i := range targets {
		targets[i].Row.RuntimeS = math.Round((o.mon.forward[targets[i].Row.ID]*scale+share)*1000) / 1000
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return strings.TrimSuffix(strings.TrimSpace(line), ":")
}

// paeMatrix writes the token_pair_pae of the best sample's full data as <target>_pae.npz.
func (o *outcome) paeMatrix(name, fullData string) (engine.File, error) {
	var data struct {
		PAE [][]float64 `json:"token_pair_pae"`
	}
	if fullData == "" || toolkit.ReadPythonJSON(fullData, &data) != nil || len(data.PAE) == 0 {
		return engine.File{}, fmt.Errorf("%s wrote no token_pair_pae for the best sample", o.tool)
	}
	n := len(data.PAE)
	values := make([]float32, 0, n*n)
	for i, row := range data.PAE {
		if len(row) != n {
			return engine.File{}, fmt.Errorf("%s's token_pair_pae is not square (row %d has %d of %d)", o.tool, i, len(row), n)
		}
		for _, v := range row {
			values = append(values, float32(v))
		}
	}
	return toolkit.PAEMatrix(filepath.Dir(fullData), name, map[string]*npy.Array{"pae": {Shape: []int{n, n}, Data: values}})
}
