package slurm

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/internal/slurmtest"
	"github.com/chaperone-bio/chaperone/worker"
)

// refusingQueue took the executor at start and refuses it from the first lease on, as a
// server does once the executor's token is revoked.
type refusingQueue struct{ acceptingQueue }

func (refusingQueue) Announce(context.Context, worker.Announcement) (worker.Timing, error) {
	return worker.Timing{LeaseTTL: time.Minute, Heartbeat: time.Second}, nil
}

func (refusingQueue) Lease(context.Context, worker.LeaseRequest) (*worker.Lease, error) {
	return nil, worker.ErrRefused
}

// TestARefusedExecutorStops: an executor the server refuses stops by itself, saying why
// once, instead of trying to lease again every second.
func TestARefusedExecutorStops(t *testing.T) {
	slurmtest.Require(t)
	var log bytes.Buffer
	e := New(Config{WorkerID: "revoked-test", Dir: t.TempDir(), Queue: refusingQueue{}, Binary: "/bin/true",
		Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-e.Stopped():
	case <-time.After(30 * time.Second):
		t.Fatalf("the executor still runs 30 s after the server refused it; its log:\n%s", &log)
	}
	if err := e.Wait(); !errors.Is(err, worker.ErrRevoked) {
		t.Errorf("Wait = %v, want ErrRevoked", err)
	}
	if strings.Contains(log.String(), "level=WARN") {
		t.Errorf("the executor warned on its way out:\n%s", &log)
	}
}
