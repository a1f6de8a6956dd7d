package slurm

import (
	"context"
	"sync"
	"testing"

	"github.com/chaperone-bio/chaperone/internal/slurmtest"
	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/worker"
)

// completionQueue is a server that keeps the completion it is sent.
type completionQueue struct {
	acceptingQueue
	mu   sync.Mutex
	done []worker.Completion
}

func (q *completionQueue) Complete(_ context.Context, c worker.Completion) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.done = append(q.done, c)
	return nil
}

// TestSbatchRefusingAJobFailsIt: a job that the real cluster's sbatch refuses when it is
// submitted (the partition went away after the executor started) fails with Slurm's words
// and frees its slot.
func TestSbatchRefusingAJobFailsIt(t *testing.T) {
	slurmtest.Require(t)
	q := &completionQueue{}
	e := New(Config{WorkerID: "refusal-test", Dir: t.TempDir(), Queue: q, Binary: "/bin/true",
		Submit: Submit{Partition: "gpux"}})
	e.begin(context.Background(), &worker.Lease{Fence: worker.Fence{JobID: "J", Attempt: 1}, Kind: job.PredictKind})
	if len(q.done) != 1 || q.done[0].Status != job.Failed ||
		q.done[0].Error != "Slurm refused the job: invalid partition specified: gpux" {
		t.Fatalf("completions %+v, want one failure in Slurm's words", q.done)
	}
	if e.busy() != 0 {
		t.Errorf("%d jobs still held", e.busy())
	}
}
