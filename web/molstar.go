package web

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// npmPackage is one published version of an npm package, pinned by the integrity string
// the registry records for its tarball (Subresource Integrity form, sha512).
type npmPackage struct {
	Name, Version, Integrity string
	// Files maps each file served to its path inside the tarball.
	Files map[string]string
}

// pinnedMolstar is the Mol* release the page is written against: its prebuilt viewer.
var pinnedMolstar = npmPackage{
	Name:      "molstar",
	Version:   "5.11.0",
	Integrity: "sha512-Jv2oHkKoCpzrhqLmGlknepm0pfRsoTDebsGRkvXpbUFb6p+JIAkhLyM3uqV2twC6VR83ZbXtdswOtouPhozpuQ==",
	Files: map[string]string{
		"molstar.js":  "package/build/viewer/molstar.js",
		"molstar.css": "package/build/viewer/molstar.css",
	},
}

// MolstarTarball is the file name under Config.AssetDir where the server keeps the Mol*
// tarball, and where an operator without registry access may put it (npm pack
// molstar@<version> on another machine); it is checked against the pinned integrity
// either way.
func MolstarTarball() string { return tarballName(pinnedMolstar) }

func tarballName(p npmPackage) string { return p.Name + "-" + p.Version + ".tgz" }

// molstar provides the viewer's files, fetching and unpacking them on first use.
type molstar struct {
	pkg      npmPackage
	dir      string
	registry string
	client   *http.Client
	log      *slog.Logger

	mu    sync.Mutex
	ready bool
}

func newMolstar(cfg Config, pkg npmPackage) *molstar {
	m := &molstar{pkg: pkg, dir: cfg.AssetDir, registry: strings.TrimSuffix(cfg.Registry, "/"), client: cfg.Client, log: cfg.Logger}
	if m.registry == "" {
		m.registry = "https://registry.npmjs.org"
	}
	if m.client == nil {
		m.client = http.DefaultClient
	}
	if m.log == nil {
		m.log = slog.Default()
	}
	return m
}

// serve answers /web/molstar/<version>/<file>. The version is in the path so that a
// browser may keep the files for good.
func (m *molstar) serve(w http.ResponseWriter, r *http.Request, rest string) {
	version, file, _ := strings.Cut(rest, "/")
	if version != m.pkg.Version || m.pkg.Files[file] == "" {
		http.NotFound(w, r)
		return
	}
	if err := m.prepare(r.Context()); err != nil {
		m.log.Warn("the Mol* viewer is unavailable", "err", err)
		http.Error(w, "The structure viewer is unavailable: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	http.ServeFile(w, r, filepath.Join(m.unpacked(), file))
}

func (m *molstar) unpacked() string {
	return filepath.Join(m.dir, m.pkg.Name+"-"+m.pkg.Version)
}

// prepare makes sure the files are unpacked: from the tarball in the asset folder if one
// is there, else from the registry. Concurrent first requests wait for one fetch; a failed
// fetch is tried again by the next request.
func (m *molstar) prepare(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ready {
		return nil
	}
	if m.unpackedComplete() {
		m.ready = true
		return nil
	}
	tgz, err := m.tarball(ctx)
	if err != nil {
		return err
	}
	if err := m.unpack(tgz); err != nil {
		return err
	}
	m.ready = true
	return nil
}

func (m *molstar) unpackedComplete() bool {
	for file := range m.pkg.Files {
		if _, err := os.Stat(filepath.Join(m.unpacked(), file)); err != nil {
			return false
		}
	}
	return true
}

// tarball returns the verified tarball, downloading it if the asset folder lacks it.
func (m *molstar) tarball(ctx context.Context) ([]byte, error) {
	path := filepath.Join(m.dir, tarballName(m.pkg))
	b, err := os.ReadFile(path)
	if err == nil {
		if err := verifyIntegrity(b, m.pkg.Integrity); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return b, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	// The download outlives the request that asked for it: a browser that gives up should
	// not waste the fetch for the next one.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
	defer cancel()
	url := fmt.Sprintf("%s/%s/-/%s", m.registry, m.pkg.Name, tarballName(m.pkg))
	m.log.Info("fetching the Mol* viewer", "url", url)
	b, err = m.download(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("fetching %s (without registry access, put that file at %s): %w", url, path, err)
	}
	if err := verifyIntegrity(b, m.pkg.Integrity); err != nil {
		return nil, fmt.Errorf("%s: %w", url, err)
	}
	if err := writeFileAtomic(path, b); err != nil {
		return nil, err
	}
	return b, nil
}

func (m *molstar) download(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	res, err := m.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("registry answered %s", res.Status)
	}
	return io.ReadAll(io.LimitReader(res.Body, 256<<20))
}

// verifyIntegrity checks b against an integrity string of the form sha512-<base64>.
func verifyIntegrity(b []byte, integrity string) error {
	want, ok := strings.CutPrefix(integrity, "sha512-")
	if !ok {
		return fmt.Errorf("integrity %q is not sha512", integrity)
	}
	sum := sha512.Sum512(b)
	if got := base64.StdEncoding.EncodeToString(sum[:]); got != want {
		return fmt.Errorf("integrity mismatch: the tarball hashes to sha512-%s, want %s", got, integrity)
	}
	return nil
}

// unpack writes the package's files from the tarball into a fresh folder, then renames
// it into place, so that a crash leaves no half-unpacked viewer behind.
func (m *molstar) unpack(tgz []byte) error {
	zr, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		return err
	}
	want := make(map[string]string, len(m.pkg.Files))
	for file, inside := range m.pkg.Files {
		want[inside] = file
	}
	tmp, err := os.MkdirTemp(m.dir, ".unpack-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	tr := tar.NewReader(zr)
	for len(want) > 0 {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("reading the tarball: %w", err)
		}
		file, ok := want[h.Name]
		if !ok || h.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(tmp, file), b, 0o644); err != nil {
			return err
		}
		delete(want, h.Name)
	}
	for inside := range want {
		return fmt.Errorf("the tarball has no %s", inside)
	}
	// Servers sharing the folder may unpack at the same time; the first rename wins and the
	// others find its files. A folder left incomplete (someone removed a file) is replaced.
	if err := os.Rename(tmp, m.unpacked()); err != nil {
		if m.unpackedComplete() {
			return nil
		}
		if err := os.RemoveAll(m.unpacked()); err != nil {
			return err
		}
		return os.Rename(tmp, m.unpacked())
	}
	return nil
}

// writeFileAtomic writes through a temporary file of its own, so that servers sharing the
// folder never see each other's half-written file.
func writeFileAtomic(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".download-")
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}
