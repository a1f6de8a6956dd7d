// Package golden pins the formats chaperone writes with golden files in tests: a test
// compares what it produced with a file under testdata, and `go test -update` rewrites the
// file instead, so that a change to a format shows in review as the diff of that file. It
// imports nothing of chaperone's.
package golden

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files with what the tests produce")

// Check compares got with the file at path, or writes it there under -update.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v; write it with: go test -run %s -update", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from what the test produced; if the change is meant, rewrite it with: go test -run %s -update\n%s",
			path, t.Name(), firstDifference(string(want), string(got)))
	}
}

// EachInput runs a parallel subtest for every file that pattern matches (for example
// testdata/json/*.in), named by the file's name without its extension, and hands it the
// file's contents and the path of its golden file beside it (<name>.golden). It fails when
// nothing matches, so that a moved folder cannot leave the test checking nothing.
func EachInput(t *testing.T, pattern string, fn func(t *testing.T, name string, input []byte, goldenPath string)) {
	t.Helper()
	inputs, err := filepath.Glob(pattern)
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no inputs match %s: %v", pattern, err)
	}
	for _, in := range inputs {
		base := strings.TrimSuffix(in, filepath.Ext(in))
		t.Run(filepath.Base(base), func(t *testing.T) {
			t.Parallel()
			input, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			fn(t, filepath.Base(base), input, base+".golden")
		})
	}
}

// firstDifference shows the first line where two texts part.
func firstDifference(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := range max(len(w), len(g)) {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl || i >= len(w) || i >= len(g) {
			return fmt.Sprintf("line %d:\n  golden:   %s\n  produced: %s", i+1, wl, gl)
		}
	}
	return ""
}
