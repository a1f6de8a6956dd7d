package pins_test

import (
	"flag"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/chaperone-bio/chaperone/engine/pins"
)

var update = flag.Bool("update", false, "rewrite the README's GPU-worker rows from pins.json")

const (
	readme      = "../../README.md"
	guideHeader = "| tool | pinned | install | tier | `--tool` |"
)

// TestREADMEGuideIsThePins holds the README's GPU-worker table to pins.json: each pinned
// tool's row is exactly what GuideRow makes of its pin, so the guide installs the release
// the tier ran and doctor reports as tested. -update rewrites the rows.
func TestREADMEGuideIsThePins(t *testing.T) {
	b, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	start := slices.Index(lines, guideHeader)
	if start < 0 {
		t.Fatalf("README has no GPU-worker table headed %q", guideHeader)
	}
	end := start + slices.Index(lines[start:], "")
	for _, p := range pins.All().Tools {
		want := p.GuideRow()
		at := -1
		for i := start; i < end; i++ {
			l := lines[i]
			if strings.HasPrefix(l, "| "+p.Title+" |") {
				if at >= 0 {
					t.Fatalf("README has two rows for %s", p.Title)
				}
				at = i
			}
		}
		switch {
		case at < 0:
			t.Errorf("README's GPU-worker table has no row for %s; want\n%s", p.Title, want)
		case lines[at] == want:
		case *update:
			lines[at] = want
		default:
			t.Errorf("README's row for %s is\n%s\nwant (go test ./engine/pins -update)\n%s", p.Title, lines[at], want)
		}
	}
	if *update {
		if err := os.WriteFile(readme, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
