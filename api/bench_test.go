package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/api"
	"github.com/chaperone-bio/chaperone/apikey"
	artifactfs "github.com/chaperone-bio/chaperone/artifact/fs"
	"github.com/chaperone-bio/chaperone/catalog"
	"github.com/chaperone-bio/chaperone/store"
	"github.com/chaperone-bio/chaperone/store/sqlite"
)

// These benchmarks measure the handlers with their real SQLite store but without a
// network: what a request costs the server apart from HTTP transport. cmd/chaperone-bench
// measures the whole server over loopback; store/sqlite benchmarks the store alone.

const benchBody = `{"sequence":"MKTAYIAKQRQISFVKSHFSRQ","name":"bench"}`

// benchServer is an API over a fresh store, with a live worker record for the models that
// creates use, and n API keys. The quotas are raised so that they never refuse, but every
// check still runs.
func benchServer(b *testing.B, n int) (http.Handler, []string) {
	b.Helper()
	ctx := context.Background()
	dir := b.TempDir()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "chaperone.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	arts, err := artifactfs.Open(filepath.Join(dir, "artifacts"))
	if err != nil {
		b.Fatal(err)
	}
	keys := make([]string, n)
	for i := range keys {
		key, rec := apikey.New(fmt.Sprint("bench-", i), time.Now())
		if err := st.CreateKey(ctx, rec); err != nil {
			b.Fatal(err)
		}
		keys[i] = key
	}
	if err := st.PutWorker(ctx, store.Worker{ID: "bench", Models: []string{catalog.DefaultPredictModel},
		Slots: 1, SeenAt: time.Now()}); err != nil {
		b.Fatal(err)
	}
	limits := catalog.DefaultLimits()
	limits.ActiveJobsPerOwner = 1 << 30
	limits.CreatesPerMinute = 1 << 30
	limits.QueuedJobs = 1 << 30
	limits.RetainedJobs = 1 << 30
	srv := api.New(api.Config{
		Catalog:   catalog.New(limits),
		Store:     st,
		Artifacts: arts,
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
		WorkerTTL: time.Hour, // the worker record stays live for the whole benchmark
	})
	return srv, keys
}

func benchRequest(method, path, key string, body []byte) *http.Request {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	r := httptest.NewRequest(method, path, rd)
	r.Header.Set("Authorization", "Bearer "+key)
	if body != nil {
		r.Header.Set("Content-Type", "application/json")
	}
	return r
}

// BenchmarkCreatePrediction is POST /v1/predictions: validation, key check, availability,
// and the durable create with every quota check. The creates are spread over many owners,
// as the per-owner quotas keep them in a real deployment: an owner's quota checks count
// its own active and recent jobs.
func BenchmarkCreatePrediction(b *testing.B) {
	h, keys := benchServer(b, 1000)
	body := []byte(benchBody)
	var n atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			key := keys[n.Add(1)%int64(len(keys))]
			w := httptest.NewRecorder()
			h.ServeHTTP(w, benchRequest(http.MethodPost, "/v1/predictions", key, body))
			if w.Code != http.StatusAccepted {
				b.Errorf("status %d: %s", w.Code, w.Body)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "creates/s")
}

// BenchmarkGetJob is GET /v1/jobs/{id} of a queued job: key check, one read, the view.
func BenchmarkGetJob(b *testing.B) {
	h, keys := benchServer(b, 1)
	key := keys[0]
	w := httptest.NewRecorder()
	h.ServeHTTP(w, benchRequest(http.MethodPost, "/v1/predictions", key, []byte(benchBody)))
	var j struct{ ID string }
	if err := json.Unmarshal(w.Body.Bytes(), &j); err != nil || w.Code != http.StatusAccepted {
		b.Fatalf("create: %d %s", w.Code, w.Body)
	}
	path := "/v1/jobs/" + j.ID
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, benchRequest(http.MethodGet, path, key, nil))
			if w.Code != http.StatusOK {
				b.Errorf("status %d: %s", w.Code, w.Body)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "gets/s")
}
