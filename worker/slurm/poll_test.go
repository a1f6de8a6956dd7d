package slurm

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chaperone-bio/chaperone/internal/execfile"
	"github.com/chaperone-bio/chaperone/internal/slurmtest"
	"github.com/chaperone-bio/chaperone/worker"
)

// acceptingQueue is a server that renews every lease and takes every log line.
type acceptingQueue struct{ worker.Queue }

func (acceptingQueue) Heartbeat(context.Context, worker.Heartbeat) error            { return nil }
func (acceptingQueue) AppendLog(context.Context, worker.Fence, int64, []byte) error { return nil }
func (acceptingQueue) Announce(context.Context, worker.Announcement) (worker.Timing, error) {
	return worker.Timing{}, nil
}

// TestSqueueIsAskedOncePerPoll: the follow loop forwards every heartbeat, but asks the real
// cluster's squeue only when a poll is due, or at once about a batch job that squeue has
// not listed yet or that wrote its outcome.
func TestSqueueIsAskedOncePerPoll(t *testing.T) {
	slurmtest.Require(t)
	dir := t.TempDir()
	calls := filepath.Join(dir, "calls")
	squeue, err := exec.LookPath("squeue")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := execfile.Write(filepath.Join(bin, "squeue"), "#!/bin/sh\necho >> "+calls+"\nexec "+squeue+" \"$@\"\n"); err != nil {
		t.Fatal(err)
	}
	// A batch job held in the queue, so that squeue lists it as pending throughout.
	out, err := exec.Command("sbatch", "--parsable", "--hold", "--job-name=chaperone-poll-test", "--output=/dev/null",
		"--wrap=true").Output()
	if err != nil {
		t.Fatal(err)
	}
	id := strings.TrimSpace(string(out))
	t.Cleanup(func() { exec.Command("scancel", id).Run() })

	e := New(Config{WorkerID: "poll-test", Dir: dir, Queue: acceptingQueue{}, Slurm: CLI{Bin: bin}})
	job := filepath.Join(dir, "J-1")
	if err := os.Mkdir(job, 0o755); err != nil {
		t.Fatal(err)
	}
	e.jobs["J-1"] = &tracked{lease: worker.Lease{Fence: worker.Fence{JobID: "J", Attempt: 1}}, dir: job, slurmID: id}
	asked := func() int {
		b, _ := os.ReadFile(calls)
		return strings.Count(string(b), "\n")
	}
	ctx := context.Background()
	for range 5 {
		e.tick(ctx)
	}
	if n := asked(); n != 1 {
		t.Fatalf("five ticks within one poll asked squeue %d times, want once (for the job not listed yet)", n)
	}
	if got := e.jobs["J-1"].queued.State; got != "PENDING" {
		t.Fatalf("the job as squeue listed it: %q, want PENDING", got)
	}
	if err := os.WriteFile(filepath.Join(job, fileOutcome), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.tick(ctx)
	if n := asked(); n != 2 {
		t.Fatalf("after the batch job wrote its outcome squeue was asked %d times in all, want 2", n)
	}
}
