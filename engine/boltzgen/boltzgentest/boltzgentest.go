// Package boltzgentest provides a stand-in for the boltzgen command, for tests of the
// boltzgen engine: a small program (./boltzgen) that parses `boltzgen run` exactly as
// BoltzGen's argparse parser does (an unknown option, a bad choice or a missing spec is
// argparse's usage error, exit status 2), reads the design spec and the files it names,
// runs the pipeline's steps as subprocesses that print BoltzGen's banners and progress
// bars, and writes BoltzGen's output layout, file names and CSV columns with made-up
// numbers, deterministically from the spec. It is a fixture: tests build and use it; a
// running chaperone never does.
package boltzgentest

import "github.com/chaperone-bio/chaperone/internal/standin"

// Behaviours, chosen by a comment in the spec, "# boltzgentest: <behaviour>":
//
//	crash      the design step dies with a CUDA error; boltzgen raises CalledProcessError, exit 1
//	oom        the folding step runs out of GPU memory; boltzgen exits 1
//	nofinal    the filtering step writes nothing and exits 0, and so does boltzgen
//	filtered   no design passes the filters: as in BoltzGen (task/filter/filter.py:396-630)
//	           the final set still holds the budget of designs, each with pass_filters False
//	slow       the design step takes 0.2 s per design
//	hang       the design step works for five minutes, printing progress, with a helper
//	           process that ignores SIGTERM
const (
	Crash    = "crash"
	OOM      = "oom"
	NoFinal  = "nofinal"
	Filtered = "filtered"
	Slow     = "slow"
	Hang     = "hang"
)

// Marker is the comment that chooses a behaviour: Marker + Crash, for example.
const Marker = "# boltzgentest: "

// Build compiles the stand-in into dir and returns the path of the boltzgen executable.
func Build(dir string) (string, error) { return standin.Build(dir, "boltzgen") }
