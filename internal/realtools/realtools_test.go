package realtools_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/chaperone-bio/chaperone/engine/pins"
	"github.com/chaperone-bio/chaperone/internal/realtools"
)

// TestUpstreamEnvironments checks that every pinned tool is installed at its pinned release
// and that its interpreter is the tier's Python.
func TestUpstreamEnvironments(t *testing.T) {
	for _, pin := range pins.All().Tools {
		t.Run(pin.Tool, func(t *testing.T) {
			env := realtools.Require(t, pin.Tool)
			script := "import sys, importlib.metadata as m; print(m.version(sys.argv[1]), '%d.%d' % sys.version_info[:2])"
			out, err := exec.Command(env.Python(), "-c", script, pin.Package).CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v %s", env.Python(), err, out)
			}
			got := strings.TrimSpace(string(out))
			if want := pin.Version + " " + pins.All().TierPython; got != want {
				t.Errorf("installed %q, want %q", got, want)
			}
		})
	}
}
