// Package web is chaperone's web app: one page of plain HTML, CSS and JavaScript that
// speaks the public /v1 API as any client does, and the Mol* viewer it shows structures
// in. Mol* is not kept in this repository: the server takes it from the npm registry at a
// pinned version and integrity hash on first use (see molstar.go). The package imports
// only the standard library; the api package mounts it and issues its session cookie.
package web

import (
	"embed"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
)

//go:embed static
var staticFiles embed.FS

// Config is where the web app keeps what it fetches.
type Config struct {
	// AssetDir holds the Mol* tarball and the viewer files taken from it. An operator
	// without registry access puts the tarball there (see MolstarTarball).
	AssetDir string
	// Registry is the npm registry; empty means https://registry.npmjs.org.
	Registry string
	Client   *http.Client
	Logger   *slog.Logger
}

// App serves the page at / and its files under /web/.
type App struct {
	static  http.Handler
	molstar *molstar
}

// New returns the web app.
func New(cfg Config) *App {
	sub, err := fs.Sub(staticFiles, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	return &App{
		static:  http.StripPrefix("/web/", http.FileServerFS(sub)),
		molstar: newMolstar(cfg, pinnedMolstar),
	}
}

// Page serves the page itself, for GET /.
func (a *App) Page() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		page, err := staticFiles.ReadFile("static/index.html")
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		setOwnFileHeaders(w)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(page)
	})
}

// ServeHTTP serves the files under /web/: the page's own, and Mol*'s under
// /web/molstar/<version>/.
func (a *App) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if rest, ok := strings.CutPrefix(r.URL.Path, "/web/molstar/"); ok {
		a.molstar.serve(w, r, rest)
		return
	}
	setOwnFileHeaders(w)
	a.static.ServeHTTP(w, r)
}

// setOwnFileHeaders makes a browser revalidate the page's own files, which change with
// the binary, and keeps other sites from framing the page.
func setOwnFileHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
}
