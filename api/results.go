package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"path"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/chaperone-bio/chaperone/api/problem"
	"github.com/chaperone-bio/chaperone/artifact"
	"github.com/chaperone-bio/chaperone/job"
)

// notReadyJSON is the results manifest of a job that has not succeeded (interface §2.3).
type notReadyJSON struct {
	Object string     `json:"object"`
	JobID  string     `json:"job_id"`
	Ready  bool       `json:"ready"`
	Status job.Status `json:"status"`
}

// readyJSON is the results manifest of a succeeded job; which of the kind-specific fields
// are present depends on the kind.
type readyJSON struct {
	Object     string                 `json:"object"`
	JobID      string                 `json:"job_id"`
	Kind       job.Kind               `json:"kind"`
	Ready      bool                   `json:"ready"`
	Rows       []job.PredictionRow    `json:"rows,omitempty"`
	Designs    []job.Design           `json:"designs,omitempty"`
	Model      string                 `json:"model,omitempty"`
	Pool       string                 `json:"pool,omitempty"`
	Format     string                 `json:"format,omitempty"`
	DModel     int                    `json:"d_model,omitempty"`
	Sequences  []job.EmbeddedSequence `json:"sequences,omitempty"`
	Artifacts  []artifactJSON         `json:"artifacts"`
	ArchiveURL string                 `json:"archive_url"`
}

type artifactJSON struct {
	job.Artifact
	URL string `json:"url"`
}

func resultsView(j *job.Job) any {
	if !j.ResultsReady() {
		return notReadyJSON{Object: "results", JobID: j.ID, Ready: false, Status: j.Status}
	}
	res := j.Results
	v := readyJSON{
		Object:     "results",
		JobID:      j.ID,
		Kind:       j.Kind,
		Ready:      true,
		Rows:       res.Rows,
		Designs:    res.Designs,
		ArchiveURL: "/v1/jobs/" + j.ID + "/archive",
		Artifacts:  make([]artifactJSON, len(res.Artifacts)),
	}
	for i, a := range res.Artifacts {
		v.Artifacts[i] = artifactJSON{Artifact: a, URL: "/v1/jobs/" + j.ID + "/artifacts/" + a.Path}
	}
	if e := res.Embedding; e != nil {
		v.Model, v.Pool, v.Format, v.DModel, v.Sequences = e.Model, e.Pool, e.Format, e.DModel, e.Sequences
	}
	return v
}

func (s *Server) results(w http.ResponseWriter, r *http.Request) {
	j, ok := s.wholeJob(w, r)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, resultsView(j))
}

// readyJob is wholeJob for endpoints that need results: not ready is a 409.
func (s *Server) readyJob(w http.ResponseWriter, r *http.Request) (*job.Job, bool) {
	j, ok := s.wholeJob(w, r)
	if !ok {
		return nil, false
	}
	if !j.ResultsReady() {
		s.writeError(w, r, &job.ConflictError{Reason: fmt.Sprintf("The job is %s; its results are not ready.", j.Status)})
		return nil, false
	}
	return j, true
}

func (s *Server) archive(w http.ResponseWriter, r *http.Request) {
	j, ok := s.readyJob(w, r)
	if !ok {
		return
	}
	a, err := s.newArchive(r.Context(), j)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/zip")
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": j.ID + ".zip"}))
	s.serveDownload(w, r, j.ID, download{etag: a.etag, modified: j.FinishedAt, stream: a.write})
}

// archiveFormat names the way archives are built. Anything that changes their bytes for
// the same job (entry order, names, times, compression) must change it, so that no ETag
// outlives the bytes it was given for.
const archiveFormat = "chaperone-zip-1"

// jobArchive is the zip of a succeeded job. It is built anew for every request, and its
// bytes depend only on what the job produced: results.json, run.log and the manifest's
// artifacts in that order, every entry dated at the job's finish, and the log cut at the
// length it had when the ETag was made. That is what lets a range request (a resumed
// download) be answered by building the archive again and skipping to the offset, and
// lets the ETag promise the same bytes to every request that presents it. A range is cut
// from one build (see serveDownload), never from a build to measure and another to send.
type jobArchive struct {
	ctx     context.Context
	entries []artifact.ZipEntry
	etag    string
}

func (s *Server) newArchive(ctx context.Context, j *job.Job) (*jobArchive, error) {
	manifest, err := json.MarshalIndent(resultsView(j), "", "  ")
	if err != nil {
		return nil, err
	}
	manifest = append(manifest, '\n')
	log, err := s.artifacts.OpenLog(ctx, j.ID)
	if err != nil {
		return nil, err
	}
	logInfo, err := log.Stat()
	log.Close()
	if err != nil {
		return nil, err
	}
	// The log only grows, so its length pins its content. The Go version is in the tag
	// because the deflate output of another build may differ.
	logSize := logInfo.Size()
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n%s\n%d\n%d\n%x\nrun.log %d\n", archiveFormat, runtime.Version(), j.ID, j.Attempt,
		j.FinishedAt.UnixNano(), sha256.Sum256(manifest), logSize)
	mod := j.FinishedAt
	entries := []artifact.ZipEntry{
		{Name: "results.json", Modified: mod, Open: func() (io.ReadCloser, error) {
			return io.NopCloser(bytes.NewReader(manifest)), nil
		}},
		{Name: "run.log", Modified: mod, Open: func() (io.ReadCloser, error) {
			f, err := s.artifacts.OpenLog(ctx, j.ID)
			if err != nil {
				return nil, err
			}
			return struct {
				io.Reader
				io.Closer
			}{io.LimitReader(f, logSize), f}, nil
		}},
	}
	for _, a := range j.Results.Artifacts {
		f, err := s.artifacts.Open(ctx, j.ID, j.Attempt, a.Path)
		if err != nil {
			return nil, err
		}
		fi, err := f.Stat()
		f.Close()
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(h, "%q %d %d\n", a.Path, fi.Size(), fi.ModTime().UnixNano())
		entries = append(entries, artifact.ZipEntry{Name: a.Path, Modified: mod, Open: func() (io.ReadCloser, error) {
			return s.artifacts.Open(ctx, j.ID, j.Attempt, a.Path)
		}})
	}
	return &jobArchive{ctx: ctx, entries: entries, etag: fmt.Sprintf(`"%x"`, h.Sum(nil)[:16])}, nil
}

func (a *jobArchive) write(w io.Writer) error { return artifact.WriteZip(a.ctx, w, a.entries) }

func (s *Server) artifact(w http.ResponseWriter, r *http.Request) {
	j, ok := s.readyJob(w, r)
	if !ok {
		return
	}
	p := r.PathValue("path")
	if !slices.ContainsFunc(j.Results.Artifacts, func(a job.Artifact) bool { return a.Path == p }) {
		s.writeProblem(w, r, problem.NotFound, fmt.Sprintf("The job has no artifact %q; the results manifest lists every artifact path.", p))
		return
	}
	f, err := s.artifacts.Open(r.Context(), j.ID, j.Attempt, p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", contentType(p))
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": path.Base(p)}))
	// Files of an attempt never change once the job has succeeded; a new attempt or a
	// rewrite changes the tag.
	etag := fmt.Sprintf(`"a%d-%x-%x"`, j.Attempt, fi.Size(), fi.ModTime().UnixNano())
	s.serveDownload(w, r, j.ID, fileDownload(r.Context(), f, fi.Size(), etag, j.FinishedAt))
}

// fileDownload serves an open file of known size.
func fileDownload(ctx context.Context, f io.ReadSeeker, size int64, etag string, modified time.Time) download {
	return download{
		etag:     etag,
		modified: modified,
		size:     size,
		section: func(w io.Writer, off, n int64) error {
			if _, err := f.Seek(off, io.SeekStart); err != nil {
				return err
			}
			if n < 0 {
				n = size - off
			}
			_, err := io.CopyN(w, artifact.ContextReader(ctx, f), n)
			return err
		},
	}
}

// contentType is the media type of an artifact, by extension (interface §4.1).
func contentType(p string) string {
	switch strings.ToLower(path.Ext(p)) {
	case ".json":
		return "application/json"
	case ".cif", ".mmcif":
		return "chemical/x-cif"
	case ".pdb":
		return "chemical/x-pdb"
	case ".log", ".txt", ".csv", ".fasta", ".a3m":
		return "text/plain; charset=utf-8"
	}
	return "application/octet-stream"
}

// logs serves the run log as it stands. It has no validators, since it grows while the
// job runs, but it takes a range: a follower reads from the offset it has reached.
func (s *Server) logs(w http.ResponseWriter, r *http.Request) {
	j, ok := s.ownedJob(w, r)
	if !ok {
		return
	}
	f, err := s.artifacts.OpenLog(r.Context(), j.ID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	s.serveDownload(w, r, j.ID, fileDownload(r.Context(), f, fi.Size(), "", time.Time{}))
}
