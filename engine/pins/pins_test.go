package pins_test

import (
	"regexp"
	"testing"

	"github.com/chaperone-bio/chaperone/engine/pins"
)

func TestEveryPinIsAnExactRelease(t *testing.T) {
	exact := regexp.MustCompile(`^[0-9]+(\.[0-9]+)+$`)
	seen := map[string]bool{}
	for _, p := range pins.All().Tools {
		if !exact.MatchString(p.Version) {
			t.Errorf("%s: version %q is not one exact release", p.Tool, p.Version)
		}
		if p.Package == "" || p.Why == "" || p.RequiresPython == "" {
			t.Errorf("%s: package, why and requires_python must be filled in: %+v", p.Tool, p)
		}
		if seen[p.Tool] {
			t.Errorf("%s is pinned twice", p.Tool)
		}
		seen[p.Tool] = true
	}
	if !exact.MatchString(pins.All().Torch) || pins.All().TierPython == "" {
		t.Errorf("torch %q and tier_python %q must be set", pins.All().Torch, pins.All().TierPython)
	}
}

func TestRequirement(t *testing.T) {
	if got, want := pins.For("boltz").Requirement(), "boltz[cuda]==2.2.1"; got != want {
		t.Errorf("Requirement = %q, want %q", got, want)
	}
	if got, want := pins.For("protenix").Requirement(), "protenix==2.0.0"; got != want {
		t.Errorf("Requirement = %q, want %q", got, want)
	}
}
