package artifact_test

import (
	"errors"
	"path"
	"testing"

	"github.com/chaperone-bio/chaperone/artifact"
	"github.com/chaperone-bio/chaperone/artifact/artifacttest"
)

func TestCheckPath(t *testing.T) {
	t.Parallel()
	for _, p := range []string{
		"t1.cif",
		"t1/confidence_t1_model_0.json",
		"a/b/c/d.txt",
		".hidden",
		"t1/..x",
		"x..",
		"name with spaces.pdb",
		"ünïcode.json",
		"results.json",
	} {
		if err := artifact.CheckPath(p); err != nil {
			t.Errorf("CheckPath(%q) = %v, want nil", p, err)
		}
	}
	for _, p := range artifacttest.UnsafePaths {
		if err := artifact.CheckPath(p); !errors.Is(err, artifact.ErrInvalidPath) {
			t.Errorf("CheckPath(%q) = %v, want ErrInvalidPath", p, err)
		}
	}
}

func FuzzCheckPath(f *testing.F) {
	for _, p := range append([]string{"t1.cif", "a/b", ".x"}, artifacttest.UnsafePaths...) {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if artifact.CheckPath(p) != nil {
			return
		}
		// An accepted path, joined under a folder, stays strictly inside it.
		if cleaned := path.Join("root", p); cleaned != "root/"+p {
			t.Errorf("accepted %q, which resolves to %q", p, cleaned)
		}
	})
}
