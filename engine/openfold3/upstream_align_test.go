package openfold3

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/internal/enginerun"
	"github.com/chaperone-bio/chaperone/internal/realtools"
)

// TestUpstreamAlignWithoutRCSB: the engine's search on the MSA server gives its alignments on
// a worker that cannot reach data.rcsb.org, when the server returns template hits, as
// ColabFold's servers do for every search in env mode. The real align-msa-server maps every
// hit's chain through data.rcsb.org and raises when it cannot
// (core/data/tools/colabfold_msa_server.py:895-927, rscb.py:38-74). The proxy here refuses
// every connection but the local MSA server's.
func TestUpstreamAlignWithoutRCSB(t *testing.T) {
	env := realtools.Require(t, "run_openfold")
	isolate(t)
	t.Setenv("HTTPS_PROXY", "http://127.0.0.1:9")
	t.Setenv("HTTP_PROXY", "http://127.0.0.1:9")
	t.Setenv("NO_PROXY", "127.0.0.1,localhost")
	const seq = "MKTAYIAKQRQISFVKSHFSRQ"
	msa := colabFoldWithTemplates(t)

	e := New(Config{MSAServerURL: msa.URL})
	work := t.TempDir()
	var rec enginerun.Recorder
	run := &engine.Run{Job: newJob(t, `{"sequence": "`+seq+`"}`), WorkDir: work, CacheDir: t.TempDir(), Log: &rec.Log, Report: rec.Report}
	p, err := e.plan(run, work)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.prepare(); err != nil {
		t.Fatal(err)
	}
	cmd, ok := p.alignCommand(env.Bin("run_openfold"))
	if !ok {
		t.Fatal("no search")
	}
	out, err := exec.CommandContext(context.Background(), cmd.Path, cmd.Args...).CombinedOutput()
	p.takeAlignments(err)
	if why := p.alignFailed["target_1"]; why != "" {
		t.Fatalf("%s\n%s", why, out)
	}
	b, err := os.ReadFile(filepath.Join(entityDir(p.files, "target_1", 0), mainMSA))
	if err != nil || !strings.Contains(string(b), ">UniRef100_X\n") {
		t.Errorf("the main alignment: %v\n%s\n%s", err, b, out)
	}
}

// colabFoldWithTemplates is a ColabFold MSA server whose every search finds one UniRef hit,
// one environmental hit and one template (pdb70.m8).
func colabFoldWithTemplates(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/ticket/msa":
			query := strings.TrimSpace(strings.TrimPrefix(r.FormValue("q"), ">101\n"))
			fmt.Fprintf(w, `{"id": "ticket-%s", "status": "COMPLETE"}`, query)
		case strings.HasPrefix(r.URL.Path, "/result/download/ticket-"):
			query := strings.TrimPrefix(r.URL.Path, "/result/download/ticket-")
			gz := gzip.NewWriter(w)
			tw := tar.NewWriter(gz)
			for _, f := range []struct{ name, text string }{
				{"uniref.a3m", ">101\n" + query + "\n>UniRef100_X\n" + query + "\n\x00"},
				{"bfd.mgnify30.metaeuk30.smag30.a3m", ">101\n" + query + "\n>MGYP1\n" + query + "\n\x00"},
				{"pdb70.m8", "101\t1abc_A\t0.95\t22\t1\t0\t1\t22\t1\t22\t1e-10\t80\n"},
			} {
				_ = tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.text))})
				_, _ = tw.Write([]byte(f.text))
			}
			_ = tw.Close()
			_ = gz.Close()
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}
