package slurm

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/enginetest"
	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/worker"
)

// jobFolder writes the folder of a lease as the executor does, and returns it. The batch
// job takes its executor for gone once alive is ttl old.
func jobFolder(t *testing.T, name string, ttl time.Duration) (*Executor, *tracked) {
	t.Helper()
	e := New(Config{WorkerID: "login-1", Dir: t.TempDir(), Binary: "/shared/bin/chaperone",
		Runtime: map[job.Kind]time.Duration{job.PredictKind: time.Minute}})
	e.timing = worker.Timing{LeaseTTL: ttl, Heartbeat: 50 * time.Millisecond}
	l := worker.Lease{Fence: worker.Fence{JobID: "J1", Attempt: 1}, Kind: job.PredictKind, Name: name,
		RunModel: "boltz2", Total: 1, Input: job.Input{Sequence: "MKTAYIAK"}}
	tr := &tracked{lease: l, dir: filepath.Join(e.cfg.Dir, folderName(l.Fence))}
	if err := e.prepare(tr); err != nil {
		t.Fatal(err)
	}
	return e, tr
}

// runBatch runs the folder's job as `chaperone slurm-job` does, until it ends or for up
// to limit, as if Slurm sent SIGTERM then.
func runBatch(t *testing.T, dir string, limit time.Duration) {
	t.Helper()
	engines := func() []engine.Engine { return []engine.Engine{enginetest.New("boltz2")} }
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	if err := RunBatch(ctx, dir, engines, slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
		t.Fatal(err)
	}
}

// What a batch job writes into its folder is what the executor reads back: the outcome,
// the artifacts at their paths, the log and the progress.
func TestAFolderCarriesABatchJobToTheExecutor(t *testing.T) {
	t.Parallel()
	e, tr := jobFolder(t, "slow:5", time.Minute)
	script, err := os.ReadFile(filepath.Join(tr.dir, fileScript))
	if err != nil || !strings.Contains(string(script), "exec '/shared/bin/chaperone' slurm-job '"+tr.dir+"'\n") {
		t.Fatalf("job.sh: %v %s", err, script)
	}
	runBatch(t, tr.dir, 30*time.Second)

	var outcome worker.Completion
	if err := readJSON(filepath.Join(tr.dir, fileOutcome), &outcome); err != nil {
		t.Fatal(err)
	}
	if outcome.Status != job.Succeeded || outcome.Fence != tr.lease.Fence || outcome.Results == nil {
		t.Fatalf("outcome %+v", outcome)
	}
	paths, err := artifacts(tr.dir)
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, a := range outcome.Results.Artifacts {
		listed = append(listed, a.Path)
	}
	if len(paths) != len(listed) || len(paths) == 0 {
		t.Fatalf("files under out/ %v, artifacts of the outcome %v", paths, listed)
	}
	for _, p := range listed {
		if _, err := os.Stat(filepath.Join(tr.dir, dirOut, filepath.FromSlash(p))); err != nil {
			t.Errorf("artifact %s: %v", p, err)
		}
	}
	log, _ := os.ReadFile(filepath.Join(tr.dir, fileLog))
	if !strings.Contains(string(log), "== chaperone: running as Slurm job ") || !strings.Contains(string(log), "job succeeded") {
		t.Errorf("log:\n%s", log)
	}
	if p, ok := e.newProgress(tr); !ok || p.Stage == "" {
		t.Errorf("progress %+v %v", p, ok)
	}
}

// A batch job whose executor stopped touching alive stops its job as a lost lease: its
// processes end and it writes no outcome.
func TestABatchJobStopsWhenItsExecutorIsGone(t *testing.T) {
	t.Parallel()
	_, tr := jobFolder(t, "hang", time.Second)
	start := time.Now()
	runBatch(t, tr.dir, 30*time.Second) // alive is never touched again: it goes stale after the TTL
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the batch job took %s to notice", took)
	}
	if _, err := os.Stat(filepath.Join(tr.dir, fileOutcome)); !os.IsNotExist(err) {
		t.Errorf("outcome.json of a lost lease: %v", err)
	}
}

// Slurm's SIGTERM (a cancel, the time limit) stops the job without an outcome, and its log
// says so, not that the job returns to the queue: what becomes of it is the executor's
// to say, from Slurm's record.
func TestABatchJobStoppedBySlurmLeavesItsEndToTheExecutor(t *testing.T) {
	t.Parallel()
	_, tr := jobFolder(t, "hang", time.Minute)
	start := time.Now()
	runBatch(t, tr.dir, time.Second)
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the batch job took %s to stop", took)
	}
	if _, err := os.Stat(filepath.Join(tr.dir, fileOutcome)); !os.IsNotExist(err) {
		t.Errorf("outcome.json of a stopped batch job: %v", err)
	}
	log, _ := os.ReadFile(filepath.Join(tr.dir, fileLog))
	if !strings.HasSuffix(string(log), "== chaperone: Slurm stopped the batch job ==\n") || strings.Contains(string(log), "returns to the queue") {
		t.Errorf("log:\n%s", log)
	}
}
