package app

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/chaperone-bio/chaperone/catalog"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/boltz"
	"github.com/chaperone-bio/chaperone/engine/enginetest"
)

// openUnder lists the files this process holds open under dir, read from /proc/self/fd.
func openUnder(t *testing.T, dir string) []string {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd to count open files")
	}
	var held []string
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err == nil && strings.HasPrefix(target, dir) {
			held = append(held, target)
		}
	}
	return held
}

func TestAServerLeavesNoFileOpenOnceClosedOrFailedToStart(t *testing.T) {
	t.Parallel()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))

	config := func(addr, dir string) (Config, Stores) {
		t.Helper()
		stores, err := OpenStores(context.Background(), dir)
		if err != nil {
			t.Fatal(err)
		}
		return Config{Store: stores.Jobs, Artifacts: stores.Artifacts, Addr: addr, DataDir: dir,
			NoWorker: true, Logger: quiet}, stores
	}

	dir := t.TempDir()
	cfg, stores := config("127.0.0.1:0", dir)
	a, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(a.Close(), stores.Close()); err != nil {
		t.Fatal(err)
	}
	if held := openUnder(t, dir); len(held) > 0 {
		t.Errorf("after Close the server and its stores still hold %v", held)
	}
	runtime.KeepAlive(a) // a file left open must be found open, not closed by a finalizer

	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	dir = t.TempDir()
	cfg, stores = config(taken.Addr().String(), dir)
	if _, err := Start(context.Background(), cfg); err == nil {
		t.Fatal("Start on a taken address succeeded")
	}
	if err := stores.Close(); err != nil {
		t.Fatal(err)
	}
	if held := openUnder(t, dir); len(held) > 0 {
		t.Errorf("after a failed start and closing the stores, %v are still held", held)
	}
}

// A configuration that sets some limits gets the defaults of the rest, and so does the
// worker, whose runtime and stall caps must be the ones GET /v1/models advertises.
func TestLimitsLeftUnsetTakeTheAdvertisedDefaults(t *testing.T) {
	t.Parallel()
	got := withDefaults(Config{Limits: catalog.Limits{QueuedJobs: 5}}).Limits
	want := catalog.DefaultLimits()
	want.QueuedJobs = 5
	if got != want {
		t.Errorf("limits = %+v, want %+v", got, want)
	}
}

func TestGPUsFollowCUDAVisibleDevices(t *testing.T) {
	tests := []struct {
		env  string
		want []string
	}{
		{"2,3", []string{"2", "3"}},
		{" 1 , 0 ", []string{"1", "0"}},
		{"GPU-5f1e-uuid", []string{"GPU-5f1e-uuid"}},
		{"", nil},
	}
	for _, tt := range tests {
		t.Setenv("CUDA_VISIBLE_DEVICES", tt.env)
		if got := GPUs(); !slices.Equal(got, tt.want) {
			t.Errorf("CUDA_VISIBLE_DEVICES=%q: GPUs() = %q, want %q", tt.env, got, tt.want)
		}
	}
}

// The catalog learns the input rules of the engines the server is given, worker or not.
func TestTheCatalogLearnsTheEnginesInputRules(t *testing.T) {
	t.Parallel()
	input := `"input": "sequences:\n  - protein: {id: A, sequence: MK}\n  - protein: {id: B, sequence: MK, cyclic: true}\n"`
	submit := func(cat *catalog.Catalog) error {
		var r catalog.PredictRequest
		if err := catalog.Decode([]byte(`{"model": "boltz2", `+input+`}`), &r); err != nil {
			t.Fatal(err)
		}
		_, err := cat.NewPredict(&r)
		return err
	}
	cat := catalog.Default()
	if err := addInputRules(cat, []engine.Engine{enginetest.New("boltz2")}); err != nil || submit(cat) != nil {
		t.Fatalf("an engine without rules: %v, %v", err, submit(cat))
	}
	if err := addInputRules(cat, []engine.Engine{boltz.New(boltz.Config{})}); err != nil {
		t.Fatal(err)
	}
	if err := submit(cat); err == nil || !strings.Contains(err.Error(), "Boltz reads them as copies of one molecule") {
		t.Errorf("with the boltz engine: %v, want Boltz's rule", err)
	}
	if err := addInputRules(catalog.Default(), []engine.Engine{renamed{boltz.New(boltz.Config{}), "fold9"}}); err == nil {
		t.Error("rules of a model the catalog lacks were accepted")
	}
}

// renamed is an engine with rules that claims a model of another name.
type renamed struct {
	*boltz.Engine
	model string
}

func (r renamed) Models() []string { return []string{r.model} }

func TestStartNeedsItsStores(t *testing.T) {
	t.Parallel()
	if _, err := Start(context.Background(), Config{Addr: "127.0.0.1:0", DataDir: t.TempDir()}); err == nil {
		t.Error("Start without stores succeeded")
	}
}
