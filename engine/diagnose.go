package engine

import (
	"context"
	"strings"
)

// Diagnoser is implemented by an engine that can say, beside Check, what `chaperone doctor`
// reports of its tool on this machine: where it looked for the tool and what it found, the
// tool's version against the versions the engine was written for, the weights its models
// load, and the GPU memory each model needs. Diagnose never refuses: what it cannot
// determine it reports as unknown, with why. It may run the tool's interpreter, so it
// takes seconds; the worker calls it once at start, doctor once per run.
type Diagnoser interface {
	Diagnose(ctx context.Context, tools Tools) Diagnosis
}

// Diagnosis is what an engine knows of its tool on this machine.
type Diagnosis struct {
	// Tool is the executable found (for a Python-API engine, its interpreter); "" when none
	// was. Looked says where the engine looked, for example "--tool boltz=/opt/boltz" or
	// "boltz on PATH".
	Tool   string
	Looked string
	// Version is the tool's version as installed; "" when unknown, and VersionUnknown then
	// says why.
	Version        string
	VersionUnknown string
	// Tested are the versions the engine was written and tested against: an entry "2.2"
	// covers 2.2 and every 2.2.x.
	Tested []string
	// Weights are the files the engine's models load, each as found on this machine.
	Weights []Weights
	// Memory is, per model of the engine, the GPU memory it needs.
	Memory map[string]Memory
}

// VersionTested reports whether the installed version is one the engine was tested
// against; false also when the version is unknown.
func (d Diagnosis) VersionTested() bool {
	for _, t := range d.Tested {
		if d.Version == t || strings.HasPrefix(d.Version, t+".") {
			return true
		}
	}
	return false
}

// WeightsState is whether a weights file was found.
type WeightsState string

const (
	WeightsPresent WeightsState = "present"
	WeightsMissing WeightsState = "missing"
	// WeightsUnknown: the engine cannot tell where the tool keeps it (Note says why).
	WeightsUnknown WeightsState = "unknown"
)

// Weights is one file (or folder) of weights a model loads.
type Weights struct {
	// Models are the catalog models that load it.
	Models []string `json:"models"`
	// Name says what it is, for example "boltz2_conf.ckpt (Boltz-2's structure model)".
	Name  string       `json:"name"`
	Path  string       `json:"path"` // where it was found, or where the tool looks for it
	State WeightsState `json:"state"`
	// Fetched says the tool downloads it itself on first use, which needs internet on the
	// worker; else the model cannot run without it.
	Fetched bool `json:"fetched_by_tool"`
	// Fetch says how to get it on a machine with internet, for copying to one without.
	Fetch string `json:"fetch"`
	Note  string `json:"note"`
}

// Memory is the GPU memory one model needs.
type Memory struct {
	// GB is the figure in gigabytes (10⁹ bytes, as upstream tools state theirs); 0 when
	// unknown.
	GB float64
	// Basis says what the figure is and where it comes from (or why it is unknown).
	Basis string
}
