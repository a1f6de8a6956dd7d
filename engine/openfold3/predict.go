package openfold3

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/chaperone-bio/chaperone/bio"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/toolkit"
	"github.com/chaperone-bio/chaperone/engine/toolkit/msacache"
)

// prediction is one openfold3 job: its targets, folders and what the runs left.
type prediction struct {
	cfg            Config
	log            io.Writer
	params         toolkit.PredictParams
	checkpoint     string
	kernels        bool // fast numerics on a GPU
	cuEquivariance bool // and cuEquivariance is installed
	// The run's folders: inputs, the alignment files chains read, the search's output and
	// predict's output.
	inputs, files, msa, out string
	cache                   *msacache.Cache

	targets []*target
	// alignFailed holds the targets whose search failed, with why; they are not predicted.
	alignFailed map[string]string
	mon         *monitor
	elapsed     time.Duration // how long the tool ran, over both runs
}

func (e *Engine) plan(run *engine.Run, work string) (*prediction, error) {
	complexes, err := bio.Complexes(run.Job.Input)
	if err != nil {
		return nil, fmt.Errorf("reading the job's input: %w", err)
	}
	params, err := toolkit.NewPredictParams(run.Job.Params)
	if err != nil {
		return nil, err
	}
	p := &prediction{cfg: e.cfg, log: run.Log, params: params,
		inputs: filepath.Join(work, "inputs"), files: filepath.Join(work, "files"), msa: filepath.Join(work, "msa"),
		out: filepath.Join(work, "out"), cache: msacache.ForRun(run.CacheDir, e.cfg.MSACacheBytes), alignFailed: map[string]string{}}
	if err := toolkit.MakeDirs(p.inputs, p.files, p.out); err != nil {
		return nil, err
	}
	for _, cx := range complexes {
		p.targets = append(p.targets, &target{cx: cx, alignments: make([]*alignment, len(cx.Entities))})
	}
	p.mon = newMonitor(run.Report, len(p.targets))
	return p, nil
}

// prepare writes the alignments the caller sent, takes the server's alignments from the
// cache where it has them, and writes the query of the search for the others.
func (p *prediction) prepare() error {
	search := querySet{Queries: map[string]query{}}
	for _, t := range p.targets {
		if err := writeInline(t, p.files); err != nil {
			return err
		}
		if !p.params.UseMSAServer {
			continue
		}
		var seqs []string
		for i, e := range t.cx.Entities {
			if e.Kind == bio.Protein && e.MSA.Source == bio.MSAAuto {
				t.auto = append(t.auto, i)
				seqs = append(seqs, e.Sequence)
			}
		}
		if len(t.auto) == 0 {
			continue
		}
		t.cacheKey = msacache.Key(append([]string{"openfold3 msa v1", p.cfg.MSAServerURL}, seqs...)...)
		names := p.entryFiles(t)
		if p.cache.Get(t.cacheKey, names) {
			t.cached = true
			p.placeAlignments(t)
			continue
		}
		t.searched = true
		search.Queries[t.cx.Name] = query{Chains: queryChains(t, t.auto, false)}
	}
	if len(search.Queries) == 0 {
		return nil
	}
	p.mon.searching = true
	if err := os.MkdirAll(p.msa, 0o755); err != nil {
		return err
	}
	if err := writeJSON(filepath.Join(p.inputs, "search.json"), search); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(p.inputs, "msa_settings.yaml"), []byte(alignSettings(p.cfg.MSAServerURL)), 0o644)
}

// paired reports whether OpenFold3 pairs the server's alignments of a target: it does for
// two or more different sequences (colabfold_msa_server.py, collect_colabfold_msa_data).
func paired(t *target) bool {
	for _, i := range t.auto[1:] {
		if t.cx.Entities[i].Sequence != t.cx.Entities[t.auto[0]].Sequence {
			return true
		}
	}
	return false
}

// entryFiles are the files of a target's search as the cache names them (<k>/<file> for
// the k-th entity searched), mapped to where the run keeps them.
func (p *prediction) entryFiles(t *target) map[string]string {
	files := map[string]string{}
	for k, i := range t.auto {
		dir := entityDir(p.files, t.cx.Name, i)
		files[strconv.Itoa(k)+"/"+mainMSA] = filepath.Join(dir, mainMSA)
		if paired(t) {
			files[strconv.Itoa(k)+"/"+pairedMSA] = filepath.Join(dir, pairedMSA)
		}
	}
	return files
}

// placeAlignments points the target's searched entities at their files.
func (p *prediction) placeAlignments(t *target) {
	for _, i := range t.auto {
		t.alignments[i] = &alignment{dir: entityDir(p.files, t.cx.Name, i), main: true, paired: paired(t)}
	}
}

// alignCommand is the search of the alignments that are neither sent nor cached: the tool's
// align-msa-server, through its own Python (alignScript) when the tool is a Python console
// script (as pip installs it); anything else runs as it is.
func (p *prediction) alignCommand(tool string) (engine.Command, bool) {
	if !p.mon.searching {
		return engine.Command{}, false
	}
	fmt.Fprintf(p.log, "[chaperone] run_openfold align-msa-server: searching alignments on %s\n", p.cfg.MSAServerURL)
	p.mon.stageMSA()
	args := []string{"align-msa-server", "--query_json", filepath.Join(p.inputs, "search.json"), "--output_dir", p.msa,
		"--msa_computation_settings_yaml", filepath.Join(p.inputs, "msa_settings.yaml")}
	cmd := engine.Command{Path: tool, Args: args, OnLine: p.mon.line}
	if python := toolkit.Interpreter(tool); strings.HasPrefix(filepath.Base(python), "python") {
		cmd.Path, cmd.Args = python, append([]string{"-c", alignScript}, args...)
	}
	return cmd, true
}

// alignScript runs run_openfold's own command line (openfold3/run_openfold.py, cli) with one
// change: the template hits the ColabFold server returns are not mapped to PDB chain ids.
// align-msa-server maps every hit through data.rcsb.org and raises when that is out of
// reach (core/data/tools/colabfold_msa_server.py:895-927, rscb.py:38-74), even though
// templates are never asked for; predict runs with --use_templates false, so the mapping
// only cost the search its alignments on a worker without the internet. With the mapping
// empty, the search writes no template files and everything else as before. A release
// without that function runs unchanged.
const alignScript = `import sys
from openfold3.core.data.tools import colabfold_msa_server
if hasattr(colabfold_msa_server, "remap_colabfold_template_chain_ids"):
    colabfold_msa_server.remap_colabfold_template_chain_ids = lambda **kwargs: {}
from openfold3.run_openfold import cli
cli(args=sys.argv[1:], prog_name="run_openfold")
`

// searched is align-msa-server's query_msa.json: the search query with the paths of the
// alignment files it wrote.
type searched struct {
	Queries map[string]struct {
		Chains []struct {
			Main   []string `json:"main_msa_file_paths"`
			Paired []string `json:"paired_msa_file_paths"`
		} `json:"chains"`
	} `json:"queries"`
}

// takeAlignments moves the search's files into place and keeps them in the cache. A
// target whose files are missing is not predicted: its row fails saying so.
func (p *prediction) takeAlignments(exit error) {
	var res searched
	err := toolkit.ReadPythonJSON(filepath.Join(p.msa, "query_msa.json"), &res)
	for _, t := range p.targets {
		if !t.searched {
			continue
		}
		if why := p.takeTarget(t, res, err); why != "" {
			if exit != nil {
				why += fmt.Sprintf(" (it exited: %s)", firstLine(exit))
			}
			p.alignFailed[t.cx.Name] = "aligning its chains on the MSA server failed: " + why + "; the run log has the tool's output"
			continue
		}
		if err := p.cache.Put(t.cacheKey, p.entryFiles(t)); err != nil {
			fmt.Fprintf(p.log, "[chaperone] keeping the alignments of %s for later jobs failed: %v\n", t.cx.Name, err)
		}
	}
}

// takeTarget places one target's searched files; it returns why it could not.
func (p *prediction) takeTarget(t *target, res searched, readErr error) string {
	if readErr != nil {
		return "run_openfold align-msa-server wrote no query_msa.json"
	}
	q, ok := res.Queries[t.cx.Name]
	if !ok || len(q.Chains) != len(t.auto) {
		return "run_openfold align-msa-server left it out of query_msa.json"
	}
	for k, i := range t.auto {
		dir := entityDir(p.files, t.cx.Name, i)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err.Error()
		}
		c := q.Chains[k]
		want := []struct {
			paths []string
			name  string
			need  bool
		}{{c.Main, mainMSA, true}, {c.Paired, pairedMSA, paired(t)}}
		for _, w := range want {
			if !w.need {
				continue
			}
			if len(w.paths) != 1 || filepath.Base(w.paths[0]) != w.name {
				return fmt.Sprintf("it gave chain %s no %s", t.cx.Entities[i].IDs[0], w.name)
			}
			if err := copyFile(w.paths[0], filepath.Join(dir, w.name)); err != nil {
				return fmt.Sprintf("chain %s: %v", t.cx.Entities[i].IDs[0], err)
			}
		}
	}
	p.placeAlignments(t)
	return ""
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}

// predicted are the targets that go to predict.
func (p *prediction) predicted() []*target {
	var out []*target
	for _, t := range p.targets {
		if _, failed := p.alignFailed[t.cx.Name]; !failed {
			out = append(out, t)
		}
	}
	return out
}

// writeInputs writes predict's query JSON and runner YAML.
func (p *prediction) writeInputs() error {
	if err := writeQuerySet(filepath.Join(p.inputs, "queries.json"), p.predicted()); err != nil {
		return err
	}
	r := runnerYAML{output: p.out, seed: p.params.SeedOr(seed), msaDir: p.msa, format: p.params.OutputFormat, gpu: p.cfg.GPU,
		recycles: p.params.RecyclingSteps, samplingSteps: p.params.SamplingSteps,
		kernels: p.kernels, cuEquivariance: p.cuEquivariance}
	return os.WriteFile(filepath.Join(p.inputs, "runner.yaml"), []byte(r.String()), 0o644)
}

// predictCommand is run_openfold predict over the query JSON. The server and templates
// are switched off on the command line as well: its click defaults are true, and predict
// reads every alignment from files.
func (p *prediction) predictCommand() engine.Command {
	args := []string{"predict", "--query_json", filepath.Join(p.inputs, "queries.json"),
		"--runner_yaml", filepath.Join(p.inputs, "runner.yaml"), "--inference_ckpt_path", p.checkpoint,
		"--num_diffusion_samples", strconv.Itoa(p.params.DiffusionSamples),
		"--use_msa_server", "false", "--use_templates", "false", "--output_dir", p.out}
	fmt.Fprintf(p.log, "[chaperone] run_openfold predict: %d target(s) on %s; kernels: %s; alignments: %s\n",
		len(p.predicted()), map[bool]string{true: "gpu", false: "cpu"}[p.cfg.GPU], p.kernelNote(), p.msaNote())
	p.mon.stageInference()
	return engine.Command{Args: args, OnLine: p.mon.line}
}

func (p *prediction) kernelNote() string {
	switch {
	case p.cuEquivariance:
		return "DeepSpeed evo attention and cuEquivariance"
	case p.kernels:
		return "DeepSpeed evo attention (cuEquivariance is not installed)"
	}
	return "plain PyTorch"
}

// msaNote says where the job's alignments come from, for the run log.
func (p *prediction) msaNote() string {
	var searched, cached int
	for _, t := range p.targets {
		if t.searched {
			searched++
		}
		if t.cached {
			cached++
		}
	}
	var parts []string
	if searched > 0 {
		parts = append(parts, fmt.Sprintf("%d target(s) searched on %s", searched, p.cfg.MSAServerURL))
	}
	if cached > 0 {
		parts = append(parts, fmt.Sprintf("%d target(s) from the cache", cached))
	}
	if !p.params.UseMSAServer {
		parts = append(parts, "single-sequence unless sent with the input (use_msa_server is off)")
	}
	if len(parts) == 0 {
		return "as sent with the input"
	}
	return strings.Join(parts, "; ")
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return strings.TrimSuffix(s, "; last output:")
}
