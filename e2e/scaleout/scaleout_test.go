// Package scaleout tests a scaled-out deployment from the outside: two serve replicas
// without workers on one PostgreSQL database and one shared artifact store (a folder, or
// an S3 bucket), and two
// remote workers in processes of their own that reach the replicas over HTTP with a
// worker token, so that a test can kill one with SIGKILL.
package scaleout

import (
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/apikey"
	"github.com/chaperone-bio/chaperone/app"
	"github.com/chaperone-bio/chaperone/artifact/s3/s3test"
	"github.com/chaperone-bio/chaperone/catalog"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/enginetest"
	"github.com/chaperone-bio/chaperone/store/postgres/pgtest"
	"github.com/chaperone-bio/chaperone/worker"
	"github.com/chaperone-bio/chaperone/worker/remote"
)

// drainTimeout is how long a worker process drains on SIGTERM.
const drainTimeout = 20 * time.Second

// workerEnv, when set to "URL TOKEN ID DIR", makes the test binary a remote worker
// instead of running tests.
const workerEnv = "CHAPERONE_SCALEOUT_WORKER"

func TestMain(m *testing.M) {
	if v := os.Getenv(workerEnv); v != "" {
		runWorker(strings.Fields(v))
		return
	}
	if v := os.Getenv(replicaEnv); v != "" {
		runReplica(strings.Fields(v))
		return
	}
	code := pgtest.Main(m)
	s3test.Cleanup()
	os.Exit(code)
}

// runWorker is a remote worker with the test engine, as chaperone worker runs the real
// ones (its log JSON on stderr): it prints "ready" once the server knows it, and on
// SIGTERM drains for up to drainTimeout before it stops.
func runWorker(args []string) {
	signaled, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	q, err := remote.NewClient(args[0], args[1])
	if err == nil {
		var w *worker.Worker
		w, err = app.NewWorker(app.WorkerConfig{ID: args[2], Slots: 1, DataDir: args[3],
			Engines: []engine.Engine{enginetest.New("boltz2")}, Queue: q,
			Logger: slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
		if err == nil {
			err = w.Start(ctx)
		}
		if err == nil {
			fmt.Println("ready")
			<-signaled.Done()
			drained, done := context.WithTimeout(context.Background(), drainTimeout)
			_ = w.Drain(drained) // past the timeout, Wait hands back what still runs
			done()
			cancel()
			err = w.Wait()
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// startReplica starts a serve replica without a worker on the shared database and folder.
func startReplica(t *testing.T, dbURL, artifacts string) *app.App {
	t.Helper()
	loc := app.Locations{DataDir: t.TempDir(), Store: dbURL, Artifacts: artifacts}
	stores, err := app.OpenStoresAt(context.Background(), loc)
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.Start(context.Background(), app.Config{
		Store: stores.Jobs, Artifacts: stores.Artifacts, Addr: "127.0.0.1:0", DataDir: loc.DataDir,
		Logger: slog.New(slog.DiscardHandler), Limits: catalog.DefaultLimits(), NoWorker: true,
		Engines:      []engine.Engine{enginetest.New("boltz2")},
		MSAServerURL: standInMSA().URL,
		Heartbeat:    100 * time.Millisecond, ReapEvery: 200 * time.Millisecond, LeaseTTL: 2 * time.Second,
	})
	if err != nil {
		stores.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); stores.Close() })
	return a
}

// startWorker starts a remote worker process on server with its data in dir and waits
// until it is ready.
func startWorker(t *testing.T, server, token, id, dir string) *exec.Cmd {
	t.Helper()
	return startWorkerLogging(t, server, token, id, dir, os.Stderr)
}

// startWorkerLogging is startWorker with the worker's own log going to stderr.
func startWorkerLogging(t *testing.T, server, token, id, dir string, stderr io.Writer) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %s %s %s", workerEnv, server, token, id, dir))
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("worker %s did not start: %q %v", id, line, err)
	}
	return cmd
}

// processesIn lists the processes whose working folder is dir or below it: a job's tool
// runs in its work folder.
func processesIn(dir string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if err == nil && (cwd == dir || strings.HasPrefix(cwd, dir+"/")) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// call makes one request and returns the status and body.
func call(t *testing.T, method, url string, body any, headers ...string) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, b
}

func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("not JSON: %s", b)
	}
	return m
}

func create(t *testing.T, a *app.App, name string) string {
	t.Helper()
	status, b := call(t, http.MethodPost, a.URL+"/v1/predictions",
		map[string]any{"model": "boltz2", "sequence": "MKTAYIAKQRQISFVKSHFSRQ", "name": name})
	if status != http.StatusAccepted {
		t.Fatalf("create = %d %s", status, b)
	}
	return decode(t, b)["id"].(string)
}

// waitStatus long-polls job id on a until it has status.
func waitStatus(t *testing.T, a *app.App, id, status string, timeout time.Duration) map[string]any {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		code, b := call(t, http.MethodGet, a.URL+"/v1/jobs/"+id, nil, "Prefer: wait=1")
		if code != http.StatusOK {
			t.Fatalf("GET job = %d %s", code, b)
		}
		j := decode(t, b)
		if j["status"] == status {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s not %s within %s: %s", id, status, timeout, b)
		}
	}
}

// TestScaleOutSharedFolder: the replicas share an artifact folder.
func TestScaleOutSharedFolder(t *testing.T) {
	scaleOut(t, pgtest.Database(t), t.TempDir())
}

// TestScaleOutS3: the replicas share an S3 bucket, configured as an operator would, with
// an s3:// location and the AWS environment.
func TestScaleOutS3(t *testing.T) {
	location, env := s3test.Location(s3test.Bucket(t))
	for k, v := range env {
		t.Setenv(k, v)
	}
	scaleOut(t, pgtest.Database(t), location)
}

func scaleOut(t *testing.T, dbURL, shared string) {
	a := startReplica(t, dbURL, shared)
	b := startReplica(t, dbURL, shared)

	token, rec := apikey.New("gpu-nodes", time.Now())
	rec.Worker = true
	if err := a.Store.CreateKey(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	dirs := map[string]string{"gpu-1": t.TempDir(), "gpu-2": t.TempDir()}
	workers := map[string]*exec.Cmd{
		"gpu-1": startWorker(t, a.URL, token, "gpu-1", dirs["gpu-1"]),
		"gpu-2": startWorker(t, b.URL, token, "gpu-2", dirs["gpu-2"]),
	}

	t.Run("a cancel through another replica stops the tool within a second", func(t *testing.T) {
		id := create(t, a, "silent")
		waitStatus(t, b, id, "running", 20*time.Second)
		j, err := a.Store.GetJob(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		work := filepath.Join(dirs[strings.TrimPrefix(j.WorkerID, "gpu-nodes/")], "work")
		// Another process's children give no signal to wait on: /proc is polled.
		for deadline := time.Now().Add(10 * time.Second); len(processesIn(work)) == 0; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no process of job %s runs in %s", id, work)
			}
		}
		if code, body := call(t, http.MethodPost, b.URL+"/v1/jobs/"+id+"/cancel", nil); code != http.StatusOK {
			t.Fatalf("cancel = %d %s", code, body)
		}
		// The replicas' heartbeat is 100 ms here (1 s by default): the worker learns of the
		// cancel at its next one and stops the tool's process group at once.
		canceled := time.Now()
		for ; len(processesIn(work)) > 0; time.Sleep(10 * time.Millisecond) {
			if time.Since(canceled) > time.Second {
				t.Fatalf("the tool still runs %s after the cancel", time.Since(canceled))
			}
		}
	})

	t.Run("create on one replica, wait and download on either", func(t *testing.T) {
		id := create(t, a, "ok")
		start := time.Now()
		code, body := call(t, http.MethodGet, b.URL+"/v1/jobs/"+id, nil, "Prefer: wait=20")
		if code != http.StatusOK || decode(t, body)["status"] != "succeeded" {
			t.Fatalf("a wait on the other replica answered %d %s after %s", code, body, time.Since(start))
		}
		code, body = call(t, http.MethodGet, a.URL+"/v1/jobs/"+id+"/results", nil)
		if code != http.StatusOK {
			t.Fatalf("results = %d %s", code, body)
		}
		arts, _ := decode(t, body)["artifacts"].([]any)
		if len(arts) == 0 {
			t.Fatalf("no artifacts in %s", body)
		}
		path := arts[0].(map[string]any)["path"].(string)
		codeA, fromA := call(t, http.MethodGet, a.URL+"/v1/jobs/"+id+"/artifacts/"+path, nil)
		codeB, fromB := call(t, http.MethodGet, b.URL+"/v1/jobs/"+id+"/artifacts/"+path, nil)
		if codeA != http.StatusOK || codeB != http.StatusOK || len(fromA) == 0 || !bytes.Equal(fromA, fromB) {
			t.Errorf("artifact %s: %d (%d bytes) from one replica, %d (%d bytes) from the other; want the same file",
				path, codeA, len(fromA), codeB, len(fromB))
		}
		code, tail := call(t, http.MethodGet, b.URL+"/v1/jobs/"+id+"/artifacts/"+path, nil, "Range: bytes=1-")
		if code != http.StatusPartialContent || len(fromA) < 2 || !bytes.Equal(tail, fromA[1:]) {
			t.Errorf("a Range download answered %d with %d bytes, want 206 with all but the first of %d", code, len(tail), len(fromA))
		}
		code, zipped := call(t, http.MethodGet, b.URL+"/v1/jobs/"+id+"/archive", nil)
		if zr, err := zip.NewReader(bytes.NewReader(zipped), int64(len(zipped))); code != http.StatusOK || err != nil || len(zr.File) == 0 {
			t.Errorf("the archive answered %d, %d bytes (%v), want a zip of the job's files", code, len(zipped), err)
		}
	})

	t.Run("a worker killed mid-job: the job finishes on the other", func(t *testing.T) {
		id := create(t, b, "slow:20")
		waitStatus(t, a, id, "running", 20*time.Second)
		j, err := a.Store.GetJob(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		victim, ok := workers[strings.TrimPrefix(j.WorkerID, "gpu-nodes/")]
		if !ok {
			t.Fatalf("job %s runs on %q, not on a test worker", id, j.WorkerID)
		}
		if err := victim.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		waitStatus(t, b, id, "succeeded", 30*time.Second)
		j, err = a.Store.GetJob(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if j.Attempt != 2 || j.WorkerID == "" || workers[strings.TrimPrefix(j.WorkerID, "gpu-nodes/")] == victim {
			t.Errorf("the job finished at attempt %d on %q; want attempt 2 on the surviving worker", j.Attempt, j.WorkerID)
		}
	})

	t.Run("SIGTERM: the worker finishes its job before it stops", func(t *testing.T) {
		id := create(t, a, "slow:10")
		waitStatus(t, b, id, "running", 20*time.Second)
		j, err := a.Store.GetJob(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		w, ok := workers[strings.TrimPrefix(j.WorkerID, "gpu-nodes/")]
		if !ok || w.ProcessState != nil {
			t.Fatalf("job %s runs on %q, not on a live test worker", id, j.WorkerID)
		}
		if err := w.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := w.Wait(); err != nil {
			t.Fatalf("the worker exited with %v after SIGTERM", err)
		}
		j, err = a.Store.GetJob(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if j.Status != "succeeded" || j.Attempt != 1 {
			t.Errorf("after the worker drained and stopped, the job is %s at attempt %d; want succeeded at 1", j.Status, j.Attempt)
		}
	})

	t.Run("a revoked worker token is refused", func(t *testing.T) {
		c, err := remote.NewClient(a.URL, token)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Announce(context.Background(), worker.Announcement{WorkerID: "probe"}); err != nil {
			t.Fatalf("a live worker token: %v", err)
		}
		if code, _ := call(t, http.MethodGet, a.URL+"/v1/jobs", nil, "Authorization: Bearer "+token); code != http.StatusUnauthorized {
			t.Errorf("a worker token on GET /v1/jobs = %d, want 401", code)
		}
		if err := b.Store.RevokeKey(context.Background(), rec.ID, time.Now()); err != nil {
			t.Fatal(err)
		}
		for _, r := range []*app.App{a, b} {
			c, _ := remote.NewClient(r.URL, token)
			if _, err := c.Announce(context.Background(), worker.Announcement{WorkerID: "probe"}); !errors.Is(err, remote.ErrUnauthorized) {
				t.Errorf("a revoked worker token at %s: error = %v, want ErrUnauthorized", r.URL, err)
			}
		}
	})
}
