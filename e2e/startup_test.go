package e2e

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/app"
	"github.com/chaperone-bio/chaperone/catalog"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/enginetest"
)

// slowCheck is an engine whose self-check lasts until released, as a real Boltz's does
// while Python imports torch.
type slowCheck struct {
	*enginetest.Engine
	checking chan struct{} // receives when a check begins
	release  chan struct{} // closed to let checks finish
}

func (e *slowCheck) Check(ctx context.Context, tools engine.Tools) error {
	select {
	case e.checking <- struct{}{}:
	default:
	}
	<-e.release
	return e.Engine.Check(ctx, tools)
}

// startSlowly starts a server whose first engine check is under way when it returns;
// closing eng.release ends it, and started returns the server once app.Start returned.
func startSlowly(t *testing.T) (base string, eng *slowCheck, started func() *app.App) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	eng = &slowCheck{Engine: enginetest.New(testModels...), checking: make(chan struct{}, 1), release: make(chan struct{})}
	dir := t.TempDir()
	stores, err := app.OpenStores(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan *app.App, 1)
	go func() {
		a, err := app.Start(context.Background(), app.Config{Store: stores.Jobs, Artifacts: stores.Artifacts,
			Addr: addr, DataDir: dir, Version: "test", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			Limits: catalog.DefaultLimits(), Engines: []engine.Engine{eng}, Slots: 1, WorkerID: "slow"})
		if err != nil {
			t.Error(err)
		}
		done <- a
	}()
	started = sync.OnceValue(func() *app.App { return <-done })
	t.Cleanup(func() {
		if a := started(); a != nil {
			a.Close()
		}
		stores.Close()
	})
	select {
	case <-eng.checking:
	case <-time.After(20 * time.Second):
		t.Fatal("the engine check did not begin")
	}
	// The listener is bound before the worker checks its engines.
	return "http://" + addr, eng, started
}

// TestStartUpIsReportedAndCreatesWaitForIt: while the first engine check runs, health
// says not ready, /v1/ready is a 503, and a create waits for the check and then succeeds.
func TestStartUpIsReportedAndCreatesWaitForIt(t *testing.T) {
	t.Parallel()
	base, eng, started := startSlowly(t)
	health := call(t, base, http.MethodGet, "/v1/health", nil).expect(http.StatusOK).json()
	mustf(t, health["status"] == "ok" && health["ready"] == false, "health during start-up: %v", health)
	ready := call(t, base, http.MethodGet, "/v1/ready", nil)
	ready.problem(http.StatusServiceUnavailable, "unavailable")
	mustf(t, ready.Header.Get("Retry-After") == "5", "Retry-After %q during start-up", ready.Header.Get("Retry-After"))

	created := make(chan *response, 1)
	go func() {
		created <- call(t, base, http.MethodPost, "/v1/predictions", map[string]any{"sequence": "MKTAYIAK", "name": "ok"})
	}()
	close(eng.release)
	select {
	case r := <-created:
		r.expect(http.StatusAccepted)
	case <-time.After(20 * time.Second):
		t.Fatal("the create did not finish after start-up")
	}
	started()
	health = call(t, base, http.MethodGet, "/v1/health", nil).expect(http.StatusOK).json()
	mustf(t, health["ready"] == true, "health after start-up: %v", health)
	mustf(t, call(t, base, http.MethodGet, "/v1/ready", nil).expect(http.StatusOK).json()["ready"] == true, "not ready after start-up")
}

// TestACreateThatStartUpKeepsTooLongGetsAShortRetryAfter: a create waits for start-up at
// most the startup wait, then is told to come back in seconds, not minutes.
func TestACreateThatStartUpKeepsTooLongGetsAShortRetryAfter(t *testing.T) {
	t.Parallel()
	base, eng, _ := startSlowly(t)
	defer close(eng.release)
	begun := time.Now()
	r := call(t, base, http.MethodPost, "/v1/predictions", map[string]any{"sequence": "MKTAYIAK"})
	r.problem(http.StatusServiceUnavailable, "unavailable")
	after, err := strconv.Atoi(r.Header.Get("Retry-After"))
	mustf(t, err == nil && after > 0 && after <= 5, "Retry-After %q during start-up", r.Header.Get("Retry-After"))
	mustf(t, time.Since(begun) >= 9*time.Second, "the create waited only %v for start-up", time.Since(begun))
}
