package api

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/artifact"
	artifactfs "github.com/chaperone-bio/chaperone/artifact/fs"
	"github.com/chaperone-bio/chaperone/catalog"
	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/store"
	"github.com/chaperone-bio/chaperone/store/sqlite"
)

// readCountingArtifacts counts the bytes read from result files (not logs).
type readCountingArtifacts struct {
	artifact.Store
	read atomic.Int64
}

func (a *readCountingArtifacts) Open(ctx context.Context, jobID string, attempt int, path string) (artifact.File, error) {
	f, err := a.Store.Open(ctx, jobID, attempt, path)
	if err != nil {
		return nil, err
	}
	return &readCountingFile{File: f, read: &a.read}, nil
}

type readCountingFile struct {
	artifact.File
	read *atomic.Int64
}

func (f *readCountingFile) Read(p []byte) (int, error) {
	n, err := f.File.Read(p)
	f.read.Add(int64(n))
	return n, err
}

// testStores opens a SQLite store and an artifact folder, closed when the test ends.
func testStores(t *testing.T) (*sqlite.Store, *artifactfs.Store) {
	t.Helper()
	dir := t.TempDir()
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	arts, err := artifactfs.Open(filepath.Join(dir, "artifacts"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { arts.Close() })
	return st, arts
}

// succeededJob stores a succeeded job of testOwner with one result file of the given
// content, and returns its id.
func succeededJob(t *testing.T, st store.Store, arts artifact.Store, content string) string {
	t.Helper()
	ctx := context.Background()
	id := leasedJob(t, st)
	if err := arts.Put(ctx, id, 1, "t1.cif", strings.NewReader(content)); err != nil {
		t.Fatal(err)
	}
	res := &job.Results{Artifacts: []job.Artifact{{Path: "t1.cif", Target: "t1", Type: job.ArtifactStructure}}}
	if err := st.CompleteJob(ctx, id, 1, store.Outcome{Status: job.Succeeded, Results: res, Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	return id
}

func TestARangeOfTheArchiveBuildsItOnce(t *testing.T) {
	t.Parallel()
	st, fsArts := testStores(t)
	arts := &readCountingArtifacts{Store: fsArts}
	content := strings.Repeat("ATOM line of a structure\n", 400)
	id := succeededJob(t, st, arts, content)
	srv := New(Config{Catalog: catalog.New(catalog.DefaultLimits()), Store: st, Artifacts: arts,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), WorkerTTL: time.Hour})
	get := func(header ...string) *httptest.ResponseRecorder {
		t.Helper()
		r := httptest.NewRequest(http.MethodGet, "/v1/jobs/"+id+"/archive", nil)
		for i := 0; i+1 < len(header); i += 2 {
			r.Header.Set(header[i], header[i+1])
		}
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, r)
		return w
	}

	whole := get()
	if whole.Code != http.StatusOK {
		t.Fatalf("archive: %d %s", whole.Code, whole.Body)
	}
	archive := whole.Body.Bytes()
	size := int64(len(archive))
	for _, tc := range []struct {
		rng        string
		start, end int64
	}{
		{"bytes=0-99", 0, 99},
		{"bytes=100-", 100, size - 1},
		{"bytes=-50", size - 50, size - 1},
		{fmt.Sprintf("bytes=%d-%d", size-10, size+1000), size - 10, size - 1},
	} {
		arts.read.Store(0)
		w := get("Range", tc.rng)
		if w.Code != http.StatusPartialContent {
			t.Fatalf("%s: %d %s", tc.rng, w.Code, w.Body)
		}
		if want := fmt.Sprintf("bytes %d-%d/%d", tc.start, tc.end, size); w.Header().Get("Content-Range") != want {
			t.Errorf("%s: Content-Range %q, want %q", tc.rng, w.Header().Get("Content-Range"), want)
		}
		if !bytes.Equal(w.Body.Bytes(), archive[tc.start:tc.end+1]) {
			t.Errorf("%s: the body is not bytes %d-%d of the archive", tc.rng, tc.start, tc.end)
		}
		if n := arts.read.Load(); n != int64(len(content)) {
			t.Errorf("%s: the result file (%d bytes) was read for %d bytes; a range must build the archive once", tc.rng, len(content), n)
		}
	}

	arts.read.Store(0)
	if w := get("Range", fmt.Sprintf("bytes=%d-", size)); w.Code != http.StatusRequestedRangeNotSatisfiable ||
		w.Header().Get("Content-Range") != fmt.Sprintf("bytes */%d", size) {
		t.Errorf("a range past the end: %d, Content-Range %q", w.Code, w.Header().Get("Content-Range"))
	}
}
