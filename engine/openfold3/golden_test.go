package openfold3

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chaperone-bio/chaperone/internal/golden"
)

// TestWrittenInputsGolden pins what the engine gives run_openfold for requests of every
// feature (testdata/<name>.json, a request as the API takes it), run with the alignments
// the alignment stage would give them (searchedFor): the query JSON, runner YAML and every
// alignment file, with the run's folder written as $WORK. Among them: a searched monomer
// (sequence), homodimer and heteromer, a searched chain beside a sent one (inline_msas),
// and searched pairs beside pairs sent as CSV (paired_searched_and_sent). go test -run
// TestWrittenInputsGolden -update rewrites <name>.golden.
func TestWrittenInputsGolden(t *testing.T) {
	t.Parallel()
	golden.EachInput(t, filepath.Join("testdata", "*.json"), func(t *testing.T, _ string, body []byte, goldenPath string) {
		h := newHarness(t, Config{})
		if _, err := h.run(newJob(t, string(body))); err != nil {
			t.Fatalf("%v\n%s", err, h.Log.String())
		}
		golden.Check(t, goldenPath, []byte(writtenInputs(t, h.workDir)))
	})
}

// writtenInputs is every file under the work folder's inputs/ and files/, each after a
// line naming it, with the work folder written as $WORK.
func writtenInputs(t *testing.T, work string) string {
	t.Helper()
	var paths []string
	for _, dir := range []string{"inputs", "files"} {
		err := filepath.WalkDir(filepath.Join(work, dir), func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				paths = append(paths, p)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(paths)
	var b strings.Builder
	for _, p := range paths {
		text, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(work, p)
		b.WriteString("--- $WORK/" + rel + "\n" + strings.ReplaceAll(string(text), work, "$WORK"))
	}
	return b.String()
}
