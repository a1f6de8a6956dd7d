package toolkit

import (
	"fmt"
	"path/filepath"

	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/toolkit/npy"
	"github.com/chaperone-bio/chaperone/job"
)

// PAEMatrix writes the token-pair matrices of a target's best sample (pae, and pde where the
// tool gives one) as <dir>/<target>_pae.npz, and returns that file as the artifact
// <target>_pae.npz: the file a prediction's write_pae asks for, named as the reference
// service names it, so that pipelines reading its PAE (ipSAE and the like) find it.
func PAEMatrix(dir, target string, arrays map[string]*npy.Array) (engine.File, error) {
	if arrays["pae"] == nil {
		return engine.File{}, fmt.Errorf("no PAE matrix for %s", target)
	}
	name := target + "_pae.npz"
	local := filepath.Join(dir, name)
	if err := npy.WriteNPZ(local, arrays); err != nil {
		return engine.File{}, err
	}
	return Artifact(name, target, job.ArtifactPAE, local), nil
}
