package api

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/artifact"
	"github.com/chaperone-bio/chaperone/catalog"
	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/store"
)

// hangUpStore ends the request, as a client that hangs up would, right after a write has
// removed jobs from the store: the request's context is canceled before the server has
// removed their files.
type hangUpStore struct {
	store.Store
	hangUp context.CancelFunc
}

func (s *hangUpStore) DeleteJob(ctx context.Context, id string, owner job.Owner) (*store.JobSummary, error) {
	defer s.hangUp()
	return s.Store.DeleteJob(ctx, id, owner)
}

func (s *hangUpStore) CreateJob(ctx context.Context, j *job.Job, opts store.CreateOptions) (store.CreateResult, error) {
	defer s.hangUp()
	return s.Store.CreateJob(ctx, j, opts)
}

// The caller of these requests: httptest's default client address.
var testOwner = job.Owner{Kind: job.OwnerIP, ID: "192.0.2.1"}

func TestFilesOfRemovedJobsGoEvenWhenTheCallerHangsUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, arts := testStores(t)
	finished := func() string { return succeededJob(t, st, arts, "data_t1\n") }
	// serve runs one request that the caller abandons once the store has removed the jobs.
	serve := func(limits catalog.Limits, method, path, body string) *httptest.ResponseRecorder {
		t.Helper()
		reqCtx, hangUp := context.WithCancel(ctx)
		defer hangUp()
		srv := New(Config{Catalog: catalog.New(limits), Store: &hangUpStore{Store: st, hangUp: hangUp}, Artifacts: arts,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), WorkerTTL: time.Hour})
		w := httptest.NewRecorder()
		r := httptest.NewRequestWithContext(reqCtx, method, path, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		srv.ServeHTTP(w, r)
		return w
	}
	filesGone := func(id string) {
		t.Helper()
		if _, err := arts.Open(ctx, id, 1, "t1.cif"); !errors.Is(err, artifact.ErrNotFound) {
			t.Errorf("the files of removed job %s are still there (%v)", id, err)
		}
	}

	deleted := finished()
	if w := serve(catalog.DefaultLimits(), http.MethodDelete, "/v1/jobs/"+deleted, ""); w.Code != http.StatusOK {
		t.Fatalf("delete: %d %s", w.Code, w.Body)
	}
	filesGone(deleted)

	evicted := finished()
	limits := catalog.DefaultLimits()
	limits.RetainedJobs = 1
	if w := serve(limits, http.MethodPost, "/v1/predictions", `{"sequence": "MKT"}`); w.Code != http.StatusAccepted {
		t.Fatalf("create: %d %s", w.Code, w.Body)
	}
	if _, err := st.GetJob(ctx, evicted); !errors.Is(err, job.ErrNotFound) {
		t.Fatalf("the create evicted nothing: %v", err)
	}
	filesGone(evicted)
}
