// Package rfd3test provides a stand-in for the rfd3 command, for tests of the rfd3 engine:
// a small program (./rfd3) that takes `rfd3 design` with Hydra overrides exactly as
// RFdiffusion3's inference config defines them (an unknown key, a value of the wrong type
// or a missing mandatory inputs or out_dir is Hydra's error, exit status 1), reads the spec
// JSON and the structure it names, and writes RFdiffusion3's outputs
// (<spec>_<key>_<batch>_model_<n>.cif.gz and .json with its metrics keys). Designs are made
// up deterministically from the seed, the spec and their place, so the same seed gives the
// same designs. It is a fixture: tests build and use it; a running chaperone never does.
package rfd3test

import "github.com/chaperone-bio/chaperone/internal/standin"

// Behaviours, chosen by a line of the input structure that holds Marker and the behaviour
// (a PDB REMARK, an mmCIF comment):
//
//	crash    the run dies with a CUDA error before any design, exit 1
//	oom      the second batch runs out of GPU memory, exit 1, after the first is written
//	invalid  the specification fails validation when the run reaches it, exit 1
//	hang     the run works for five minutes, logging, with a helper process that ignores SIGTERM
const (
	Crash   = "crash"
	OOM     = "oom"
	Invalid = "invalid"
	Hang    = "hang"
)

// Marker precedes the behaviour in the structure.
const Marker = "rfd3test: "

// Build compiles the stand-in into dir and returns the path of the rfd3 executable.
func Build(dir string) (string, error) { return standin.Build(dir, "rfd3") }
