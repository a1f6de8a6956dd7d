package artifact_test

import (
	"errors"
	"path"
	"strings"
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

func TestCheckSharedName(t *testing.T) {
	t.Parallel()
	for _, name := range []string{
		"msa/v1/unpaired/ab/abcdef0123.a3m.gz",
		"x",
		"..x",
		"a/.b/c.",
		"x_y-z/0.9",
	} {
		if err := artifact.CheckSharedName(name); err != nil {
			t.Errorf("CheckSharedName(%q) = %v, want nil", name, err)
		}
		if err := artifact.CheckSharedPrefix(name); err != nil {
			t.Errorf("CheckSharedPrefix(%q) = %v, want nil: a name is a prefix of itself", name, err)
		}
	}
	for _, bad := range artifacttest.BadSharedNames {
		if err := artifact.CheckSharedName(bad.Name); !errors.Is(err, artifact.ErrInvalidPath) {
			t.Errorf("CheckSharedName(%q) = %v, want ErrInvalidPath", bad.Name, err)
		}
		if err := artifact.CheckSharedPrefix(bad.Name); (err == nil) != bad.Prefix || err != nil && !errors.Is(err, artifact.ErrInvalidPath) {
			t.Errorf("CheckSharedPrefix(%q) = %v; a prefix of good names: %v", bad.Name, err, bad.Prefix)
		}
	}
	// A prefix as long as the longest name is one, its own.
	longest := strings.Repeat("a/", 255) + "bb"
	if err := artifact.CheckSharedPrefix(longest); len(longest) != 512 || err != nil {
		t.Errorf("CheckSharedPrefix(%d bytes) = %v, want nil", len(longest), err)
	}
}

func FuzzCheckSharedPrefix(f *testing.F) {
	for _, p := range []string{"msa/v1/unp", "msa/", "..", "a/..", "a/../b"} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, prefix string) {
		if artifact.CheckSharedPrefix(prefix) != nil {
			return
		}
		// The folder an accepted prefix names, up to its last '/', stays strictly inside
		// the shared root.
		dir, _ := path.Split(prefix)
		if cleaned := path.Join("root", dir); cleaned != "root/"+strings.TrimSuffix(dir, "/") && dir != "" {
			t.Errorf("accepted %q, whose folder resolves to %q", prefix, cleaned)
		}
	})
}
