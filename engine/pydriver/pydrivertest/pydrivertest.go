// Package pydrivertest gives tests the stand-in model packages of engine/pydriver: esm and
// transformers written on numpy (in ../testdata/standin), with the real import paths, class
// names, signatures and shapes, deterministic values (Value) and sequences that make them
// fail, run out of memory, hang or crash (see the stand-in's _standin.py). They run in
// Debian's /usr/bin/python3 (internal/testpython).
package pydrivertest

import (
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/chaperone-bio/chaperone/engine/toolkit/npy"
	"github.com/chaperone-bio/chaperone/internal/execfile"
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
	if err := execfile.Write(path, script.String()); err != nil {
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

// Embedding is what the stand-in of a model gives a sequence: per-residue rows [len(seq),
// dModel] in C order, and the pooled vector by pool ("mean", "max" or "cls"), computed in
// float64.
func Embedding(saprot bool, seq, pool string, dModel int) (perResidue []float32, pooled []float64) {
	tokens := Tokens(saprot, seq)
	perResidue = make([]float32, len(seq)*dModel)
	for i := range seq {
		for k := range dModel {
			perResidue[i*dModel+k] = Value(tokens[i+1], i+1, k)
		}
	}
	pooled = make([]float64, dModel)
	for k := range dModel {
		switch pool {
		case "cls":
			pooled[k] = float64(Value(tokens[0], 0, k))
		case "max":
			pooled[k] = math.Inf(-1)
			for i := range seq {
				pooled[k] = max(pooled[k], float64(perResidue[i*dModel+k]))
			}
		default:
			for i := range seq {
				pooled[k] += float64(perResidue[i*dModel+k])
			}
			pooled[k] /= float64(len(seq))
		}
	}
	return perResidue, pooled
}

// CheckNPZ checks an embedding's npz file against the stand-in's values for seq.
func CheckNPZ(t testing.TB, path string, saprot bool, seq, pool string, dModel int) {
	t.Helper()
	arrays, err := npy.ReadNPZ(path)
	if err != nil {
		t.Fatal(err)
	}
	per, pooled, sequence := arrays["per_residue"], arrays["pooled"], arrays["sequence"]
	if per == nil || pooled == nil || sequence == nil {
		t.Fatalf("%s holds %v; want per_residue, pooled and sequence", path, slices.Sorted(maps.Keys(arrays)))
	}
	if !slices.Equal(per.Shape, []int{len(seq), dModel}) || !slices.Equal(pooled.Shape, []int{dModel}) {
		t.Fatalf("%s: per_residue %v, pooled %v; want [%d %d] and [%d]", path, per.Shape, pooled.Shape, len(seq), dModel, dModel)
	}
	if s, ok := sequence.Data.([]string); !ok || len(sequence.Shape) != 0 || s[0] != seq {
		t.Errorf("%s: sequence %v of shape %v; want %q, 0-d", path, sequence.Data, sequence.Shape, seq)
	}
	wantRows, wantPooled := Embedding(saprot, seq, pool, dModel)
	if rows, ok := per.Data.([]float32); !ok || !slices.Equal(rows, wantRows) {
		t.Fatalf("%s: per_residue is not the model's rows 1..%d (float32)", path, len(seq))
	}
	CheckPooled(t, path, pooled.Data.([]float32), wantPooled)
}

// CheckPooled checks a pooled vector against the stand-in's, within float32 rounding.
func CheckPooled(t testing.TB, what string, got []float32, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: pooled has %d values; want %d", what, len(got), len(want))
	}
	for k := range got {
		if math.Abs(float64(got[k])-want[k]) > 1e-6 {
			t.Fatalf("%s: pooled[%d] = %v; want %v", what, k, got[k], want[k])
		}
	}
}
