// Package protenixtest provides stand-ins for the protenix and opendde commands, for tests
// of the protenix engine: one small program that, built as protenix or as opendde, accepts
// exactly the options of that tool's `pred` (an unknown one is click's usage error), reads
// the input JSON as the tool does, and writes its output layout, file names and JSON keys
// with made-up numbers. It never searches alignments: an input file with a protein chain
// that names no alignment file (or a missing one) fails as a whole, with --use_msa. It
// reads the alignment files the input names, failing a target whose file is missing or
// does not start with its chain, and logs for each target the N_msa that the tools'
// featurizer would give those files (pairing rows across chains by the species in their
// headers). Target names choose how it misbehaves, as the prefixes below say.
// It is a fixture: tests build and use it; a running chaperone never does.
package protenixtest

import "github.com/chaperone-bio/chaperone/internal/standin"

// Behaviours, chosen by the start of a target's name:
//
//	fail…     featurising it fails: a data error in ERR/<name>.txt, and the run goes on
//	oom…      the model runs out of CUDA memory on it: ERR/<name>.txt, and the run goes on
//	crash…    the run dies with a traceback and exit status 1 when it reaches the target
//	slow…     the model takes 30 s on it, printing progress, with a helper process that
//	          ignores SIGTERM (its pid in hang.pid in the working folder)
const (
	Fail  = "fail"
	OOM   = "oom"
	Crash = "crash"
	Slow  = "slow"
)

// Tools the stand-in can be built as.
const (
	Protenix = "protenix"
	OpenDDE  = "opendde"
)

// Build compiles the stand-in into dir as the command tool (Protenix or OpenDDE) and
// returns the path of the executable.
func Build(dir, tool string) (string, error) { return standin.BuildAs(dir, "standin", tool) }
