package doctor_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/apikey"
	"github.com/chaperone-bio/chaperone/app"
	"github.com/chaperone-bio/chaperone/doctor"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/boltz"
	"github.com/chaperone-bio/chaperone/engine/boltz/boltztest"
	"github.com/chaperone-bio/chaperone/engine/openfold3"
	"github.com/chaperone-bio/chaperone/engine/pins"
	"github.com/chaperone-bio/chaperone/engine/pydriver"
	"github.com/chaperone-bio/chaperone/engine/pydriver/pydrivertest"
	"github.com/chaperone-bio/chaperone/engine/rfd3"
	"github.com/chaperone-bio/chaperone/engine/rfd3/rfd3test"
	"github.com/chaperone-bio/chaperone/internal/execfile"
	"github.com/chaperone-bio/chaperone/internal/golden"
)

// machine is a worker set up as an operator would, half way: boltz installed in a virtual
// environment of its own with its weights, rfd3 without its checkpoint, SaProt's Python
// without its weights, OpenFold3 pointed at a path where nothing is; one 24 GB GPU.
type machine struct {
	dir     string
	engines []engine.Engine
	tools   engine.Tools
	gpus    doctor.SystemGPUs
}

// newMachine sets up the machine under a fresh home folder. It sets the environment, so
// its tests cannot run in parallel.
func newMachine(t *testing.T) *machine {
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	t.Setenv("HOME", home)
	for _, v := range []string{"BOLTZ_CACHE", "HF_HOME", "HF_HUB_CACHE", "XDG_CACHE_HOME", "OPENFOLD_CACHE",
		"PROTENIX_ROOT_DIR", "OPENDDE_ROOT_DIR", "FOUNDRY_CHECKPOINT_DIRS"} {
		t.Setenv(v, "")
	}
	t.Setenv("CUDA_VISIBLE_DEVICES", "")
	os.Unsetenv("CUDA_VISIBLE_DEVICES")
	write := func(path, content string) string {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := execfile.Write(path, content); err != nil {
			t.Fatal(err)
		}
		return path
	}
	standIn, err := boltztest.Build(filepath.Join(dir, "standins"))
	if err != nil {
		t.Fatal(err)
	}
	// The venv's python answers importlib.metadata as the pinned Boltz would, and runs the
	// stand-in for the console script.
	python := write(filepath.Join(dir, "boltz-venv", "bin", "python3"),
		"#!/bin/sh\nif [ \"$1\" = -c ]; then echo "+pins.For("boltz").Version+"; exit 0; fi\nshift\nexec "+standIn+" \"$@\"\n")
	boltzScript := write(filepath.Join(dir, "boltz-venv", "bin", "boltz"), "#!"+python+"\n# a console script\n")
	for _, f := range []string{"boltz2_conf.ckpt", "boltz2_aff.ckpt", "mols.tar"} {
		write(filepath.Join(home, ".boltz", f), "weights")
	}
	rfd3Tool, err := rfd3test.Build(filepath.Join(dir, "standins"))
	if err != nil {
		t.Fatal(err)
	}
	smi := write(filepath.Join(dir, "nvidia-smi"), "#!/bin/sh\necho '0, NVIDIA L4, 23034, 512'\n")
	return &machine{
		dir: dir,
		engines: []engine.Engine{boltz.New(boltz.Config{}), openfold3.New(openfold3.Config{}), rfd3.New(),
			pydriver.Transformers()},
		tools: engine.Tools{"boltz": boltzScript, "run_openfold": filepath.Join(dir, "absent", "run_openfold"),
			"rfd3": rfd3Tool, "transformers": pydrivertest.Interpreter(t, dir)},
		gpus: doctor.SystemGPUs{NvidiaSMI: smi, Dev: filepath.Join(dir, "dev")},
	}
}

// startServer starts a chaperone server without a worker and returns its URL and a worker
// token of it.
func startServer(t *testing.T) (url, token string) {
	t.Helper()
	data := t.TempDir()
	stores, err := app.OpenStores(context.Background(), data)
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.Start(context.Background(), app.Config{Store: stores.Jobs, Artifacts: stores.Artifacts, Addr: "127.0.0.1:0",
		DataDir: data, Version: "test", NoWorker: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		stores.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); stores.Close() })
	token, rec := apikey.New("gpu-node-1", time.Now())
	rec.Worker = true
	if err := stores.Jobs.CreateKey(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	return a.URL, token
}

var elapsed = regexp.MustCompile(`in [0-9.]+[µnm]?s\b`)

// TestReportGolden: the table and the JSON doctor prints for a machine half set up,
// joining a server. What changes from run to run is written in braces: the temporary
// folder, the servers' addresses, the alignment server's answer time; the free disk is
// fixed before printing.
func TestReportGolden(t *testing.T) {
	m := newMachine(t)
	msa := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) }))
	defer msa.Close()
	server, token := startServer(t)
	r := doctor.Check(context.Background(), doctor.Config{Engines: m.engines, Tools: m.tools, DataDir: filepath.Join(m.dir, "data"),
		MSAServer: msa.URL, Server: server, Token: token, GPUs: m.gpus})
	if r.Disk.Path != m.dir || r.Disk.NeedGB == 0 {
		t.Errorf("disk checked at %s (need %v GB), want the data folder's nearest existing parent %s", r.Disk.Path, r.Disk.NeedGB, m.dir)
	}
	r.Disk.FreeGB, r.Disk.Status, r.Disk.Reason = 100, doctor.OK, "100 GB free in {dir} (a worker needs about 12 GB)"
	normalise := func(b []byte) []byte {
		s := strings.NewReplacer(m.dir, "{dir}", server, "{server}", msa.URL, "{msa}").Replace(string(b))
		return []byte(elapsed.ReplaceAllString(s, "in {time}"))
	}
	var table, js bytes.Buffer
	if err := r.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "report.txt"), normalise(table.Bytes()))
	golden.Check(t, filepath.Join("testdata", "report.json"), normalise(js.Bytes()))
	if r.Runnable != 4 {
		t.Errorf("%d models can run, want boltz2, rfd3 and both SaProts", r.Runnable)
	}
}

// TestServerChecks: a token the server does not know, and a server that does not answer.
func TestServerChecks(t *testing.T) {
	t.Parallel()
	server, _ := startServer(t)
	stranger, _ := apikey.New("stranger", time.Now())
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	tests := []struct {
		name          string
		server, token string
		reached       doctor.Status
		tokenStatus   doctor.Status
	}{
		{"an unknown token", server, stranger, doctor.OK, doctor.No},
		{"no token", server, "", doctor.OK, doctor.Skipped},
		{"no server", closed.URL, stranger, doctor.No, doctor.Skipped},
	}
	for _, tt := range tests {
		r := doctor.Check(context.Background(), doctor.Config{Server: tt.server, Token: tt.token, DataDir: t.TempDir(),
			GPUs: doctor.SystemGPUs{NvidiaSMI: "/nonexistent", Dev: t.TempDir()}})
		if r.Server == nil || r.Server.Reached.Status != tt.reached || r.Server.Token.Status != tt.tokenStatus {
			t.Errorf("%s: %+v; want reached %s, token %s", tt.name, r.Server, tt.reached, tt.tokenStatus)
		}
	}
}
