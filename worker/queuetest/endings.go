package queuetest

import (
	"context"
	"strings"
	"testing"

	"github.com/chaperone-bio/chaperone/worker"
)

// testAttemptEndings: an attempt that the server ends, rather than its worker, still ends
// its part of the run log with one line saying how it ended and what becomes of the job.
func testAttemptEndings(t *testing.T, s *server) {
	ctx := context.Background()
	expire := func(t *testing.T, _ *worker.Lease) {
		s.clock.advance(leaseTTL + heartbeat)
		s.backend.RecoverExpired(ctx)
	}
	lost := "lost: nothing renewed its lease for 30s (its worker stopped, lost the server, or gave the attempt up)"
	tests := []struct {
		name string
		// end ends the attempt l, the first of its job unless again is set.
		end   func(t *testing.T, l *worker.Lease)
		again bool
		want  string
	}{
		{"the lease ran out", expire, false, "== chaperone: attempt 1 " + lost + "; the job goes back to the queue ==\n"},
		{"the last attempt's lease ran out", expire, true, "== chaperone: attempt 2 " + lost + "; that was its last attempt: the job failed ==\n"},
		{"its worker started again", func(t *testing.T, _ *worker.Lease) {
			if err := s.q.ReleaseWorker(ctx, "w"); err != nil {
				t.Fatal(err)
			}
		}, false, "== chaperone: attempt 1 lost: the worker running it started again, and what it ran before died with it; the job goes back to the queue ==\n"},
		{"its worker shut down", func(t *testing.T, _ *worker.Lease) {
			if err := s.q.HandBack(ctx, "w"); err != nil {
				t.Fatal(err)
			}
		}, false, "== chaperone: attempt 1 handed back: its worker shut down before it ended, so it does not count as an attempt; the job goes back to the queue ==\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := s.leaseOne(t)
			defer s.retire(l.JobID)
			if tt.again {
				expire(t, l)
				if l = s.lease(t, worker.LeaseRequest{Models: []string{"m"}}); l == nil || l.Attempt != 2 {
					t.Fatalf("the job's second attempt: %+v", l)
				}
			}
			if err := s.q.AppendLog(ctx, l.Fence, 0, []byte("the tool's last words\n")); err != nil {
				t.Fatal(err)
			}
			tt.end(t, l)
			if log := s.log(t, l.JobID); !strings.HasSuffix(log, "the tool's last words\n"+tt.want) {
				t.Errorf("the run log ends\n%s\nwant it to end with the tool's output and\n%s", log, tt.want)
			}
		})
	}
}
