package client

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// fileServer serves one file with http.ServeContent (ranges, If-Range), with a way to
// cut the next answers short and to swap the file for a new version.
type fileServer struct {
	*httptest.Server
	mu      sync.Mutex
	content []byte
	etag    string
	cutAt   []int // each answer in turn stops after this many body bytes; -1 sends it whole
	seen    []string
}

func newFileServer(t *testing.T, content []byte, etag string, cuts ...int) *fileServer {
	t.Helper()
	fs := &fileServer{content: content, etag: etag, cutAt: cuts}
	fs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fs.mu.Lock()
		fs.seen = append(fs.seen, r.Header.Get("Range")+"|"+r.Header.Get("If-Range"))
		content, etag, cut := fs.content, fs.etag, -1
		if len(fs.cutAt) > 0 {
			cut, fs.cutAt = fs.cutAt[0], fs.cutAt[1:]
		}
		fs.mu.Unlock()
		if etag != "" {
			w.Header().Set("ETag", etag)
		}
		var out http.ResponseWriter = w
		if cut >= 0 {
			out = &cuttingWriter{ResponseWriter: w, left: cut}
		}
		http.ServeContent(out, r, "f.bin", time.Time{}, bytes.NewReader(content))
	}))
	t.Cleanup(fs.Close)
	return fs
}

func (fs *fileServer) requests() []string {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return append([]string(nil), fs.seen...)
}

// cuttingWriter passes on left body bytes, then breaks the connection.
type cuttingWriter struct {
	http.ResponseWriter
	left int
}

func (c *cuttingWriter) Write(p []byte) (int, error) {
	if len(p) > c.left {
		c.ResponseWriter.Write(p[:c.left])
		http.NewResponseController(c.ResponseWriter).Flush()
		panic(http.ErrAbortHandler)
	}
	c.left -= len(p)
	return c.ResponseWriter.Write(p)
}

func content(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i/251)
	}
	return b
}

func TestDownloadResumesACutTransferInTheSameCall(t *testing.T) {
	t.Parallel()
	want := content(50_000)
	fs := newFileServer(t, want, `"v1"`, 10_000, 20_000) // two cuts, then whole
	c, slept := testClient(t, fs.URL, Retry{Attempts: 2})
	dest := filepath.Join(t.TempDir(), "sub", "f.bin")
	if err := c.DownloadArtifact(t.Context(), "j", "f.bin", dest); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(dest)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("downloaded %d bytes (%v), want the %d of the file", len(got), err, len(want))
	}
	wantReqs := []string{"|", `bytes=10000-|"v1"`, `bytes=30000-|"v1"`}
	if reqs := fs.requests(); strings.Join(reqs, " ") != strings.Join(wantReqs, " ") {
		t.Errorf("requests %q, want %q", reqs, wantReqs)
	}
	// Every attempt brought bytes, so two cuts fit in a policy of two attempts.
	if len(*slept) != 2 {
		t.Errorf("slept %v, want a backoff before each resume", *slept)
	}
	for _, leftover := range []string{dest + PartialSuffix, dest + ETagSuffix} {
		if _, err := os.Stat(leftover); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left behind", leftover)
		}
	}
}

func TestDownloadResumesAcrossCalls(t *testing.T) {
	t.Parallel()
	want := content(30_000)
	fs := newFileServer(t, want, `"v1"`, 12_345)
	c, _ := testClient(t, fs.URL, Retry{Attempts: 1})
	dest := filepath.Join(t.TempDir(), "a.zip")
	err := c.DownloadArchive(t.Context(), "j", dest)
	var ce *ConnectionError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want a *ConnectionError for the cut transfer", err)
	}
	if fi, err := os.Stat(dest + PartialSuffix); err != nil || fi.Size() != 12_345 {
		t.Fatalf("partial file: %v, %v; want 12345 bytes kept", fi, err)
	}
	if _, err := os.Stat(dest); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("the destination exists although the transfer was cut")
	}
	if err := c.DownloadArchive(t.Context(), "j", dest); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(dest); !bytes.Equal(got, want) {
		t.Fatal("the resumed file differs from the original")
	}
	if reqs := fs.requests(); reqs[1] != `bytes=12345-|"v1"` {
		t.Errorf("second call asked %q, want a range from 12345 guarded by the ETag", reqs[1])
	}
}

// TestDownloadNeverSplicesTwoVersions: the file changes between the cut and the resume,
// so If-Range fails and the new version arrives whole.
func TestDownloadNeverSplicesTwoVersions(t *testing.T) {
	t.Parallel()
	old, updated := content(20_000), bytes.Repeat([]byte("new "), 6_000)
	fs := newFileServer(t, old, `"v1"`, 5_000)
	c, _ := testClient(t, fs.URL, Retry{Attempts: 1})
	dest := filepath.Join(t.TempDir(), "f.bin")
	if err := c.DownloadArtifact(t.Context(), "j", "f.bin", dest); err == nil {
		t.Fatal("the cut transfer succeeded")
	}
	fs.mu.Lock()
	fs.content, fs.etag = updated, `"v2"`
	fs.mu.Unlock()
	if err := c.DownloadArtifact(t.Context(), "j", "f.bin", dest); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(dest); !bytes.Equal(got, updated) {
		t.Fatalf("got %d bytes starting %q; want the new version whole", len(got), got[:min(len(got), 8)])
	}
}

func TestDownloadOfACompletePartialFile(t *testing.T) {
	t.Parallel()
	want := content(1_000)
	fs := newFileServer(t, want, `"v1"`)
	c, _ := testClient(t, fs.URL, Retry{})
	dest := filepath.Join(t.TempDir(), "f.bin")
	// A run killed after the last byte arrived but before the rename.
	if err := os.WriteFile(dest+PartialSuffix, want, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dest+ETagSuffix, []byte(`"v1"`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.DownloadArtifact(t.Context(), "j", "f.bin", dest); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(dest); !bytes.Equal(got, want) {
		t.Fatal("file differs")
	}
	if reqs := fs.requests(); len(reqs) != 1 || reqs[0] != `bytes=1000-|"v1"` {
		t.Errorf("requests %q; want one range past the end, answered 416", reqs)
	}
}

func TestDownloadWithoutETagStartsOver(t *testing.T) {
	t.Parallel()
	want := content(8_000)
	fs := newFileServer(t, want, "", 3_000)
	c, _ := testClient(t, fs.URL, Retry{Attempts: 2})
	dest := filepath.Join(t.TempDir(), "f.bin")
	if err := c.DownloadArtifact(t.Context(), "j", "f.bin", dest); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(dest); !bytes.Equal(got, want) {
		t.Fatal("file differs")
	}
	// Nothing proves a range would be of the same version: the retry asks for it all.
	if reqs := fs.requests(); strings.Join(reqs, " ") != "| |" {
		t.Errorf("requests %q, want two whole requests", reqs)
	}
}

func TestDownloadErrorsLeaveNoLitter(t *testing.T) {
	t.Parallel()
	f := newFake(t, problemReply(404, "not-found"))
	c, _ := testClient(t, f.URL, Retry{})
	dir := t.TempDir()
	err := c.DownloadArtifact(t.Context(), "j", "nope.cif", filepath.Join(dir, "nope.cif"))
	if !IsNotFound(err) {
		t.Fatalf("err = %v, want a 404", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("left %v behind", entries)
	}
}

func TestContentRange(t *testing.T) {
	t.Parallel()
	tests := []struct {
		v            string
		first, total int64
		ok           bool
	}{
		{"bytes 0-9/10", 0, 10, true},
		{"bytes 5-9/10", 5, 10, true},
		{"bytes 5-8/10", 0, 0, false}, // not to the end: not what a resume asks for
		{"bytes */10", 0, 0, false},
		{"bits 0-9/10", 0, 0, false},
		{"bytes 0-9/*", 0, 0, false},
	}
	for _, tt := range tests {
		first, total, ok := contentRange(tt.v)
		if first != tt.first || total != tt.total || ok != tt.ok {
			t.Errorf("contentRange(%q) = %d, %d, %v; want %d, %d, %v", tt.v, first, total, ok, tt.first, tt.total, tt.ok)
		}
	}
}

func TestLogsFromAnOffset(t *testing.T) {
	t.Parallel()
	f := newFake(t,
		func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Range") != "bytes=4-" {
				t.Errorf("Range %q", r.Header.Get("Range"))
			}
			w.Header().Set("Content-Range", "bytes 4-9/10")
			w.WriteHeader(206)
			fmt.Fprint(w, "456789")
		},
		problemReply(416, "range-not-satisfiable", "Content-Range", "bytes */10"),
		func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "0123456789ab") }, // Range ignored
	)
	c, _ := testClient(t, f.URL, Retry{})
	for _, want := range []string{"456789", "", "89ab"} {
		off := map[string]int64{"456789": 4, "": 10, "89ab": 8}[want]
		got, err := c.LogsFrom(t.Context(), "j", off)
		if err != nil || string(got) != want {
			t.Errorf("LogsFrom(%d) = %q, %v; want %q", off, got, err, want)
		}
	}
}
