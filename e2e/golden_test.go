package e2e

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	goldenfile "github.com/chaperone-bio/chaperone/internal/golden"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// golden compares got with the file testdata/golden/name, or writes it there under -update
// (go test ./e2e -run Golden -update).
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.Check(t, filepath.Join("testdata", "golden", name), got)
}

// TestGoldenOpenAPI: GET /v1/openapi.json serves api/openapi.json byte for byte, so that
// file is the golden file of the served document: the server never builds or edits it, and
// a change to what it serves is a change to that file, reviewed as its diff.
func TestGoldenOpenAPI(t *testing.T) {
	t.Parallel()
	got := startServer(t).get("/v1/openapi.json").expect(http.StatusOK).Body
	goldenfile.Check(t, filepath.Join("..", "api", "openapi.json"), got)
}

// TestGoldenCatalog: the catalog as GET /v1/models serves it (indented for review) and as
// chaperone models prints it.
func TestGoldenCatalog(t *testing.T) {
	t.Parallel()
	p := startProxied(t)
	// The stand-in alignment server's address changes from run to run: it is {msa_server}.
	golden(t, "models.json", []byte(strings.ReplaceAll(string(indentJSON(t, p.get("/v1/models").expect(http.StatusOK).Body)), p.server.msa.URL, "{msa_server}")))
	golden(t, "models.txt", []byte(p.runCLI(t, "", nil, "models").expect(t, exitOK).stdout))
}

// TestGoldenResults: the results manifest (results.json of the archive) of a job of each
// kind, and the table chaperone jobs results prints for a prediction. The job id, the only
// part that changes from run to run, is written as {job_id}.
func TestGoldenResults(t *testing.T) {
	t.Parallel()
	p := startProxied(t)
	tests := []struct {
		kind, path string
		body       map[string]any
	}{
		{"predict", "/v1/predictions", map[string]any{"model": "boltz2", "name": "ok", "targets": []map[string]any{
			{"name": "a", "content": ">A\nMKTAYIAKQ\n"}, {"name": "b", "content": ">B\nGSGSGSGS\n"}}}},
		{"design", "/v1/designs", map[string]any{"protocol": "protein-anything", "params": map[string]any{"num_designs": 2, "budget": 2},
			"spec": "entities:\n  - protein:\n      id: B\n      sequence: 80..140\n"}},
		{"embed", "/v1/embeddings", map[string]any{"model": "esmc-300m", "sequences": []any{"MKTAYIAKQ", map[string]any{"id": "p2", "sequence": "GSGSGS"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			id := p.create(tt.path, tt.body)
			p.waitStatus(id, "succeeded")
			manifest := archiveEntry(t, p.get("/v1/jobs/"+id+"/archive").expect(http.StatusOK).Body, "results.json")
			golden(t, "results-"+tt.kind+".json", []byte(strings.ReplaceAll(string(manifest), id, "{job_id}")))
			if tt.kind == "predict" {
				table := p.runCLI(t, "", nil, "jobs", "results", id).expect(t, exitOK).stdout
				golden(t, "results-predict.txt", []byte(strings.ReplaceAll(table, id, "{job_id}")))
			}
		})
	}
}

// indentJSON indents a JSON text, keeping its keys in the order written.
func indentJSON(t *testing.T, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		t.Fatalf("not JSON: %v: %s", err, b)
	}
	out.WriteByte('\n')
	return out.Bytes()
}

// archiveEntry returns the contents of one file of a zip archive.
func archiveEntry(t *testing.T, archive []byte, name string) []byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(archive), int64(len(archive)))
	if err != nil {
		t.Fatalf("archive is not a zip: %v", err)
	}
	f, err := zr.Open(name)
	if err != nil {
		t.Fatalf("archive entry %s: %v", name, err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatalf("archive entry %s: %v", name, err)
	}
	return b
}
