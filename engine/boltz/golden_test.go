package boltz

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chaperone-bio/chaperone/align"
	"github.com/chaperone-bio/chaperone/bio"
	"github.com/chaperone-bio/chaperone/internal/golden"
)

// TestWrittenYAMLGolden pins the Boltz input the engine writes for inputs of every
// feature (testdata/yaml/<name>.in, use_msa_server on and the alignments it needs searched
// ahead of the run by the tests' alignment stage, searchedAhead): the YAML, with
// the run's folder of inline files written as $FILES, followed by each of those files.
// go test -run TestWrittenYAMLGolden -update rewrites <name>.golden.
func TestWrittenYAMLGolden(t *testing.T) {
	t.Parallel()
	golden.EachInput(t, filepath.Join("testdata", "yaml", "*.in"), func(t *testing.T, name string, text []byte, goldenPath string) {
		cx, err := bio.ParseInput(name, string(text))
		if err != nil {
			t.Fatal(err)
		}
		if err := New(Config{}).CheckInput("boltz2", cx, map[string]any{"use_msa_server": true}); err != nil {
			t.Fatalf("Boltz would refuse the input: %v", err)
		}
		var searched []align.Result
		if chains := cx.SearchChains(); len(chains) > 0 {
			searched = append(searched, searchedAhead(chains...))
		}
		dir, files := writeInput(t, cx, searched...)
		golden.Check(t, goldenPath, []byte(written(t, filepath.Join(dir, name+".yaml"), files)))
	})
}

// written is the YAML at path with the folder files written as $FILES, then every file
// under files (one that does not end in a newline, as Boltz writes its CSV, marked so).
func written(t *testing.T, path, files string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := strings.ReplaceAll(string(b), files, "$FILES")
	entries, err := os.ReadDir(files)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	slices.Sort(names)
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(files, n))
		if err != nil {
			t.Fatal(err)
		}
		out += "--- $FILES/" + n + "\n" + string(b)
		if !strings.HasSuffix(out, "\n") {
			out += "\n\\ no newline at end of file\n"
		}
	}
	return out
}
