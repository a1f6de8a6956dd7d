package main

import (
	"archive/zip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/chaperone-bio/chaperone/artifact"
)

// joinOut is the file name under the output folder of a slash path from the server.
func joinOut(out, name string) string { return filepath.Join(out, filepath.FromSlash(name)) }

// saveAll saves everything a job produced into out: the archive (results.json, run.log
// and every artifact) is downloaded next to it, resumably, then unpacked and removed. A
// run that is interrupted leaves the partial archive behind, and the next run for the
// same folder resumes it.
func (cl *cli) saveAll(ctx context.Context, id, out string) error {
	zipPath := joinOut(out, "."+id+".zip")
	if err := cl.c.DownloadArchive(ctx, id, zipPath); err != nil {
		return err
	}
	n, err := unzip(zipPath, out)
	if err != nil {
		return fmt.Errorf("unpacking the archive of job %s: %w", id, err)
	}
	if err := os.Remove(zipPath); err != nil {
		return err
	}
	if !cl.json {
		fmt.Fprintf(cl.stderr, "saved %s in %s\n", files(n), out)
	}
	return nil
}

// saveArtifacts downloads the named artifacts into out, each at its path.
func (cl *cli) saveArtifacts(ctx context.Context, id, out string, paths []string) error {
	for _, p := range paths {
		if err := artifact.CheckPath(p); err != nil {
			return usageError{fmt.Errorf("--artifact: %w", err)}
		}
		if err := cl.c.DownloadArtifact(ctx, id, p, joinOut(out, p)); err != nil {
			return err
		}
	}
	if !cl.json {
		fmt.Fprintf(cl.stderr, "saved %s in %s\n", files(len(paths)), out)
	}
	return nil
}

// files is "1 file" or "n files".
func files(n int) string {
	if n == 1 {
		return "1 file"
	}
	return fmt.Sprintf("%d files", n)
}

// unzip extracts an archive from the server into dir and returns how many files it
// wrote. Every name is checked as the server checks artifact paths, so that no entry can
// land outside dir, whatever the archive holds.
func unzip(zipPath, dir string) (int, error) {
	zr, err := zip.OpenReader(zipPath)
	if err != nil {
		return 0, err
	}
	defer zr.Close()
	for i, f := range zr.File {
		if err := artifact.CheckPath(f.Name); err != nil || !f.Mode().IsRegular() {
			return i, fmt.Errorf("refusing archive entry %q", f.Name)
		}
		if err := extract(f, joinOut(dir, f.Name)); err != nil {
			return i, err
		}
	}
	return len(zr.File), nil
}

func extract(f *zip.File, dest string) error {
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return err
	}
	rc, err := f.Open()
	if err != nil {
		return err
	}
	defer rc.Close()
	w, err := os.Create(dest)
	if err != nil {
		return err
	}
	if _, err := io.Copy(w, rc); err != nil {
		w.Close()
		return fmt.Errorf("%s: %w", f.Name, err)
	}
	return w.Close()
}
