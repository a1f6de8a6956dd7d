package api

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/catalog"
	"github.com/chaperone-bio/chaperone/store"
)

// wholeReadsStore counts reads of whole jobs, input and results included.
type wholeReadsStore struct{ countingStore }

func (c *wholeReadsStore) GetJobSummary(ctx context.Context, id string) (*store.JobSummary, error) {
	return c.Store.GetJobSummary(ctx, id)
}

// Polling a succeeded job reads its whole row once, to learn whether it is partial; later
// polls answer from what the first one worked out, since a succeeded job never changes.
func TestPollingASucceededJobReadsItsResultsOnce(t *testing.T) {
	t.Parallel()
	st, arts := testStores(t)
	id := succeededJob(t, st, arts, "ATOM\n")
	counted := &wholeReadsStore{countingStore{Store: st}}
	srv := New(Config{Catalog: catalog.New(catalog.DefaultLimits()), Store: counted, Artifacts: arts,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), WorkerTTL: time.Hour})
	for range 3 {
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/v1/jobs/"+id, nil))
		if w.Code != http.StatusOK {
			t.Fatalf("GET: %d %s", w.Code, w.Body)
		}
	}
	if n := counted.reads.Load(); n != 1 {
		t.Errorf("three polls read the whole job %d times, want 1", n)
	}
}
