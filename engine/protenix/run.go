package protenix

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/chaperone-bio/chaperone/bio"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/toolkit"
	"github.com/chaperone-bio/chaperone/engine/toolkit/msacache"
	"github.com/chaperone-bio/chaperone/job"
)

// seed is the tools' documented default seed (decisions: Engines), for a job stored before
// the catalog filled in its seed param; the seed is always passed, so that a rerun gives the
// same result.
const seed = 101

// inputName is the stem of the run's one input file; the tools write the input updated
// with the alignments they searched beside it as <stem>-update-msa.json.
const inputName = "targets"

// prediction is one job, in the steps of toolkit.RunSteps.
type prediction struct {
	e         *Engine
	log       io.Writer
	report    func(job.Progress)
	params    toolkit.PredictParams
	complexes []*bio.Complex
	// The run's folders: the input JSON, the alignment files it names, the tool's output,
	// and structures converted to PDB.
	input, files, out, pdb string
	cache                  *msacache.Cache

	targets   []*target
	searching bool // some target's alignments are searched in this run
	msa       bool // some target is folded with alignments
	fromCache int
	mon       *monitor
	started   time.Time
}

func (e *Engine) plan(run *engine.Run, work string) (toolkit.Steps, error) {
	if err := e.checkWeights(); err != nil {
		return nil, err
	}
	complexes, err := bio.Complexes(run.Job.Input)
	if err != nil {
		return nil, fmt.Errorf("reading the job's input: %w", err)
	}
	params, err := toolkit.NewPredictParams(run.Job.Params)
	if err != nil {
		return nil, err
	}
	p := &prediction{e: e, log: run.Log, report: run.Report, params: params, complexes: complexes,
		input: filepath.Join(work, "input"), files: filepath.Join(work, "msa"), out: filepath.Join(work, "out"),
		pdb: filepath.Join(work, "pdb"), cache: msacache.ForRun(run.CacheDir, e.cfg.MSACacheBytes)}
	if err := toolkit.MakeDirs(p.input, p.files, p.out); err != nil {
		return nil, err
	}
	return p, nil
}

// WriteInputs decides where each target's alignments come from and writes the one JSON
// file that lists every target.
func (p *prediction) WriteInputs() error {
	var entries []inputJob
	for _, cx := range p.complexes {
		t, err := planTarget(cx, p.params.UseMSAServer, p.e.flavor, p.e.cfg.MSAServerURL, p.cache, p.files)
		if err != nil {
			return fmt.Errorf("the input of %s: %w", cx.Name, err)
		}
		p.targets = append(p.targets, t)
		entries = append(entries, t.entry)
		p.searching = p.searching || t.search
		p.msa = p.msa || t.msa
		if t.cached {
			p.fromCache++
		}
		if t.search && p.e.flavor.colabfoldMode {
			if err := linkColabfoldPairing(filepath.Join(p.out, cx.Name, "msa"), len(t.seqs)); err != nil {
				return err
			}
		}
	}
	b, err := json.MarshalIndent(entries, "", "    ")
	if err != nil {
		return err
	}
	return os.WriteFile(p.inputPath(), append(b, '\n'), 0o644)
}

func (p *prediction) inputPath() string { return filepath.Join(p.input, inputName+".json") }

// Command is `<tool> pred` over the input JSON; the run's clock starts here.
func (p *prediction) Command() engine.Command {
	f := p.e.flavor
	kernels, dtype := f.plainKernels, f.plainDtype
	if p.params.Fast {
		kernels, dtype = f.fastKernels, f.fastDtype
	}
	if !p.e.cfg.GPU {
		// cuEquivariance's kernels run on CUDA only.
		kernels = "torch"
	}
	args := []string{"pred", "--input", p.inputPath(), "--out_dir", p.out, "--seeds", strconv.Itoa(p.params.SeedOr(seed)),
		"--sample", strconv.Itoa(p.params.DiffusionSamples), "--model_name", f.modelName, "--dtype", dtype,
		"--trimul_kernel", kernels, "--triatt_kernel", kernels, "--use_msa", strconv.FormatBool(p.msa),
		"--need_atom_confidence", "true"}
	// Steps the caller left out are the tool's own (10 cycles, 200 diffusion steps).
	if v := p.params.RecyclingSteps; v != nil {
		args = append(args, "--cycle", strconv.Itoa(*v))
	}
	if v := p.params.SamplingSteps; v != nil {
		args = append(args, "--step", strconv.Itoa(*v))
	}
	if f.colabfoldMode {
		args = append(args, "--msa_server_mode", "colabfold")
	}
	accelerator := "the CPU"
	if p.e.cfg.GPU {
		accelerator = "the GPU"
	}
	if f.device {
		device := "cpu"
		if p.e.cfg.GPU {
			device = "cuda"
		}
		args = append(args, "--device", device)
	}
	if f.checkpoint != "" {
		args = append(args, "--load_checkpoint_path", p.e.checkpoint())
	}
	fmt.Fprintf(p.log, "[chaperone] %s pred: %d target(s) on %s; alignments: %s\n", f.command, len(p.targets), accelerator, p.msaNote())
	p.mon = newMonitor(p.report, len(p.targets), p.searching)
	p.started = time.Now()
	env := append([]string{"MMSEQS_SERVICE_HOST_URL=" + p.e.cfg.MSAServerURL}, p.e.layerNormEnv()...)
	return engine.Command{Args: args, Env: env, OnLine: p.mon.line}
}

// Results reads every target's row and files, and keeps the alignments searched.
func (p *prediction) Results(exit error) (*engine.Output, error) {
	o := &outcome{out: p.out, pdb: p.pdb, format: p.params.OutputFormat, samples: p.params.DiffusionSamples, writePAE: p.params.WritePAE,
		tool: p.e.flavor.command, mon: p.mon, crash: exit}
	targets := make([]toolkit.Target, len(p.targets))
	for i, t := range p.targets {
		targets[i] = o.read(t)
	}
	o.runtimes(targets, time.Since(p.started))
	p.keepAlignments()
	return toolkit.Predictions(p.e.flavor.command, targets, exit)
}

// cacheKey names in the alignment cache the search of seqs, in the order the tool sends
// them, on server: an entry holds per distinct sequence i the tool's two files
// (<i>/pairing.a3m, <i>/non_pairing.a3m).
func cacheKey(f *flavor, server string, seqs []string) string {
	return msacache.Key(append([]string{f.cacheKind, server}, seqs...)...)
}

// keepAlignments stores the alignments the tool searched in this run in the cache: the
// files its updated input (<stem>-update-msa.json) names for each chain. A file the tool
// did not write for a sequence is kept as the query alone, which the tools read as no
// rows at all. A failure to cache costs only a search.
func (p *prediction) keepAlignments() {
	if !p.searching {
		return
	}
	var updated []inputJob
	if err := toolkit.ReadPythonJSON(filepath.Join(p.input, inputName+"-update-msa.json"), &updated); err != nil {
		return
	}
	for _, t := range p.targets {
		if !t.search {
			continue
		}
		for _, u := range updated {
			if u.Name == t.cx.Name {
				p.keep(t, u)
			}
		}
	}
}

func (p *prediction) keep(t *target, u inputJob) {
	files := map[string]string{}
	for i, seq := range distinct(t.seqs) {
		var chain *polymer
		for _, sq := range u.Sequences {
			if sq.ProteinChain != nil && sq.ProteinChain.Sequence == seq {
				chain = sq.ProteinChain
			}
		}
		if chain == nil || chain.PairedMSAPath == "" && chain.UnpairedMSAPath == "" {
			return
		}
		for name, path := range map[string]string{pairedFile: chain.PairedMSAPath, unpairedFile: chain.UnpairedMSAPath} {
			// The cache hard-links what it keeps: the file, not a link to it
			// (linkColabfoldPairing).
			if real, err := filepath.EvalSymlinks(path); path != "" && err == nil {
				path = real
			}
			if _, err := os.Stat(path); path == "" || err != nil {
				path = filepath.Join(p.files, t.cx.Name, "searched", strconv.Itoa(i), name)
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					return
				}
				if err := os.WriteFile(path, []byte(">query\n"+seq+"\n"), 0o644); err != nil {
					return
				}
			}
			files[strconv.Itoa(i)+"/"+name] = path
		}
	}
	if err := p.cache.Put(t.cacheKey, files); err != nil {
		fmt.Fprintf(p.log, "[chaperone] keeping the alignments of %s for later jobs failed: %v\n", t.cx.Name, err)
	}
}

// msaNote says where the job's alignments come from, for the run log.
func (p *prediction) msaNote() string {
	var parts []string
	if p.searching {
		parts = append(parts, "searched on "+p.e.cfg.MSAServerURL)
	}
	if p.fromCache > 0 {
		parts = append(parts, fmt.Sprintf("%d target(s) from the cache", p.fromCache))
	}
	if !p.params.UseMSAServer {
		parts = append(parts, "single-sequence unless sent with the input (use_msa_server is off)")
	}
	if len(parts) == 0 {
		return "as sent with the input"
	}
	return strings.Join(parts, "; ")
}

// linkColabfoldPairing makes Protenix find the paired alignments its colabfold mode
// searches for a target of n distinct protein sequences, searched in msaDir
// (<out_dir>/<name>/msa, runner/msa_search.py:230). Protenix 2.0.0 writes the paired
// alignment of sequence i to <msaDir>/complex/<i>/pairing.a3m
// (web_service/colab_request_parser.py:306-310, colab_request_utils.py:314-330) but looks
// for it beside the unpaired one, <msaDir>/<i>/<i>/pairing.a3m (runner/msa_search.py:182-185),
// so a heteromer would be folded without pairing. A link at the second path to the first,
// made before the run, is found once the search has written it; a search that wrote none
// leaves it dangling, which Python's os.path.exists reads as no file. A monomer has no
// paired search.
func linkColabfoldPairing(msaDir string, n int) error {
	if n < 2 {
		return nil
	}
	for i := range n {
		dir := filepath.Join(msaDir, strconv.Itoa(i), strconv.Itoa(i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		target := filepath.Join("..", "..", "complex", strconv.Itoa(i), pairedFile)
		if err := os.Symlink(target, filepath.Join(dir, pairedFile)); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	return nil
}
