// Package boltztest provides a stand-in for the boltz command, for tests of the boltz
// engine: a small program (./boltz) that accepts exactly the options of Boltz's
// `boltz predict` (an unknown one is click's usage error), reads the YAML inputs and the
// alignment files they name as Boltz does (recording the rows it read, per chain, in
// processed/msa/<target>_<n>.json, which the processed record's msa_id names), and writes
// Boltz's output layout, file names and JSON keys with made-up numbers. It refuses
// --use_msa_server, which Boltz accepts, so that a run on it proves the engine never lets
// Boltz search alignments itself. Target names choose how it misbehaves, as the prefixes
// below say. It is a fixture: tests build and use it; a running chaperone never does.
package boltztest

import "github.com/chaperone-bio/chaperone/internal/standin"

// Behaviours, chosen by the start of a target's name (its input file's stem):
//
//	skip…    processing fails, and the stand-in prints Boltz's "Failed to process … Skipping"
//	oom…     the structure loop runs out of memory on it (Boltz goes on and exits 0)
//	affoom…  the affinity loop runs out of memory on it
//	unprep…  the structure loop cannot prepare it for the model: Boltz's "Featurizer failed
//	         on … Skipping", then the loop's first target is predicted again in its place;
//	         when it is the first target itself, that repeats without end, as in Boltz,
//	         until Python's recursion limit (a thousand times) ends the run with status 1
//	crash…   the run dies with a traceback and exit status 1 when it reaches the target
//	slow…    the structure loop takes 30 s on it, printing progress, with a helper process
//	         that ignores SIGTERM (its pid in hang.pid in the working folder)
const (
	Skip        = "skip"
	OOM         = "oom"
	AffinityOOM = "affoom"
	Unprepared  = "unprep"
	Crash       = "crash"
	Slow        = "slow"
)

// Build compiles the stand-in into dir and returns the path of the boltz executable.
func Build(dir string) (string, error) { return standin.Build(dir, "boltz") }
