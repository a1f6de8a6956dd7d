package web

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha512"
	"encoding/base64"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// fakePackage is a tarball laid out as npm packs molstar, and the pin that matches it.
func fakePackage(t *testing.T) (npmPackage, []byte) {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for name, body := range map[string]string{
		"package/package.json":               `{"name":"molstar"}`,
		"package/build/viewer/molstar.js":    "var molstar = {};",
		"package/build/viewer/molstar.css":   ".msp-plugin {}",
		"package/build/viewer/embedded.html": "<html></html>",
	} {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	sum := sha512.Sum512(buf.Bytes())
	pkg := pinnedMolstar
	pkg.Version = "0.0.1"
	pkg.Integrity = "sha512-" + base64.StdEncoding.EncodeToString(sum[:])
	return pkg, buf.Bytes()
}

// registry serves the tarball at npm's path and counts the downloads.
func registry(t *testing.T, pkg npmPackage, tgz []byte) (*httptest.Server, *atomic.Int32) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/molstar/-/"+tarballName(pkg) {
			http.NotFound(w, r)
			return
		}
		hits.Add(1)
		_, _ = w.Write(tgz)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func get(t *testing.T, h http.Handler, path string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestMolstarIsFetchedOnceVerifiedAndServed(t *testing.T) {
	t.Parallel()
	pkg, tgz := fakePackage(t)
	reg, hits := registry(t, pkg, tgz)
	dir := t.TempDir()
	app := &App{molstar: newMolstar(Config{AssetDir: dir, Registry: reg.URL, Logger: quiet()}, pkg)}

	for range 2 {
		rec := get(t, app, "/web/molstar/0.0.1/molstar.js")
		if rec.Code != http.StatusOK || rec.Body.String() != "var molstar = {};" {
			t.Fatalf("molstar.js: %d %q", rec.Code, rec.Body)
		}
		if !strings.Contains(rec.Header().Get("Cache-Control"), "immutable") {
			t.Errorf("Cache-Control %q", rec.Header().Get("Cache-Control"))
		}
	}
	if rec := get(t, app, "/web/molstar/0.0.1/molstar.css"); rec.Body.String() != ".msp-plugin {}" {
		t.Errorf("molstar.css: %q", rec.Body)
	}
	if hits.Load() != 1 {
		t.Errorf("the registry was asked %d times, want once", hits.Load())
	}
	// A restarted server finds the files where the first one left them.
	again := &App{molstar: newMolstar(Config{AssetDir: dir, Registry: "http://127.0.0.1:1", Logger: quiet()}, pkg)}
	if rec := get(t, again, "/web/molstar/0.0.1/molstar.js"); rec.Code != http.StatusOK {
		t.Errorf("after a restart: %d %s", rec.Code, rec.Body)
	}
}

func TestMolstarRefusesATarballThatIsNotThePinnedOne(t *testing.T) {
	t.Parallel()
	pkg, tgz := fakePackage(t)
	tampered := append(bytes.Clone(tgz), 0)
	reg, _ := registry(t, pkg, tampered)
	dir := t.TempDir()
	app := &App{molstar: newMolstar(Config{AssetDir: dir, Registry: reg.URL, Logger: quiet()}, pkg)}
	rec := get(t, app, "/web/molstar/0.0.1/molstar.js")
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "integrity mismatch") {
		t.Fatalf("a tampered tarball: %d %s", rec.Code, rec.Body)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 0 {
		t.Errorf("a tampered tarball left %v behind", entries)
	}
}

func TestMolstarOfflineFromATarballTheOperatorProvides(t *testing.T) {
	t.Parallel()
	pkg, tgz := fakePackage(t)
	tests := []struct {
		name    string
		tarball []byte
		status  int
	}{
		{"the pinned tarball", tgz, http.StatusOK},
		{"another tarball", append(bytes.Clone(tgz), 0), http.StatusServiceUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, tarballName(pkg)), tt.tarball, 0o644); err != nil {
				t.Fatal(err)
			}
			// No registry is reachable: the tarball in the folder must do.
			app := &App{molstar: newMolstar(Config{AssetDir: dir, Registry: "http://127.0.0.1:1", Logger: quiet()}, pkg)}
			if rec := get(t, app, "/web/molstar/0.0.1/molstar.css"); rec.Code != tt.status {
				t.Errorf("status %d, want %d: %s", rec.Code, tt.status, rec.Body)
			}
		})
	}
}

func TestMolstarServesOnlyThePinnedFiles(t *testing.T) {
	t.Parallel()
	pkg, tgz := fakePackage(t)
	reg, hits := registry(t, pkg, tgz)
	app := &App{molstar: newMolstar(Config{AssetDir: t.TempDir(), Registry: reg.URL, Logger: quiet()}, pkg)}
	for _, path := range []string{"/web/molstar/9.9.9/molstar.js", "/web/molstar/0.0.1/embedded.html", "/web/molstar/0.0.1/../molstar.js"} {
		if rec := get(t, app, path); rec.Code != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", path, rec.Code)
		}
	}
	if hits.Load() != 0 {
		t.Errorf("a request for something else fetched the tarball")
	}
}

func TestThePageAndItsFilesAreServed(t *testing.T) {
	t.Parallel()
	app := New(Config{AssetDir: t.TempDir(), Logger: quiet()})
	page := get(t, app.Page(), "/")
	if page.Code != http.StatusOK || !strings.Contains(page.Body.String(), `src="/web/app.js"`) {
		t.Fatalf("the page: %d %s", page.Code, page.Body)
	}
	if page.Header().Get("X-Frame-Options") != "DENY" {
		t.Errorf("the page may be framed by other sites")
	}
	for _, file := range []string{"app.js", "app.css", "npz.js", "charts.js", "viewer.js"} {
		rec := get(t, app, "/web/"+file)
		if rec.Code != http.StatusOK || rec.Body.Len() == 0 {
			t.Errorf("%s: %d", file, rec.Code)
		}
	}
	// The page asks for the Mol* version the server pins.
	viewer := get(t, app, "/web/viewer.js").Body.String()
	if !strings.Contains(viewer, `MOLSTAR_VERSION = "`+pinnedMolstar.Version+`"`) {
		t.Errorf("viewer.js does not load Mol* %s", pinnedMolstar.Version)
	}
}

func TestMolstarServersSharingAFolderFetchTogether(t *testing.T) {
	t.Parallel()
	pkg, tgz := fakePackage(t)
	reg, _ := registry(t, pkg, tgz)
	dir := t.TempDir()
	const servers = 4
	codes := make(chan int, servers)
	for range servers {
		go func() {
			app := &App{molstar: newMolstar(Config{AssetDir: dir, Registry: reg.URL, Logger: quiet()}, pkg)}
			codes <- get(t, app, "/web/molstar/0.0.1/molstar.js").Code
		}()
	}
	for range servers {
		if code := <-codes; code != http.StatusOK {
			t.Errorf("a server answered %d", code)
		}
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "molstar-0.0.1 molstar-0.0.1.tgz" {
		t.Errorf("the folder holds %v", names)
	}
}
