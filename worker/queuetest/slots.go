package queuetest

import (
	"context"
	"testing"

	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/worker"
)

// testBusySlots: the server counts a worker's slot busy from the lease to the end of the
// job, through any transport, though the worker announced itself idle and says nothing
// more: what a queued job and /metrics show never lags a third of a lease behind.
func testBusySlots(t *testing.T, s *server) {
	ctx := context.Background()
	if _, err := worker.Announce(ctx, s.q, worker.Announcement{WorkerID: "w", Models: []string{"m"}, Slots: 2}); err != nil {
		t.Fatal(err)
	}
	busy := func(want int, when string) {
		t.Helper()
		ws, err := s.store.LiveWorkers(ctx, s.clock.Now().Add(-leaseTTL))
		if err != nil {
			t.Fatal(err)
		}
		if len(ws) != 1 || ws[0].Slots != 2 || ws[0].Busy != want {
			t.Fatalf("%s: live workers %+v, want one of 2 slots with %d busy", when, ws, want)
		}
	}
	busy(0, "announced")
	l := s.leaseOne(t)
	busy(1, "once it leased a job")
	if err := s.q.Complete(ctx, worker.Completion{Fence: l.Fence, Status: job.Failed, Error: "out of memory"}); err != nil {
		t.Fatal(err)
	}
	busy(0, "once the job ended")
}
