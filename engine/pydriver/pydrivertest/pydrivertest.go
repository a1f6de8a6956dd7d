// Package pydrivertest gives tests the stand-in model packages of engine/pydriver: esm and
// transformers written on numpy (in ../testdata/standin), with the real import paths, class
// names, signatures and shapes, deterministic values (Value) and sequences that make them
// fail, run out of memory, hang or crash (see the stand-in's _standin.py). They run in
// Debian's /usr/bin/python3 (internal/testpython).
package pydrivertest

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/chaperone-bio/chaperone/internal/testpython"
)

// Interpreter writes into dir an executable that runs Debian's Python with the stand-in
// packages importable and env (NAME=VALUE, the stand-in's STANDIN_* settings) set, as an
// operator's virtual environment would be, and returns its path.
func Interpreter(t testing.TB, dir string, env ...string) string {
	t.Helper()
	python := testpython.Require(t, "numpy")
	_, here, _, _ := runtime.Caller(0)
	standIn := filepath.Join(filepath.Dir(here), "..", "testdata", "standin")
	var script strings.Builder
	fmt.Fprintf(&script, "#!/bin/sh\nexport PYTHONPATH=%q\n", standIn)
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		fmt.Fprintf(&script, "export %s=%q\n", name, value)
	}
	fmt.Fprintf(&script, "exec %s \"$@\"\n", python)
	path := filepath.Join(dir, "python")
	if err := os.WriteFile(path, []byte(script.String()), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// Magic prefixes of a sequence that make a stand-in model misbehave in its forward pass.
const (
	Fail    = "FAIL"    // raises an error
	OOM     = "MEMWALL" // runs out of (GPU) memory
	Hang    = "HANG"    // never returns
	Crash   = "CRASH"   // kills the interpreter with SIGSEGV
	Hanging = "standin: hanging"
)

// The stand-in's token ids: ESM C's vocabulary, and SaProt's (5 specials, then each
// amino-acid letter or # with each 3Di letter or #).
const (
	esmcVocab   = "LAGVSERTIDPKQNFYMHWCXBUZO.-|"
	saprotAA    = "ACDEFGHIKLMNPQRSTVWY#"
	saprotStruc = 21
	clsToken    = 0
	eosToken    = 2
)

// Tokens returns the token ids the model's stand-in gives a sequence, <cls> and <eos>
// included: ESM C's for loader "esmc", SaProt's (every residue <aa>#) for "saprot".
func Tokens(saprot bool, seq string) []int {
	out := []int{clsToken}
	for _, c := range seq {
		if saprot {
			out = append(out, 5+strings.IndexRune(saprotAA, c)*saprotStruc+saprotStruc-1)
		} else {
			out = append(out, 4+strings.IndexRune(esmcVocab, c))
		}
	}
	return append(out, eosToken)
}

// Value is the stand-in's hidden state of token id token at position pos (0 is <cls>),
// feature k.
func Value(token, pos, k int) float32 {
	return float32(float64((token*31+pos*7+k*3)%97)/97.0 - 0.5)
}
