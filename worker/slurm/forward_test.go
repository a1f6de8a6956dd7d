package slurm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/chaperone-bio/chaperone/worker"
)

// logServer keeps an attempt's output as the server does, each byte once by its offset,
// and fails appends while down: before they land, or, with lostAnswers, after.
type logServer struct {
	acceptingQueue
	mu          sync.Mutex
	down        bool
	lostAnswers bool
	got         []byte
}

func (s *logServer) AppendLog(_ context.Context, _ worker.Fence, offset int64, p []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down && !s.lostAnswers {
		return errors.New("connection refused")
	}
	held := int64(len(s.got))
	if offset > held {
		return fmt.Errorf("output at %d, past the %d bytes held", offset, held)
	}
	if held-offset < int64(len(p)) {
		s.got = append(s.got, p[held-offset:]...)
	}
	if s.down {
		return errors.New("EOF")
	}
	return nil
}

// TestTheExecutorForwardsTheLogWhole: the executor's own lines and the batch job's log
// reach the server each once, however many appends fail on the way, the executor's lines
// ahead of what of the batch job's log was not forwarded yet; and what it forwarded is
// recorded for a restart.
func TestTheExecutorForwardsTheLogWhole(t *testing.T) {
	for _, lostAnswers := range []bool{false, true} {
		q := &logServer{lostAnswers: lostAnswers}
		dir := t.TempDir()
		e := New(Config{WorkerID: "forward-test", Dir: dir, Queue: q, Logger: slog.New(slog.DiscardHandler)})
		tr := &tracked{lease: worker.Lease{Fence: worker.Fence{JobID: "J", Attempt: 1}}, dir: dir}
		batch := func(line string) {
			f, err := os.OpenFile(filepath.Join(dir, fileLog), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString(line)
			f.Close()
		}
		ctx := context.Background()

		q.down = true
		e.appendLog(ctx, tr, "== handed to Slurm ==\n")
		batch("== running on node n1 ==\n")
		e.forwardLog(ctx, tr)
		e.appendLog(ctx, tr, "== pending (Resources) ==\n")
		q.down = false
		batch("$ boltz predict in.yaml\n")
		e.forwardLog(ctx, tr)
		q.down = true
		batch("done\n")
		e.forwardLog(ctx, tr)
		q.down = false
		e.forwardLog(ctx, tr)

		want := "== handed to Slurm ==\n== pending (Resources) ==\n== running on node n1 ==\n$ boltz predict in.yaml\ndone\n"
		if string(q.got) != want {
			t.Errorf("lost answers %v: the server holds %q, want %q", lostAnswers, q.got, want)
		}
		b, _ := os.ReadFile(filepath.Join(dir, fileLogSent))
		if sent, streamed := readSent(b); sent != tr.sentLog || streamed != int64(len(want)) {
			t.Errorf("recorded %d of the batch log and %d of the output, want %d and %d", sent, streamed, tr.sentLog, len(want))
		}
	}
}
