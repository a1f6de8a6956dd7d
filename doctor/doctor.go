// Package doctor checks a machine as a chaperone worker, for `chaperone doctor` and for the
// worker's own account of itself at start: for every engine, its tool (where it was looked
// for, its version against the versions the engine was tested with, its self-check, its
// weights) and, for every model, whether it can run here and the one reason that matters;
// then the machine: its GPUs and their memory against each model's need, the alignment
// server, free disk in the data folder and, given a server, that it answers, accepts the
// worker token and offers the models that can run here.
//
// A model's reason uses the words the catalog shows for it (engine.PublicReason): what
// doctor prints is what GET /v1/models will say. It imports engine and client (the Go SDK,
// for the server's health and catalog); it asks the server about the worker token with
// one request of its own (server.go) rather than through the worker's client
// (worker/remote): the worker side uses doctor (worker/slurm, the worker's start), so
// doctor stands below it and imports nothing of it.
package doctor

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/chaperone-bio/chaperone/engine"
)

// Config is what to check.
type Config struct {
	Engines []engine.Engine
	Tools   engine.Tools
	// DataDir is the worker's data folder, whose free disk is checked.
	DataDir string
	// MSAServer is the alignment server chaperone serve searches on, to check; "" skips it.
	MSAServer string
	// Server and Token, when Server is set, are the server the worker would join.
	Server, Token string
	// GPUs finds the machine's GPUs; default: nvidia-smi on PATH, else /dev/nvidia*.
	GPUs GPUFinder
	// HTTP makes the requests to the alignment server and the server; default a client
	// with a short timeout.
	HTTP *http.Client
}

// Status is a model's or a check's verdict.
type Status string

const (
	OK Status = "ok"
	// Warn: it works, but something may stop it (weights not downloaded yet on a machine
	// that may have no internet, too little GPU memory, an untested version).
	Warn Status = "warn"
	No   Status = "no"
	// Skipped: the check was not made (Reason says why).
	Skipped Status = "skipped"
)

// Report is everything doctor found.
type Report struct {
	Models  []ModelReport  `json:"models"`
	Engines []EngineReport `json:"engines"`
	GPUs    GPUReport      `json:"gpus"`
	MSA     Line           `json:"msa_server"`
	Disk    DiskReport     `json:"disk"`
	// Server is nil without Config.Server.
	Server *ServerReport `json:"server"`
	// Runnable counts the models that can run (ok or warn).
	Runnable int `json:"runnable"`
}

// ModelReport is one model's verdict.
type ModelReport struct {
	Model  string `json:"model"`
	Engine string `json:"engine"`
	Status Status `json:"status"`
	// Reason is the one reason that matters most: why it cannot run, or its first warning;
	// "" when there is nothing to say. For a model that cannot run it is what the catalog
	// will show; Detail is then the operator's full account (paths, the tool's output).
	Reason string `json:"reason"`
	Detail string `json:"detail"`
	// Warnings are every warning, Reason first among them when the model can run.
	Warnings []string `json:"warnings"`
	// GPUMemoryGB is what the model needs on the GPU, null when unknown; GPUMemoryBasis
	// says where the figure comes from.
	GPUMemoryGB    *float64 `json:"gpu_memory_gb"`
	GPUMemoryBasis string   `json:"gpu_memory_basis"`
}

// EngineReport is what one engine found of its tool.
type EngineReport struct {
	Engine string   `json:"engine"`
	Models []string `json:"models"`
	// Tool is the executable found, "" when none; Looked where it was looked for.
	Tool   string `json:"tool"`
	Looked string `json:"looked"`
	// Version is the tool's version, "" when unknown (VersionUnknown says why); Tested the
	// versions the engine was written for.
	Version        string   `json:"version"`
	VersionUnknown string   `json:"version_unknown"`
	Tested         []string `json:"tested_versions"`
	VersionTested  bool     `json:"version_tested"`
	// Check is the engine's self-check: ok, or no with its public reason and its detail.
	Check       Status           `json:"check"`
	CheckReason string           `json:"check_reason"`
	CheckDetail string           `json:"check_detail"`
	Weights     []engine.Weights `json:"weights"`
}

// Line is a check of the machine with one verdict.
type Line struct {
	Status Status `json:"status"`
	Reason string `json:"reason"`
}

// DiskReport is the free disk of the data folder against what a worker needs.
type DiskReport struct {
	Line
	Path   string  `json:"path"`
	FreeGB float64 `json:"free_gb"`
	NeedGB float64 `json:"need_gb"`
}

// ServerReport is what the server the worker would join answers.
type ServerReport struct {
	URL     string `json:"url"`
	Reached Line   `json:"reached"`
	Version string `json:"version"`
	Ready   bool   `json:"ready"`
	Token   Line   `json:"token"`
	// Offered are the models that can run here and that the server's catalog offers;
	// NotOffered those it does not know.
	Offered    []string `json:"offered"`
	NotOffered []string `json:"not_offered"`
}

// Check examines this machine as cfg says.
func Check(ctx context.Context, cfg Config) Report {
	if cfg.GPUs == nil {
		cfg.GPUs = SystemGPUs{}
	}
	if cfg.HTTP == nil {
		cfg.HTTP = &http.Client{Timeout: 5 * time.Second}
	}
	var r Report
	var wg sync.WaitGroup
	wg.Go(func() { r.GPUs = cfg.GPUs.Find(ctx) })
	wg.Go(func() { r.MSA = checkMSA(ctx, cfg.HTTP, cfg.MSAServer) })
	r.Engines = checkEngines(ctx, cfg.Engines, cfg.Tools)
	wg.Wait()
	r.Models = judge(cfg.Engines, r.Engines, diagnoses(ctx, cfg.Engines, cfg.Tools), r.GPUs)
	for _, m := range r.Models {
		if m.Status != No {
			r.Runnable++
		}
	}
	r.Disk = checkDisk(cfg.DataDir)
	if cfg.Server != "" {
		r.Server = checkServer(ctx, cfg, r.Models)
	}
	return r
}

// Models is the verdict on every model of engines alone, without the machine's other
// checks but its GPUs: what a worker logs at start.
func Models(ctx context.Context, engines []engine.Engine, tools engine.Tools, gpus GPUFinder) []ModelReport {
	reports := checkEngines(ctx, engines, tools)
	return judge(engines, reports, diagnoses(ctx, engines, tools), gpus.Find(ctx))
}

// diagnoses asks every engine that can diagnose itself, side by side: each may run its
// tool's interpreter.
func diagnoses(ctx context.Context, engines []engine.Engine, tools engine.Tools) []*engine.Diagnosis {
	out := make([]*engine.Diagnosis, len(engines))
	var wg sync.WaitGroup
	for i, e := range engines {
		if d, ok := e.(engine.Diagnoser); ok {
			wg.Go(func() {
				diag := d.Diagnose(ctx, tools)
				out[i] = &diag
			})
		}
	}
	wg.Wait()
	return out
}

// checkEngines runs every engine's self-check, side by side.
func checkEngines(ctx context.Context, engines []engine.Engine, tools engine.Tools) []EngineReport {
	out := make([]EngineReport, len(engines))
	var wg sync.WaitGroup
	for i, e := range engines {
		wg.Go(func() {
			r := EngineReport{Engine: e.Name(), Models: e.Models(), Check: OK}
			if err := e.Check(ctx, tools); err != nil {
				r.Check, r.CheckReason, r.CheckDetail = No, engine.PublicReason(err), err.Error()
			}
			out[i] = r
		})
	}
	wg.Wait()
	return out
}

// judge fills in each engine's diagnosis and gives every model its verdict.
func judge(engines []engine.Engine, reports []EngineReport, diags []*engine.Diagnosis, gpus GPUReport) []ModelReport {
	var models []ModelReport
	for i := range engines {
		r := &reports[i]
		d := diags[i]
		if d == nil {
			d = &engine.Diagnosis{VersionUnknown: "the engine does not say", Looked: "unknown: the engine does not say"}
		}
		r.Tool, r.Looked, r.Version, r.VersionUnknown = d.Tool, d.Looked, d.Version, d.VersionUnknown
		r.Tested, r.VersionTested, r.Weights = d.Tested, d.VersionTested(), d.Weights
		for _, model := range r.Models {
			models = append(models, judgeModel(model, r, d, gpus))
		}
	}
	return models
}

func judgeModel(model string, r *EngineReport, d *engine.Diagnosis, gpus GPUReport) ModelReport {
	m := ModelReport{Model: model, Engine: r.Engine, Status: OK, Warnings: []string{}}
	need, known := d.Memory[model]
	if known && need.GB > 0 {
		gb := need.GB
		m.GPUMemoryGB = &gb
	}
	m.GPUMemoryBasis = need.Basis
	if !known {
		m.GPUMemoryBasis = "unknown: the engine names no figure"
	}
	if r.Check == No {
		m.Status, m.Reason, m.Detail = No, r.CheckReason, r.CheckDetail
		return m
	}
	for _, w := range d.Weights {
		if w.State == engine.WeightsMissing && slices.Contains(w.Models, model) {
			if w.Fetched {
				m.Warnings = append(m.Warnings, fmt.Sprintf("weights not downloaded yet: %s (the tool fetches them on first use, which needs internet)", w.Name))
			} else {
				m.Warnings = append(m.Warnings, "weights missing: "+w.Name)
			}
		}
	}
	if why := gpus.short(m.GPUMemoryGB); why != "" {
		m.Warnings = append(m.Warnings, why)
	}
	if d.Version != "" && len(d.Tested) > 0 && !d.VersionTested() {
		m.Warnings = append(m.Warnings, fmt.Sprintf("untested version %s (tested with %s)", d.Version, strings.Join(d.Tested, ", ")))
	}
	if len(m.Warnings) > 0 {
		m.Status, m.Reason = Warn, m.Warnings[0]
	}
	return m
}

// checkMSA makes one cheap request to the alignment server: any HTTP answer means it is
// reachable (ColabFold's server has no health endpoint; its root answers).
func checkMSA(ctx context.Context, hc *http.Client, url string) Line {
	if url == "" {
		return Line{Skipped, "not asked to check one (--msa-server): workers never reach an alignment server"}
	}
	start := time.Now()
	status, err := get(ctx, hc, url)
	if err != nil {
		return Line{No, fmt.Sprintf("%s is not reachable: %v", url, err)}
	}
	return Line{OK, fmt.Sprintf("%s answered %d in %s", url, status, time.Since(start).Round(time.Millisecond))}
}

func get(ctx context.Context, hc *http.Client, url string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	res, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	res.Body.Close()
	return res.StatusCode, nil
}
