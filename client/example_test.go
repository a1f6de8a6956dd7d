package client_test

import (
	"archive/zip"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/align/aligntest"
	"github.com/chaperone-bio/chaperone/app"
	"github.com/chaperone-bio/chaperone/catalog"
	"github.com/chaperone-bio/chaperone/client"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/enginetest"
)

// serverURL is a real chaperone server for the examples, started by TestMain. Its worker
// runs the test engine, which does what a job's name asks: "ok" (or any name it does not
// know) succeeds at once, "slow:N" takes N tenths of a second, "fail" fails.
var serverURL string

func TestMain(m *testing.M) {
	os.Exit(runWithServer(m))
}

func runWithServer(m *testing.M) int {
	dir, err := os.MkdirTemp("", "chaperone-client-example-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	a, stop, err := startServer(serverConfig(dir))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer stop()
	serverURL = a.URL
	return m.Run()
}

// startServer starts cfg's server on the stores of its data folder; stop closes both.
func startServer(cfg app.Config) (a *app.App, stop func(), err error) {
	stores, err := app.OpenStores(context.Background(), cfg.DataDir)
	if err != nil {
		return nil, nil, err
	}
	cfg.Store, cfg.Artifacts = stores.Jobs, stores.Artifacts
	a, err = app.Start(context.Background(), cfg)
	if err != nil {
		stores.Close()
		return nil, nil, err
	}
	return a, func() { a.Close(); stores.Close() }, nil
}

// serverConfig is a server with the test engine for the models the examples and tests
// use, on quick timings.
// colabfold is the stand-in ColabFold server that the examples' servers search on.
var colabfold = sync.OnceValue(func() *aligntest.ColabFold { return aligntest.NewColabFold(0) })

func serverConfig(dir string) app.Config {
	limits := catalog.DefaultLimits()
	limits.CreatesPerMinute = 10_000
	return app.Config{
		MSAServerURL: colabfold().URL,
		Addr:         "127.0.0.1:0",
		DataDir:      dir,
		Version:      "example",
		Logger:       slog.New(slog.DiscardHandler),
		Limits:       limits,
		Engines:      []engine.Engine{enginetest.New("boltz2", "esmfold2", "boltzgen", "esmc-300m", "esmc-600m")},
		Slots:        4,
		WorkerID:     "example-worker",
		Heartbeat:    50 * time.Millisecond,
		ReapEvery:    200 * time.Millisecond,
		LeaseTTL:     3 * time.Second,
	}
}

// Submit a prediction, wait for it, read its scores and save everything it produced.
func Example() {
	ctx := context.Background()
	c, err := client.New(serverURL) // for example http://127.0.0.1:8080
	if err != nil {
		panic(err)
	}
	j, err := c.CreatePrediction(ctx, &client.PredictRequest{
		Model:    "boltz2",
		Name:     "ok",
		Sequence: "MKTAYIAKQRQISFVKSHFSRQ",
		Params:   map[string]any{"use_msa_server": false},
	}, nil)
	if err != nil {
		panic(err)
	}
	j, err = c.Wait(ctx, j.ID, nil)
	if err != nil {
		panic(err)
	}
	if j.Status != client.Succeeded {
		panic(j.Error)
	}
	res, err := c.Results(ctx, j.ID)
	if err != nil {
		panic(err)
	}
	for _, row := range res.Rows {
		if row.Status != "ok" { // a failed target has an error and no scores
			fmt.Printf("%s failed: %s\n", row.ID, row.Error)
			continue
		}
		fmt.Printf("%s %s plddt=%.2f ptm=%.2f\n", row.ID, row.Status, *row.PLDDT, *row.PTM)
	}
	for _, a := range res.Artifacts {
		fmt.Println(a.Type, a.Path)
	}

	dir, _ := os.MkdirTemp("", "example-")
	defer os.RemoveAll(dir)
	zipPath := filepath.Join(dir, j.ID+".zip")
	if err := c.DownloadArchive(ctx, j.ID, zipPath); err != nil {
		panic(err)
	}
	zr, err := zip.OpenReader(zipPath)
	if err != nil {
		panic(err)
	}
	defer zr.Close()
	for _, f := range zr.File {
		fmt.Println("archive:", f.Name)
	}
	// Output:
	// t1 ok plddt=0.81 ptm=0.70
	// structure t1.cif
	// confidence t1/confidence.json
	// archive: results.json
	// archive: run.log
	// archive: t1.cif
	// archive: t1/confidence.json
}

// Wait reports the job's progress through a callback while it long-polls.
func ExampleClient_Wait() {
	ctx := context.Background()
	c, _ := client.New(serverURL)
	j, err := c.CreateEmbedding(ctx, &client.EmbedRequest{Model: "esmc-300m", Name: "slow:3", Sequence: "MKTAYIAKQ"}, nil)
	if err != nil {
		panic(err)
	}
	var last client.Status
	j, err = c.Wait(ctx, j.ID, func(j *client.Job) {
		// Called when the job is first seen and on every change; a terminal would redraw
		// a progress line here.
		last = j.Status
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(j.Status, *j.Progress, j.Stage, last)
	// Output: succeeded 1 writing succeeded
}

// A create is safe to repeat: the same Idempotency-Key returns the job the first call
// made. (Without one, the client makes up a key per call and reuses it for that call's
// retries.)
func ExampleCreateOptions() {
	ctx := context.Background()
	c, _ := client.New(serverURL)
	req := &client.PredictRequest{Name: "ok", Sequence: "MKTAYIAKQ", Params: map[string]any{"use_msa_server": false}}
	opts := &client.CreateOptions{IdempotencyKey: "nightly-run-2026-11-22"}
	first, err := c.CreatePrediction(ctx, req, opts)
	if err != nil {
		panic(err)
	}
	again, err := c.CreatePrediction(ctx, req, opts)
	if err != nil {
		panic(err)
	}
	fmt.Println(first.ID == again.ID)
	// Output: true
}

// Every error answer of the server is an *Error carrying its problem details.
func ExampleError() {
	c, _ := client.New(serverURL)
	_, err := c.GetJob(context.Background(), "00000000000000000000000000000000")
	var e *client.Error
	if errors.As(err, &e) {
		fmt.Println(e.Status, e.Slug(), e.Instance)
	}
	fmt.Println(client.IsNotFound(err))
	// Output:
	// 404 not-found /v1/jobs/00000000000000000000000000000000
	// true
}

// Jobs walks every page of the caller's jobs, newest first.
func ExampleClient_Jobs() {
	ctx := context.Background()
	c, _ := client.New(serverURL)
	for i := 1; i <= 3; i++ {
		if _, err := c.CreatePrediction(ctx, &client.PredictRequest{Name: fmt.Sprintf("listing-%d", i), Sequence: "MKTAYIAKQ"}, nil); err != nil {
			panic(err)
		}
	}
	for j, err := range c.Jobs(ctx, 2) {
		if err != nil {
			panic(err)
		}
		if strings.HasPrefix(j.Name, "listing-") {
			fmt.Println(j.Name)
		}
	}
	// Output:
	// listing-3
	// listing-2
	// listing-1
}

// FollowLogs copies the run log as it grows, until the job ends.
func ExampleClient_FollowLogs() {
	ctx := context.Background()
	c, _ := client.New(serverURL)
	j, err := c.CreatePrediction(ctx, &client.PredictRequest{Name: "slow:2", Sequence: "MKTAYIAKQ"}, nil)
	if err != nil {
		panic(err)
	}
	var log strings.Builder
	j, err = c.FollowLogs(ctx, j.ID, &log)
	if err != nil {
		panic(err)
	}
	for line := range strings.Lines(log.String()) {
		if strings.HasPrefix(line, "step") {
			fmt.Print(line)
		}
	}
	fmt.Println(j.Status)
	// Output:
	// step 1/2
	// step 2/2
	// succeeded
}

// OpenArtifact streams one file of the results.
func ExampleClient_OpenArtifact() {
	ctx := context.Background()
	c, _ := client.New(serverURL)
	j, _ := c.CreatePrediction(ctx, &client.PredictRequest{Name: "ok", Sequence: "MKTAYIAKQ"}, &client.CreateOptions{Wait: 10 * time.Second})
	if !j.Status.Terminal() {
		j, _ = c.Wait(ctx, j.ID, nil)
	}
	r, err := c.OpenArtifact(ctx, j.ID, "t1.cif")
	if err != nil {
		panic(err)
	}
	defer r.Close()
	io.Copy(os.Stdout, r)
	// Output:
	// data_t1
	// _entry.id t1
}
