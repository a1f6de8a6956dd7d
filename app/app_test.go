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

func TestStartNeedsItsStores(t *testing.T) {
	t.Parallel()
	if _, err := Start(context.Background(), Config{Addr: "127.0.0.1:0", DataDir: t.TempDir()}); err == nil {
		t.Error("Start without stores succeeded")
	}
}
