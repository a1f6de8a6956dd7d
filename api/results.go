package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"path"
	"strings"

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
	Rows       []map[string]any       `json:"rows,omitempty"`
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
	j, _, ok := s.ownedJob(w, r)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, resultsView(j))
}

// readyJob is ownedJob for endpoints that need results: not ready is a 409.
func (s *Server) readyJob(w http.ResponseWriter, r *http.Request) (*job.Job, bool) {
	j, _, ok := s.ownedJob(w, r)
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
	manifest, err := json.MarshalIndent(resultsView(j), "", "  ")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx := r.Context()
	entries := []artifact.ZipEntry{
		{Name: "results.json", Open: func() (io.ReadCloser, error) {
			return io.NopCloser(strings.NewReader(string(manifest) + "\n")), nil
		}},
		{Name: "run.log", Open: func() (io.ReadCloser, error) { return s.artifacts.OpenLog(ctx, j.ID) }},
	}
	for _, a := range j.Results.Artifacts {
		entries = append(entries, artifact.ZipEntry{Name: a.Path, Open: func() (io.ReadCloser, error) {
			return s.artifacts.Open(ctx, j.ID, j.Attempt, a.Path)
		}})
	}
	w.Header().Set("Content-Type", "application/zip")
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": j.ID + ".zip"}))
	w.WriteHeader(http.StatusOK)
	// Once streaming has begun the status is sent; a failure can only cut the stream
	// short. Abort the response so the client sees a failed download, not a short file
	// that looks complete, and log the cause for the operator.
	if err := artifact.WriteZip(ctx, w, entries); err != nil && ctx.Err() == nil {
		s.log.ErrorContext(ctx, "archive cut short", "job", j.ID, "request_id", requestID(ctx), "error", err.Error())
		panic(http.ErrAbortHandler)
	}
}

func (s *Server) artifact(w http.ResponseWriter, r *http.Request) {
	j, ok := s.readyJob(w, r)
	if !ok {
		return
	}
	p := r.PathValue("path")
	listed := false
	for _, a := range j.Results.Artifacts {
		if a.Path == p {
			listed = true
			break
		}
	}
	if !listed {
		s.writeProblem(w, r, probNotFound, fmt.Sprintf("The job has no artifact %q; the results manifest lists every artifact path.", p))
		return
	}
	f, err := s.artifacts.Open(r.Context(), j.ID, j.Attempt, p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	defer f.Close()
	w.Header().Set("Content-Type", contentType(p))
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": path.Base(p)}))
	copyOrLog(r.Context(), s, w, f, j.ID)
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

func (s *Server) logs(w http.ResponseWriter, r *http.Request) {
	j, _, ok := s.ownedJob(w, r)
	if !ok {
		return
	}
	f, err := s.artifacts.OpenLog(r.Context(), j.ID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	defer f.Close()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	copyOrLog(r.Context(), s, w, f, j.ID)
}

func copyOrLog(ctx context.Context, s *Server, w io.Writer, r io.Reader, jobID string) {
	if _, err := io.Copy(w, r); err != nil && ctx.Err() == nil {
		s.log.WarnContext(ctx, "download cut short", "job", jobID, "request_id", requestID(ctx), "error", err.Error())
	}
}
