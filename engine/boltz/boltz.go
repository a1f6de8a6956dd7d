// Package boltz is the engine of the catalog's boltz2: it drives the Boltz-2 command-line
// tool (github.com/jwohlwend/boltz, `boltz predict`) exactly as Boltz's own source reads
// its options and inputs.
//
// A job is one boltz predict run over a folder of YAML inputs, one per target, so the
// weights load once per job. Every target is first parsed into a bio.Complex (the job's
// input as stored, parsed again by catalog.Complexes) and written back as Boltz YAML that
// names no file the caller gave: alignments and templates sent inline become files of the
// run, alignments searched before come from a cache, and the rest is searched on the
// operator's MSA server. Afterwards the engine reads what Boltz wrote, target by target,
// and does not trust the exit status: Boltz exits 0 after skipping an input it could not
// process or running out of memory on it, and such a target gets a failed row with Boltz's
// own message. Imports: engine, job, bio, catalog (for parsing the stored input).
package boltz

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/chaperone-bio/chaperone/bio"
	"github.com/chaperone-bio/chaperone/catalog"
	"github.com/chaperone-bio/chaperone/engine"
)

// Config is an engine's setup on one worker.
type Config struct {
	// MSAServerURL is the ColabFold-compatible MMseqs2 server Boltz searches alignments on
	// (--msa_server_url); default catalog.DefaultMSAServer. Credentials for a private one
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
	cfg Config

	mu      sync.Mutex
	checked string // the boltz executable that last passed Check, with its size and time
}

// New returns an engine with the given setup.
func New(cfg Config) *Engine {
	if cfg.MSAServerURL == "" {
		cfg.MSAServerURL = catalog.DefaultMSAServer
	}
	if cfg.MSACacheBytes == 0 {
		cfg.MSACacheBytes = 2 << 30
	}
	return &Engine{cfg: cfg}
}

func (e *Engine) Name() string     { return "boltz" }
func (e *Engine) Models() []string { return []string{"boltz2"} }

// options are the options of boltz predict this engine passes; Check makes sure the
// installed Boltz has every one.
var options = []string{"--out_dir", "--accelerator", "--recycling_steps", "--sampling_steps", "--diffusion_samples",
	"--output_format", "--override", "--use_msa_server", "--msa_server_url", "--no_kernels"}

// checkTimeout bounds the self-check: boltz --help imports torch, which takes seconds.
const checkTimeout = 2 * time.Minute

// Check finds the boltz command and runs `boltz predict --help`, which must succeed and
// list every option the engine uses. A command that passed is not run again until its
// file changes, as the worker checks engines every minute.
func (e *Engine) Check(ctx context.Context, tools engine.Tools) error {
	path, err := tool(tools)
	if err != nil {
		return err
	}
	info, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("the boltz command %s: %w", path, err)
	}
	stamp := fmt.Sprintf("%s %d %d", path, info.Size(), info.ModTime().UnixNano())
	e.mu.Lock()
	done := e.checked == stamp
	e.mu.Unlock()
	if done {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "predict", "--help")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s predict --help failed (%v): %s", path, err, lastLines(string(out), 5))
	}
	for _, opt := range options {
		if !strings.Contains(string(out), opt) {
			return fmt.Errorf("%s predict has no %s option; this engine needs Boltz 2 (pip install -U boltz)", path, opt)
		}
	}
	e.mu.Lock()
	e.checked = stamp
	e.mu.Unlock()
	return nil
}

// tool is the boltz executable: the operator's path, else the command on PATH.
func tool(tools engine.Tools) (string, error) {
	if p := tools["boltz"]; p != "" {
		return p, nil
	}
	p, err := exec.LookPath("boltz")
	if err != nil {
		return "", fmt.Errorf(`the boltz command is not on PATH; install Boltz-2 (pip install "boltz[cuda]") or give its path with --tool boltz=PATH`)
	}
	return p, nil
}

// Run predicts every target of the job in one boltz predict run.
func (e *Engine) Run(ctx context.Context, run *engine.Run) (*engine.Output, error) {
	path, err := tool(run.Tools)
	if err != nil {
		return nil, err
	}
	complexes, err := catalog.Complexes(run.Job.Input)
	if err != nil {
		return nil, fmt.Errorf("reading the job's input: %w", err)
	}
	params := run.Job.Params
	work, err := filepath.Abs(run.WorkDir)
	if err != nil {
		return nil, err
	}
	inputs, files, out := filepath.Join(work, "inputs"), filepath.Join(work, "files"), filepath.Join(work, "out")
	for _, d := range []string{inputs, files, out} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	cache := &msaCache{limit: e.cfg.MSACacheBytes}
	if run.CacheDir != "" {
		cache.dir = filepath.Join(run.CacheDir, "msa")
	}
	useServer := params["use_msa_server"] == true
	targets := make([]*target, len(complexes))
	searching, affinity, fromCache := false, false, 0
	for i, cx := range complexes {
		t, err := e.plan(cx, useServer, cache, files)
		if err != nil {
			return nil, err
		}
		if err := writeYAML(inputs, files, t); err != nil {
			return nil, fmt.Errorf("writing the Boltz input of %s: %w", cx.Name, err)
		}
		targets[i] = t
		searching = searching || len(t.auto) > 0 && !t.cached
		affinity = affinity || cx.Affinity != nil
		if t.cached {
			fromCache++
		}
	}

	samples, ok := intParam(params, "diffusion_samples")
	if !ok {
		samples = 1
	}
	format, ext := "mmcif", "cif"
	if params["output_format"] == "pdb" {
		format, ext = "pdb", "pdb"
	}
	accelerator := "cpu"
	if e.cfg.GPU {
		accelerator = "gpu"
	}
	args := []string{"predict", inputs, "--out_dir", out, "--accelerator", accelerator,
		"--diffusion_samples", strconv.Itoa(samples), "--output_format", format, "--override"}
	// Steps the caller left out are Boltz's own (3 recycles, 200 sampling steps).
	for _, p := range []string{"recycling_steps", "sampling_steps"} {
		if v, ok := intParam(params, p); ok {
			args = append(args, "--"+p, strconv.Itoa(v))
		}
	}
	if params["fast"] == false {
		args = append(args, "--no_kernels")
	}
	if searching {
		args = append(args, "--use_msa_server", "--msa_server_url", e.cfg.MSAServerURL)
	}
	fmt.Fprintf(run.Log, "[chaperone] boltz predict: %d target(s) on %s; alignments: %s\n",
		len(targets), accelerator, msaNote(useServer, searching, fromCache, e.cfg.MSAServerURL))

	mon := newMonitor(run.Report, len(targets), searching, affinity)
	started := time.Now()
	err = run.Exec(ctx, engine.Command{Path: path, Args: args, OnLine: mon.line})
	o := &outcome{dir: filepath.Join(out, "boltz_results_inputs"), ext: ext, samples: samples, mon: mon,
		crash: err, wall: time.Since(started)}
	if ctx.Err() != nil || errors.Is(err, exec.ErrNotFound) {
		return nil, err
	}
	results := make([]*result, len(targets))
	for i, t := range targets {
		results[i] = o.read(t)
	}
	o.runtimes(results)
	e.keepAlignments(targets, o.dir, cache, run)
	return output(results, o.crash)
}

// plan decides where each protein chain's alignment comes from and writes the inline ones
// to files.
func (e *Engine) plan(cx *bio.Complex, useServer bool, cache *msaCache, files string) (*target, error) {
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
			// name different MSA files, and the catalog has checked that their texts agree.
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
	t.cacheKey = cacheKey(e.cfg.MSAServerURL, t.autoSeqs)
	if paths, ok := cache.lookup(t.cacheKey, len(t.auto), files, cx.Name+"_cached"); ok {
		t.cached = true
		for _, i := range auto {
			t.msas[i] = paths[pos[groups[i]]]
		}
	}
	return t, nil
}

// keepAlignments stores the alignments Boltz searched in this run in the cache: the CSV
// files it wrote to msa/<target>_<entity>.csv. A failure to cache costs only a search.
func (e *Engine) keepAlignments(targets []*target, dir string, cache *msaCache, run *engine.Run) {
	for _, t := range targets {
		if len(t.auto) == 0 || t.cached {
			continue
		}
		files := make([]string, len(t.auto))
		complete := true
		for i, g := range t.auto {
			files[i] = filepath.Join(dir, "msa", fmt.Sprintf("%s_%d.csv", t.cx.Name, g))
			if info, err := os.Stat(files[i]); err != nil || info.Size() == 0 {
				complete = false
			}
		}
		if !complete {
			continue
		}
		if err := cache.store(t.cacheKey, files); err != nil {
			fmt.Fprintf(run.Log, "[chaperone] keeping the alignments of %s for later jobs failed: %v\n", t.cx.Name, err)
		}
	}
}

// output gathers the rows and files; a job of which no target succeeded fails.
func output(results []*result, crash error) (*engine.Output, error) {
	out := &engine.Output{}
	paths := map[string]string{}
	var failures []string
	for _, r := range results {
		out.Rows = append(out.Rows, r.row)
		if r.row["status"] != "ok" {
			failures = append(failures, fmt.Sprintf("%s: %s", r.row["id"], r.row["error"]))
		}
		for _, f := range r.files {
			// Target names are checked at submit so that no two files share a path; a
			// clash here would silently replace one target's file with another's.
			key := strings.ToLower(f.Path)
			if other, ok := paths[key]; ok {
				return nil, fmt.Errorf("targets %s and %s both have a result file %s", other, f.Target, f.Path)
			}
			paths[key] = f.Target
			out.Files = append(out.Files, f)
		}
	}
	if len(failures) < len(results) {
		return out, nil
	}
	if crash != nil {
		return nil, fmt.Errorf("boltz failed: %w", crash)
	}
	msg := strings.Join(failures, "; ")
	if len(msg) > 2000 {
		msg = msg[:2000] + "…"
	}
	return nil, fmt.Errorf("boltz predicted none of the %d target(s): %s", len(results), msg)
}

// msaNote says where the job's alignments come from, for the run log.
func msaNote(useServer, searching bool, fromCache int, server string) string {
	var parts []string
	if searching {
		parts = append(parts, "searched on "+server)
	}
	if fromCache > 0 {
		parts = append(parts, fmt.Sprintf("%d target(s) from the cache", fromCache))
	}
	if !useServer {
		parts = append(parts, "single-sequence unless sent with the input (use_msa_server is off)")
	}
	if len(parts) == 0 {
		return "as sent with the input"
	}
	return strings.Join(parts, "; ")
}

// intParam reads an integer param: an int as the catalog accepted it, or a float64 as
// it comes back from the job store's JSON.
func intParam(params map[string]any, name string) (int, bool) {
	switch v := params[name].(type) {
	case int:
		return v, true
	case float64:
		return int(v), true
	}
	return 0, false
}

// lastLines is the end of a tool's output, for an error message.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
