package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestTheBinaryLinksNoStandIn: a running server never offers a fake engine. The stand-ins of
// the upstream tools and the test engine live in test packages (…test, internal/standin),
// and the chaperone binary links none of them, so it can offer only the real engines.
func TestTheBinaryLinksNoStandIn(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for pkg := range strings.FieldsSeq(string(out)) {
		if !strings.HasPrefix(pkg, "github.com/chaperone-bio/chaperone/") {
			continue
		}
		if strings.HasSuffix(pkg, "test") || strings.Contains(pkg, "/internal/standin") {
			t.Errorf("the chaperone binary links %s, a package of tests' stand-ins or fakes", pkg)
		}
	}
}
