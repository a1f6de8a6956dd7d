// Package openfold3test provides a stand-in for OpenFold3's run_openfold command, for tests
// of the openfold3 engine: a small program (./run_openfold) that accepts exactly the click
// options of `run_openfold predict` (an unknown one is click's usage error), reads the
// query JSON and runner YAML as OpenFold3's pydantic models do (unknown keys are errors),
// refuses to search alignments or templates on a server (use_msa_server or use_templates
// on, on the command line or else in the runner YAML, whose default is on), reads each
// chain's precomputed alignment files where and as OpenFold3 0.5 does and prints what it
// read, and writes OpenFold3's output layout, file names and JSON keys with made-up
// numbers: samples unranked, summary.txt with its failed queries,
// logs/predict_err_rank0.log. A query whose alignments OpenFold3 could not read fails as
// OpenFold3 fails it. Query names choose how it misbehaves, as the prefixes below say. It
// is a fixture: tests build and use it; a running chaperone never does.
package openfold3test

import "github.com/chaperone-bio/chaperone/internal/standin"

// Behaviours, chosen by the start of a query's name (the target's name):
//
//	fail…       featurising it fails (OpenFold3 logs a traceback, lists it as failed, exits 0)
//	oom…        the prediction step runs out of memory on it (logged, listed, exit 0)
//	crash…      the run dies with a traceback and exit status 1 when it reaches it
//	slow…       its prediction takes 30 s, printing progress, with a helper process that
//	            ignores SIGTERM (its pid in hang.pid in the working folder)
const (
	Fail  = "fail"
	OOM   = "oom"
	Crash = "crash"
	Slow  = "slow"
)

// Build compiles the stand-in into dir and returns the path of the run_openfold executable.
func Build(dir string) (string, error) { return standin.Build(dir, "run_openfold") }
