package protenix

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chaperone-bio/chaperone/align"
	"github.com/chaperone-bio/chaperone/bio"
	"github.com/chaperone-bio/chaperone/internal/golden"
)

// TestWrittenJSONGolden pins the tools' input the engine writes for inputs of every
// feature (testdata/json/<name>.in, with use_msa_server on and the chains left to the
// server searched by fakeSearch): the JSON entry of the target, with the run's folder of
// alignment files written as $FILES, followed by each of those files. Protenix and OpenDDE
// read the same input, so one golden file serves both. go test -run TestWrittenJSONGolden
// -update rewrites <name>.golden.
func TestWrittenJSONGolden(t *testing.T) {
	t.Parallel()
	golden.EachInput(t, filepath.Join("testdata", "json", "*.in"), func(t *testing.T, name string, text []byte, goldenPath string) {
		cx, err := bio.ParseInput(name, string(text))
		if err != nil {
			t.Fatal(err)
		}
		if err := New(Config{}).CheckInput("protenix-v2", cx, map[string]any{"use_msa_server": true}); err != nil {
			t.Fatalf("the engine would refuse the input: %v", err)
		}
		var searched *align.Result
		if chains := cx.SearchChains(); len(chains) > 0 {
			r := fakeSearch(chains...)
			searched = &r
		}
		files := t.TempDir()
		tg, err := planTarget(cx, true, searched, files)
		if err != nil {
			t.Fatal(err)
		}
		golden.Check(t, goldenPath, []byte(written(t, tg.entry, files)))
	})
}

// written is the JSON of entry with the folder files written as $FILES, then every file
// under files.
func written(t *testing.T, entry inputJob, files string) string {
	t.Helper()
	b, err := json.MarshalIndent([]inputJob{entry}, "", "    ")
	if err != nil {
		t.Fatal(err)
	}
	out := strings.ReplaceAll(string(b), files, "$FILES") + "\n"
	err = filepath.WalkDir(files, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		out += "--- $FILES" + strings.TrimPrefix(path, files) + "\n" + string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
