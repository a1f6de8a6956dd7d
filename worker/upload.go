package worker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/job"
)

// upload stores the run's files and builds the results manifest. Every file is read through
// the job's work folder and must lie inside it: the tool ran on the caller's input, and a
// file it named or a symlink it left must not make a result of something else on the
// worker (its keys, another job's input). A path may be listed once only, or the job's
// archive, which holds every artifact at its path, could never be built.
func (w *Worker) upload(ctx context.Context, fence Fence, workDir string, out *engine.Output) (*job.Results, error) {
	root, err := os.OpenRoot(workDir)
	if err != nil {
		return nil, fmt.Errorf("opening the work folder: %w", err)
	}
	defer root.Close()
	res := &job.Results{Rows: out.Rows, Designs: out.Designs, Embedding: out.Embedding,
		Artifacts: make([]job.Artifact, 0, len(out.Files))}
	listed := make(map[string]bool, len(out.Files))
	for _, file := range out.Files {
		if listed[file.Path] {
			return nil, fmt.Errorf("the engine reported the artifact %s twice", file.Path)
		}
		listed[file.Path] = true
		if err := w.putFile(ctx, fence, root, workDir, file); err != nil {
			return nil, fmt.Errorf("storing artifact %s: %w", file.Path, err)
		}
		res.Artifacts = append(res.Artifacts, file.Artifact)
	}
	return res, nil
}

func (w *Worker) putFile(ctx context.Context, fence Fence, root *os.Root, workDir string, f engine.File) error {
	rel, err := relativeTo(workDir, f.Local)
	if err != nil {
		return err
	}
	r, err := root.Open(rel)
	if err != nil {
		return err
	}
	defer r.Close()
	return w.cfg.Queue.PutArtifact(ctx, fence, f.Path, r)
}

// relativeTo returns the path of file inside dir, or an error when it lies outside.
func relativeTo(dir, file string) (string, error) {
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	absFile, err := filepath.Abs(file)
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(absDir, absFile)
	if err != nil || !filepath.IsLocal(rel) {
		return "", errors.New("the engine named a file outside the job's work folder")
	}
	return rel, nil
}
