package client_test

import (
	"archive/zip"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/client"
)

// newServer starts a server of its own for one test, so that quotas and listings are not
// shared with other tests, and returns a client of it and its URL.
func newServer(t *testing.T) (*client.Client, string) {
	t.Helper()
	a, stop, err := startServer(serverConfig(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	c, err := client.New(a.URL, client.WithRetry(client.Retry{Attempts: 2, Backoff: 10 * time.Millisecond}))
	if err != nil {
		t.Fatal(err)
	}
	return c, a.URL
}

func TestEachKindThroughTheSDK(t *testing.T) {
	t.Parallel()
	c, _ := newServer(t)
	ctx := t.Context()
	tests := []struct {
		name   string
		create func() (*client.Job, error)
		check  func(t *testing.T, r *client.Results)
	}{
		{"prediction", func() (*client.Job, error) {
			return c.CreatePrediction(ctx, &client.PredictRequest{Name: "many:2", Targets: []client.Target{
				{Name: "a", Content: ">A\nMKTAYIAKQ\n"}, {Name: "b", Content: ">B\nGSGSGS\n"}}}, nil)
		}, func(t *testing.T, r *client.Results) {
			if len(r.Rows) != 2 || r.Rows[0].Status != "ok" || r.Rows[0].PLDDT == nil || r.Rows[1].ID != "t2" {
				t.Errorf("rows %+v", r.Rows)
			}
			if len(r.Artifacts) != 6 || r.Artifacts[4].Path != "extra/extra_1.txt" {
				t.Errorf("artifacts %+v", r.Artifacts)
			}
		}},
		{"design", func() (*client.Job, error) {
			return c.CreateDesign(ctx, &client.DesignRequest{Protocol: "protein-anything", Name: "ok",
				Spec:   "entities:\n  - protein:\n      id: B\n      sequence: 80..140\n",
				Params: map[string]any{"num_designs": 2, "budget": 2}}, nil)
		}, func(t *testing.T, r *client.Results) {
			if len(r.Designs) != 2 || *r.Designs[0].Rank != 1 || r.Designs[0].File != "t1.cif" || r.Designs[1].Metrics["ptm"] != 0.7 {
				t.Errorf("designs %+v", r.Designs)
			}
		}},
		{"embedding", func() (*client.Job, error) {
			return c.CreateEmbedding(ctx, &client.EmbedRequest{Model: "esmc-300m", Name: "ok", Sequences: []client.EmbedSequence{
				{Sequence: "MKTAYIAKQ"}, {ID: "p2", Sequence: "GSGSGS"}}, Params: map[string]any{"pool": "max"}}, nil)
		}, func(t *testing.T, r *client.Results) {
			if r.Model != "esmc-300m" || r.DModel != 4 || len(r.Sequences) != 2 || r.Sequences[1].ID != "p2" || r.Sequences[1].Length != 6 {
				t.Errorf("embedding results %+v", r)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			j, err := tt.create()
			if err != nil {
				t.Fatal(err)
			}
			j, err = c.Wait(ctx, j.ID, nil)
			if err != nil || j.Status != client.Succeeded || !j.ResultsReady || j.FinishedAt.IsZero() {
				t.Fatalf("Wait = %+v, %v", j, err)
			}
			r, err := c.Results(ctx, j.ID)
			if err != nil || !r.Ready || r.Kind != j.Kind || r.ArchiveURL != "/v1/jobs/"+j.ID+"/archive" {
				t.Fatalf("Results = %+v, %v", r, err)
			}
			tt.check(t, r)

			dir := t.TempDir()
			if err := c.DownloadArchive(ctx, j.ID, filepath.Join(dir, "all.zip")); err != nil {
				t.Fatal(err)
			}
			zr, err := zip.OpenReader(filepath.Join(dir, "all.zip"))
			if err != nil {
				t.Fatal(err)
			}
			defer zr.Close()
			if len(zr.File) != len(r.Artifacts)+2 {
				t.Errorf("archive has %d entries, want %d artifacts + results.json + run.log", len(zr.File), len(r.Artifacts))
			}
			for _, a := range r.Artifacts {
				dest := filepath.Join(dir, "files", filepath.FromSlash(a.Path))
				if err := c.DownloadArtifact(ctx, j.ID, a.Path, dest); err != nil {
					t.Fatalf("DownloadArtifact(%s): %v", a.Path, err)
				}
				rc, err := c.OpenArtifact(ctx, j.ID, a.Path)
				if err != nil {
					t.Fatal(err)
				}
				streamed, _ := io.ReadAll(rc)
				rc.Close()
				saved, _ := os.ReadFile(dest)
				if string(saved) != string(streamed) || len(saved) == 0 {
					t.Errorf("%s: saved %q, streamed %q", a.Path, saved, streamed)
				}
			}
		})
	}
}

// TestTypesMarshalToTheAPIsShape: what the SDK decodes, it encodes back to the same JSON,
// nulls included, so a program (the CLI's --json) can pass it on unchanged.
func TestTypesMarshalToTheAPIsShape(t *testing.T) {
	t.Parallel()
	c, url := newServer(t)
	ctx := t.Context()
	running, err := c.CreatePrediction(ctx, &client.PredictRequest{Name: "silent", Sequence: "MKTAYIAKQ"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CancelJob(ctx, running.ID)
	done, err := c.CreatePrediction(ctx, &client.PredictRequest{Name: "ok", Sequence: "MKTAYIAKQ"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Wait(ctx, done.ID, nil); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		path  string
		typed any
	}{
		{"/v1/jobs/" + running.ID, &client.Job{}},
		{"/v1/jobs/" + done.ID, &client.Job{}},
		{"/v1/jobs/" + done.ID + "/results", &client.Results{}},
		{"/v1/jobs/" + running.ID + "/results", &client.Results{}},
		{"/v1/jobs?limit=1", &client.JobList{}},
	} {
		res, err := http.Get(url + tt.path)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, tt.typed); err != nil {
			t.Fatal(err)
		}
		again, err := json.Marshal(tt.typed)
		if err != nil {
			t.Fatal(err)
		}
		var want, got any
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(again, &got); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(want, got) {
			t.Errorf("%s: the round trip changed the JSON:\n api: %s\n sdk: %s", tt.path, raw, again)
		}
	}
}

func TestCancelDeleteListAndErrorsAgainstARealServer(t *testing.T) {
	t.Parallel()
	c, _ := newServer(t)
	ctx := t.Context()
	var ids []string
	for _, name := range []string{"ok", "ok", "silent"} {
		j, err := c.CreatePrediction(ctx, &client.PredictRequest{Name: name, Sequence: "MKTAYIAKQ"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, j.ID)
	}
	running := ids[2]

	var listed []string
	for j, err := range c.Jobs(ctx, 1) {
		if err != nil {
			t.Fatal(err)
		}
		listed = append(listed, j.ID)
	}
	if want := []string{ids[2], ids[1], ids[0]}; !reflect.DeepEqual(listed, want) {
		t.Errorf("Jobs listed %v, want %v (newest first, one per page)", listed, want)
	}

	j, err := c.CancelJob(ctx, running)
	if err != nil || j.Status != client.Canceled {
		t.Fatalf("CancelJob = %+v, %v", j, err)
	}
	if _, err := c.Wait(ctx, ids[0], nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CancelJob(ctx, ids[0]); client.StatusCode(err) != http.StatusConflict {
		t.Errorf("cancel of a succeeded job: %v, want a 409", err)
	}
	if err := c.DeleteJob(ctx, ids[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetJob(ctx, ids[0]); !client.IsNotFound(err) {
		t.Errorf("GetJob after delete: %v, want a 404", err)
	}

	req := &client.PredictRequest{Name: "ok", Sequence: "MKTAYIAKQ"}
	if _, err := c.CreatePrediction(ctx, req, &client.CreateOptions{IdempotencyKey: "k"}); err != nil {
		t.Fatal(err)
	}
	other := &client.PredictRequest{Name: "ok", Sequence: "GSGSGS"}
	if _, err := c.CreatePrediction(ctx, other, &client.CreateOptions{IdempotencyKey: "k"}); client.StatusCode(err) != http.StatusUnprocessableEntity {
		t.Errorf("a key reused with another body: %v, want a 422", err)
	}
	_, err = c.CreatePrediction(ctx, &client.PredictRequest{Model: "alphafold9", Sequence: "MKT"}, nil)
	var e *client.Error
	if !errors.As(err, &e) || e.Status != http.StatusBadRequest || e.Slug() != "invalid-input" || !strings.Contains(e.Detail, "boltz2") {
		t.Errorf("an unknown model: %v, want a 400 listing the valid models", err)
	}

	cat, err := c.Models(ctx)
	if err != nil || len(cat.Models) == 0 || cat.Limits["list_max"] != 100 {
		t.Fatalf("Models = %+v, %v", cat, err)
	}
	doc, err := c.OpenAPI(ctx)
	if err != nil || !strings.Contains(string(doc), `"openapi"`) {
		t.Errorf("OpenAPI: %v", err)
	}
}

func TestRateLimitOutlastsRetries(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := serverConfig(dir)
	cfg.Limits.CreatesPerMinute = 1
	a, stop, err := startServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	// Retry-After is about a minute here, over this client's limit: it gives up at once.
	c, err := client.New(a.URL, client.WithRetry(client.Retry{Attempts: 3, MaxRetryAfter: time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	req := &client.PredictRequest{Name: "ok", Sequence: "MKTAYIAKQ"}
	if _, err := c.CreatePrediction(t.Context(), req, nil); err != nil {
		t.Fatal(err)
	}
	_, err = c.CreatePrediction(t.Context(), req, nil)
	var e *client.Error
	if !errors.As(err, &e) || !client.IsRateLimited(err) || e.RetryAfter < time.Second || e.Slug() != "rate-limited" {
		t.Fatalf("err = %v, want a 429 with its Retry-After", err)
	}
}
