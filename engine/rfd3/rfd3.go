// Package rfd3 is the engine of the catalog's rfd3 model and its three protocols: it drives
// RFdiffusion3's command line (RosettaCommons/foundry, models/rfd3, `rfd3 design`), whose
// arguments are Hydra overrides (key=value) of its inference config.
//
// A job is one rfd3 design run over a spec JSON of one design specification: the request's
// structure written beside it as its input, and the contig as checked at submit. The
// number of designs is exact: diffusion_batch_size times n_batches is num_designs.
// RFdiffusion3 validates a specification only when it reaches it and may stop half way, so
// the engine trusts only the files it finds: every <spec>_<key>_<batch>_model_<n>.cif.gz
// and its .json. Designs are unranked; each is served as a decompressed .cif with its
// sequence read from that structure (the chains the contig designs), and its metrics are
// the JSON's metrics, RFdiffusion3's geometric self-checks, never a confidence. Imports:
// engine, engine/toolkit, job, bio.
package rfd3

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/chaperone-bio/chaperone/bio"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/toolkit"
	"github.com/chaperone-bio/chaperone/job"
)

// Engine runs rfd3 jobs with the rfd3 command.
type Engine struct {
	tool *toolkit.Tool
}

// New returns the engine.
func New() *Engine {
	// rfd3 design --help is typer's and lists no Hydra key, so the check is that it runs.
	return &Engine{tool: &toolkit.Tool{
		Name:       "rfd3",
		Install:    `RFdiffusion3 (pip install "rc-foundry[rfd3]"; foundry install rfd3)`,
		Subcommand: []string{"design"},
		Needs:      "rc-foundry 0.2 (pip install -U \"rc-foundry[rfd3]\")",
	}}
}

func (e *Engine) Name() string     { return e.tool.Name }
func (e *Engine) Models() []string { return []string{"rfd3"} }

// Check finds the rfd3 command and checks that `rfd3 design --help` runs.
func (e *Engine) Check(ctx context.Context, tools engine.Tools) error {
	return e.tool.Check(ctx, tools)
}

// Run designs with one rfd3 design run.
func (e *Engine) Run(ctx context.Context, run *engine.Run) (*engine.Output, error) {
	return toolkit.RunSteps(ctx, run, e.tool, e.plan)
}

type params struct {
	NumDesigns   int `json:"num_designs"`
	NumTimesteps int `json:"num_timesteps"`
	Seed         int `json:"seed"`
}

// specKey is the name of the one design specification in the spec JSON; RFdiffusion3
// names its outputs <spec file stem>_<key>_<batch>_model_<n>.
const specKey = "design"

// defaultBatch is RFdiffusion3's own diffusion_batch_size, the most designs per batch.
const defaultBatch = 8

type design struct {
	log       io.Writer
	report    func(job.Progress)
	protocol  string
	params    params
	contig    bio.Contig
	structure string
	format    string // of the structure: bio.PDB or bio.MMCIF
	dir       string // the spec, its structure and the outputs
	batch     int    // diffusion_batch_size
	batches   int    // n_batches
	mon       *monitor
}

func (e *Engine) plan(run *engine.Run, work string) (toolkit.Steps, error) {
	j := run.Job
	p := params{NumDesigns: 4, NumTimesteps: 100, Seed: 42}
	if err := toolkit.DecodeParams(j.Params, &p); err != nil {
		return nil, err
	}
	contig, err := bio.ParseContig(j.Input.Contig)
	if err != nil {
		return nil, fmt.Errorf("reading the job's contig: %w", err)
	}
	d := &design{log: run.Log, report: run.Report, protocol: j.Protocol, params: p, contig: contig,
		structure: j.Input.Structure, format: bio.StructureFormat(j.Input.Structure), dir: work}
	d.batch, d.batches = batches(p.NumDesigns)
	return d, nil
}

// batches splits n designs into batches of equal size, at most RFdiffusion3's default
// batch, so that batch × batches is exactly n.
func batches(n int) (size, count int) {
	for size = min(n, defaultBatch); size > 1; size-- {
		if n%size == 0 {
			break
		}
	}
	return max(size, 1), n / max(size, 1)
}

func (d *design) specPath() string      { return filepath.Join(d.dir, "spec.json") }
func (d *design) structurePath() string { return filepath.Join(d.dir, "target."+d.format) }
func (d *design) outDir() string        { return filepath.Join(d.dir, "out") }

// WriteInputs writes the structure and, beside it, the spec JSON naming it.
func (d *design) WriteInputs() error {
	if err := os.WriteFile(d.structurePath(), []byte(d.structure), 0o644); err != nil {
		return err
	}
	spec := map[string]any{"input": d.structurePath(), "contig": d.contig.String()}
	// Binders are asked for fewer loops, as RFdiffusion3's binder examples do.
	if d.protocol == "rfd3-binder" || d.protocol == "rfd3-na-binder" {
		spec["is_non_loopy"] = true
	}
	b, err := json.MarshalIndent(map[string]any{specKey: spec}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(d.specPath(), append(b, '\n'), 0o644)
}

// Command is rfd3 design with the overrides that make the run exact and reproducible. The
// spec and the output folder are named relative to the work folder, where the command runs:
// Hydra's override grammar misreads a path with ",", "=" or brackets (a comma makes it a
// sweep), and rfd3 splits inputs at commas itself (rfd3/engine.py:442,486).
func (d *design) Command() engine.Command {
	args := []string{"design", "inputs=" + filepath.Base(d.specPath()), "out_dir=" + filepath.Base(d.outDir()),
		"diffusion_batch_size=" + strconv.Itoa(d.batch), "n_batches=" + strconv.Itoa(d.batches),
		"inference_sampler.num_timesteps=" + strconv.Itoa(d.params.NumTimesteps), "seed=" + strconv.Itoa(d.params.Seed),
		"skip_existing=False"}
	fmt.Fprintf(d.log, "[chaperone] rfd3 design: %s, contig %s, %d designs (%d batches of %d), %d steps, seed %d\n",
		d.protocol, d.contig, d.params.NumDesigns, d.batches, d.batch, d.params.NumTimesteps, d.params.Seed)
	d.mon = newMonitor(d.report, d.params.NumDesigns)
	return engine.Command{Args: args, OnLine: d.mon.line}
}

// Results reads every design the run must have written.
func (d *design) Results(exit error) (*engine.Output, error) {
	d.mon.set(job.StageWriting)
	stem := strings.TrimSuffix(filepath.Base(d.specPath()), ".json")
	designed := designedChains(d.contig)
	out := &engine.Output{}
	designs := filepath.Join(d.dir, "designs")
	if err := os.MkdirAll(designs, 0o755); err != nil {
		return nil, err
	}
	k := 0
	for b := range d.batches {
		for m := range d.batch {
			k++
			base := filepath.Join(d.outDir(), fmt.Sprintf("%s_%s_%d_model_%d", stem, specKey, b, m))
			id := fmt.Sprintf("design%d", k)
			cif := filepath.Join(designs, id+".cif")
			if err := gunzip(base+".cif.gz", cif); err != nil {
				return nil, d.missing(exit, k-1, err)
			}
			var meta struct {
				Metrics map[string]any `json:"metrics"`
			}
			if err := toolkit.ReadPythonJSON(base+".json", &meta); err != nil {
				return nil, d.missing(exit, k-1, err)
			}
			seq, err := sequence(cif, designed)
			if err != nil {
				return nil, fmt.Errorf("rfd3 design %s (%s.cif.gz): %w", id, filepath.Base(base), err)
			}
			path := "designs/" + id + ".cif"
			out.Designs = append(out.Designs, job.Design{ID: id, Sequence: seq, File: path, Metrics: meta.Metrics})
			out.Files = append(out.Files, toolkit.Artifact(path, id, job.ArtifactStructure, cif),
				toolkit.Artifact("designs/"+id+".json", id, job.ArtifactMetrics, base+".json"))
		}
	}
	d.mon.finish()
	return out, nil
}

// missing is the error of a run that wrote fewer designs than asked, in rfd3's words
// where it printed any.
func (d *design) missing(exit error, written int, err error) error {
	what := fmt.Sprintf("rfd3 wrote %d of the %d designs", written, d.params.NumDesigns)
	if why := d.mon.failure(); why != "" {
		return fmt.Errorf("%s: %s", what, why)
	}
	if exit != nil {
		return fmt.Errorf("%s: %w", what, exit)
	}
	return fmt.Errorf("%s: %v", what, err)
}

// designedChain is an output chain that holds designed residues; it may be absent from a
// design when every segment on it is designed and may be left out (0-40).
type designedChain struct {
	id         string
	mayBeEmpty bool
}

// designedChains are the output chains that hold designed residues: RFdiffusion3 names
// the chains of its output A, B, … in contig order, a new one after every /0.
func designedChains(c bio.Contig) []designedChain {
	var chains []designedChain
	chain, designed, mayBeEmpty := 'A', false, true
	end := func() {
		if designed {
			chains = append(chains, designedChain{id: string(chain), mayBeEmpty: mayBeEmpty})
		}
		chain, designed, mayBeEmpty = chain+1, false, true
	}
	for _, s := range c {
		switch {
		case s.Break:
			end()
		case s.Chain == "":
			designed = true
			mayBeEmpty = mayBeEmpty && s.Min == 0
		default:
			mayBeEmpty = false
		}
	}
	end()
	return chains
}

// sequence reads the sequence of the designed chains from a design's structure, joined by
// "/" when there are several.
func sequence(cif string, chains []designedChain) (string, error) {
	b, err := os.ReadFile(cif)
	if err != nil {
		return "", err
	}
	s, err := bio.ReadStructure(string(b))
	if err != nil {
		return "", err
	}
	var seqs []string
	for _, dc := range chains {
		c, ok := s.Chain(dc.id)
		switch {
		case ok:
			seqs = append(seqs, c.Sequence())
		case dc.mayBeEmpty:
			seqs = append(seqs, "")
		default:
			return "", fmt.Errorf("the design has no chain %s, which the contig designs; its chains are %s", dc.id, s.Describe())
		}
	}
	return strings.Join(seqs, "/"), nil
}

// gunzip decompresses src into dst.
func gunzip(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	z, err := gzip.NewReader(in)
	if err != nil {
		return fmt.Errorf("%s: %w", filepath.Base(src), err)
	}
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, z); err != nil {
		out.Close()
		return fmt.Errorf("%s: %w", filepath.Base(src), err)
	}
	return out.Close()
}
