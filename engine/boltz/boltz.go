// Package boltz is the engine of the catalog's boltz2: it drives the Boltz-2 command-line
// tool (github.com/jwohlwend/boltz, `boltz predict`) exactly as Boltz's own source reads
// its options and inputs.
//
// A job is one boltz predict run over a folder of YAML inputs, one per target, so the
// weights load once per job. Every target is first parsed into a bio.Complex (the job's
// input as stored, parsed again by bio.Complexes) and written back as Boltz YAML that names
// no file the caller gave: alignments and templates sent inline become files of the run,
// alignments searched before come from a cache, and the rest is searched on the operator's
// MSA server. Afterwards the engine reads what Boltz wrote, target by target, and does not
// trust the exit status: Boltz exits 0 after skipping an input it could not process or
// running out of memory on it, and such a target gets a failed row with Boltz's own
// message. The input rules Boltz adds to the catalog's capabilities are CheckInput.
// Imports: engine, engine/toolkit, job, bio.
package boltz

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
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

// Config is an engine's setup on one worker.
type Config struct {
	// MSAServerURL is the ColabFold-compatible MMseqs2 server Boltz searches alignments on
	// (--msa_server_url); default engine.DefaultMSAServer. Credentials for a private one
	// reach Boltz through its own environment variables (BOLTZ_MSA_USERNAME,
	// BOLTZ_MSA_PASSWORD, MSA_API_KEY_VALUE) in the worker's environment.
	MSAServerURL string
	// GPU runs Boltz on the GPU (--accelerator gpu); without one it runs on the CPU.
	GPU bool
	// MSACacheBytes bounds the alignment cache; default 2 GiB.
	MSACacheBytes int64
}

// Engine runs boltz2 jobs with the boltz command.
type Engine struct {
	cfg  Config
	tool *toolkit.Tool
}

// New returns an engine with the given setup.
func New(cfg Config) *Engine {
	if cfg.MSAServerURL == "" {
		cfg.MSAServerURL = engine.DefaultMSAServer
	}
	if cfg.MSACacheBytes == 0 {
		cfg.MSACacheBytes = 2 << 30
	}
	return &Engine{cfg: cfg, tool: &toolkit.Tool{
		Name:       "boltz",
		Install:    `Boltz-2 (pip install "boltz[cuda]")`,
		Subcommand: []string{"predict"},
		Options: []string{"--out_dir", "--accelerator", "--recycling_steps", "--sampling_steps", "--diffusion_samples",
			"--output_format", "--override", "--use_msa_server", "--msa_server_url", "--no_kernels", "--seed",
			"--write_full_pae", "--write_full_pde"},
		Needs: "Boltz 2 (pip install -U boltz)",
	}}
}

func (e *Engine) Name() string     { return e.tool.Name }
func (e *Engine) Models() []string { return []string{"boltz2"} }

// Check finds the boltz command and checks that `boltz predict --help` lists every option
// the engine passes.
func (e *Engine) Check(ctx context.Context, tools engine.Tools) error {
	return e.tool.Check(ctx, tools)
}

// Run predicts every target of the job in one boltz predict run, as toolkit.RunSteps
// does, but for one case: when Boltz cannot prepare the first target of a prediction loop
// for the model it retries that target without end (see monitor.recursing), so the engine
// stops that run and runs boltz again over the targets that have no verdict yet; Boltz
// keeps what it processed and predicted before.
func (e *Engine) Run(ctx context.Context, run *engine.Run) (*engine.Output, error) {
	path, err := e.tool.Path(run.Tools)
	if err != nil {
		return nil, err
	}
	work, err := filepath.Abs(run.WorkDir)
	if err != nil {
		return nil, err
	}
	p, err := e.plan(run, work)
	if err != nil {
		return nil, err
	}
	if err := p.WriteInputs(); err != nil {
		return nil, fmt.Errorf("writing the inputs of boltz: %w", err)
	}
	for {
		attempt, stop := context.WithCancel(ctx)
		cmd := p.Command()
		cmd.Path = path
		p.mon.attempt(stop)
		exit := run.Exec(attempt, cmd)
		stop()
		if ctx.Err() != nil || errors.Is(exit, exec.ErrNotFound) {
			return nil, exit
		}
		if p.mon.recursing == "" {
			return p.Results(exit)
		}
		left, err := p.dropDecided()
		if err != nil {
			return nil, err
		}
		if left == 0 {
			return p.Results(nil) // the run was stopped here, not failed
		}
		fmt.Fprintf(p.log, "[chaperone] Boltz could not prepare %s, the first target of its loop, and retries it without end: "+
			"stopped it, running boltz again over the %d target(s) left\n", p.mon.recursing, left)
	}
}

// prediction is one boltz2 job, in the steps of toolkit.RunSteps.
type prediction struct {
	cfg       Config
	log       io.Writer
	report    func(job.Progress)
	params    toolkit.PredictParams
	complexes []*bio.Complex
	// The run's folders: Boltz's inputs, the files they name, and Boltz's output.
	inputs, files, out string
	cache              *msacache.Cache

	targets   []*target
	searching bool // some target's alignments are searched on the server in this run
	affinity  bool // some target asks for an affinity
	fromCache int  // targets whose alignments came from the cache
	mon       *monitor
	started   time.Time
	// dropped are the targets taken out of later runs of boltz, each with its verdict
	// already given; recursed is the one Boltz retried without end.
	dropped  map[string]bool
	recursed map[string]bool
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
	p := &prediction{cfg: e.cfg, log: run.Log, report: run.Report, params: params, complexes: complexes,
		inputs: filepath.Join(work, "inputs"), files: filepath.Join(work, "files"), out: filepath.Join(work, "out"),
		cache: msacache.ForRun(run.CacheDir, e.cfg.MSACacheBytes), dropped: map[string]bool{}, recursed: map[string]bool{}}
	if err := toolkit.MakeDirs(p.inputs, p.files, p.out); err != nil {
		return nil, err
	}
	return p, nil
}

// WriteInputs decides where each target's alignments come from and writes its YAML.
func (p *prediction) WriteInputs() error {
	for _, cx := range p.complexes {
		t, err := planTarget(cx, p.params.UseMSAServer, p.cfg.MSAServerURL, p.cache, p.files)
		if err != nil {
			return err
		}
		if err := writeYAML(p.inputs, p.files, t); err != nil {
			return fmt.Errorf("the Boltz input of %s: %w", cx.Name, err)
		}
		p.targets = append(p.targets, t)
		p.searching = p.searching || len(t.auto) > 0 && !t.cached
		p.affinity = p.affinity || cx.Affinity != nil
		if t.cached {
			p.fromCache++
		}
	}
	return nil
}

// defaultSeed is the seed of a job stored before seeds were params. Boltz documents no
// default (it draws one at random), so this is the catalog's, which the reference service
// also uses.
const defaultSeed = 0

// Command is boltz predict over the folder of inputs; the run's clock starts here.
func (p *prediction) Command() engine.Command {
	format := "mmcif"
	if p.params.OutputFormat == "pdb" {
		format = "pdb"
	}
	accelerator := "cpu"
	if p.cfg.GPU {
		accelerator = "gpu"
	}
	args := []string{"predict", p.inputs, "--out_dir", p.out, "--accelerator", accelerator,
		"--diffusion_samples", strconv.Itoa(p.params.DiffusionSamples), "--output_format", format,
		"--seed", strconv.Itoa(p.params.SeedOr(defaultSeed))}
	if len(p.dropped) == 0 {
		// A run again keeps the structures and affinities predicted before (main.py's
		// filter_inputs_structure and filter_inputs_affinity skip them).
		args = append(args, "--override")
	}
	if p.params.WritePAE {
		args = append(args, "--write_full_pae", "--write_full_pde")
	}
	// Steps the caller left out are Boltz's own (3 recycles, 200 sampling steps).
	if v := p.params.RecyclingSteps; v != nil {
		args = append(args, "--recycling_steps", strconv.Itoa(*v))
	}
	if v := p.params.SamplingSteps; v != nil {
		args = append(args, "--sampling_steps", strconv.Itoa(*v))
	}
	if !p.params.Fast {
		args = append(args, "--no_kernels")
	}
	if p.searching {
		args = append(args, "--use_msa_server", "--msa_server_url", p.cfg.MSAServerURL)
	}
	if p.mon == nil {
		fmt.Fprintf(p.log, "[chaperone] boltz predict: %d target(s) on %s; alignments: %s\n",
			len(p.targets), accelerator, p.msaNote())
		p.mon = newMonitor(p.report, len(p.targets), p.searching, p.affinity)
		p.started = time.Now()
	}
	return engine.Command{Args: args, OnLine: p.mon.line}
}

// dropDecided takes out of later runs every target Boltz has given up on so far (the one
// it retried without end among them), by removing its input and its processed record, and
// returns how many targets are left.
func (p *prediction) dropDecided() (int, error) {
	p.recursed[p.mon.recursing] = true
	decided := map[string]bool{p.mon.recursing: true}
	for name := range p.mon.skipped {
		decided[name] = true
	}
	for _, loop := range p.mon.unprepared {
		for name := range loop {
			decided[name] = true
		}
	}
	results := filepath.Join(p.out, "boltz_results_inputs")
	for name := range decided {
		for _, f := range []string{filepath.Join(p.inputs, name+".yaml"), filepath.Join(results, "processed", "records", name+".json")} {
			if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return 0, err
			}
		}
		p.dropped[name] = true
	}
	left := 0
	for _, t := range p.targets {
		if !p.dropped[t.cx.Name] {
			left++
		}
	}
	return left, nil
}

// Results reads every target's row and files, and keeps the alignments searched.
func (p *prediction) Results(exit error) (*engine.Output, error) {
	ext := "cif"
	if p.params.OutputFormat == "pdb" {
		ext = "pdb"
	}
	o := &outcome{dir: filepath.Join(p.out, "boltz_results_inputs"), ext: ext, samples: p.params.DiffusionSamples,
		writePAE: p.params.WritePAE, mon: p.mon, recursed: p.recursed, crash: exit, wall: time.Since(p.started)}
	results := make([]*result, len(p.targets))
	for i, t := range p.targets {
		results[i] = o.read(t)
	}
	o.runtimes(results)
	p.keepAlignments(o.dir)
	targets := make([]toolkit.Target, len(results))
	for i, r := range results {
		targets[i] = r.Target
	}
	return toolkit.Predictions("boltz", targets, exit)
}

// planTarget decides where each protein chain's alignment comes from and writes the
// inline ones to files.
func planTarget(cx *bio.Complex, useServer bool, server string, cache *msacache.Cache, files string) (*target, error) {
	t := &target{cx: cx, msas: make([]string, len(cx.Entities))}
	groups := boltzEntities(cx)
	var auto []int // entities searched on the server unless cached
	for i, en := range cx.Entities {
		if en.Kind != bio.Protein {
			continue
		}
		switch {
		case en.MSA.Source == bio.MSANone || en.MSA.Source == bio.MSAAuto && !useServer:
			t.msas[i] = "empty"
		case en.MSA.Source == bio.MSAInline:
			// One file per Boltz entity: Boltz skips an input whose copies of one sequence
			// name different MSA files, and CheckInput has made sure their texts agree.
			p := filepath.Join(files, fmt.Sprintf("%s_msa%d.%s", cx.Name, groups[i]+1, en.MSA.Format))
			if err := os.WriteFile(p, []byte(en.MSA.Text), 0o644); err != nil {
				return nil, err
			}
			t.msas[i], t.msa = p, true
		default:
			auto = append(auto, i)
		}
	}
	if len(auto) == 0 {
		return t, nil
	}
	t.msa = true
	pos := map[int]int{} // Boltz entity → index in t.auto
	for _, i := range auto {
		if _, ok := pos[groups[i]]; !ok {
			pos[groups[i]] = len(t.auto)
			t.auto = append(t.auto, groups[i])
			t.autoSeqs = append(t.autoSeqs, cx.Entities[i].Sequence)
		}
	}
	t.cacheKey = cacheKey(server, t.autoSeqs)
	cached := make(map[string]string, len(t.auto))
	for i := range t.auto {
		cached[strconv.Itoa(i)+".csv"] = filepath.Join(files, fmt.Sprintf("%s_cached_%d.csv", cx.Name, i))
	}
	if cache.Get(t.cacheKey, cached) {
		t.cached = true
		for _, i := range auto {
			t.msas[i] = cached[strconv.Itoa(pos[groups[i]])+".csv"]
		}
	}
	return t, nil
}

// pairingStrategy is Boltz's default --msa_pairing_strategy, which this engine keeps.
const pairingStrategy = "greedy"

// cacheKey names in the alignment cache the search of seqs, in that order, on server: an
// entry holds the CSV files Boltz wrote into msa/ for it, one per protein entity
// (<i>.csv), rows paired across entities by key.
func cacheKey(server string, seqs []string) string {
	return msacache.Key(append([]string{"boltz msa v1", server, pairingStrategy}, seqs...)...)
}

// keepAlignments stores the alignments Boltz searched in this run in the cache: the CSV
// files it wrote to msa/<target>_<entity>.csv. A failure to cache costs only a search.
func (p *prediction) keepAlignments(dir string) {
	for _, t := range p.targets {
		if len(t.auto) == 0 || t.cached {
			continue
		}
		files := make(map[string]string, len(t.auto))
		complete := true
		for i, g := range t.auto {
			path := filepath.Join(dir, "msa", fmt.Sprintf("%s_%d.csv", t.cx.Name, g))
			files[strconv.Itoa(i)+".csv"] = path
			if info, err := os.Stat(path); err != nil || info.Size() == 0 {
				complete = false
			}
		}
		if !complete {
			continue
		}
		if err := p.cache.Put(t.cacheKey, files); err != nil {
			fmt.Fprintf(p.log, "[chaperone] keeping the alignments of %s for later jobs failed: %v\n", t.cx.Name, err)
		}
	}
}

// msaNote says where the job's alignments come from, for the run log.
func (p *prediction) msaNote() string {
	var parts []string
	if p.searching {
		parts = append(parts, "searched on "+p.cfg.MSAServerURL)
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
