package remote

import (
	"context"
	"sync"
	"testing"

	"github.com/chaperone-bio/chaperone/worker"
)

// heldByAll says every attempt's lease is held by the worker "w" of its token.
type heldByAll struct{ token string }

func (l heldByAll) Holder(context.Context, worker.Fence) (string, error) {
	return l.token + "/w", nil
}

// TestASweepLeavesTheFoldersOfAnUploadBeingOpened: a sweep that finds a token's folder
// empty removes it; an upload opening its first file in that folder at the same moment
// must still get its file, not a "no such file or directory".
func TestASweepLeavesTheFoldersOfAnUploadBeingOpened(t *testing.T) {
	s, err := newStaging(t.TempDir(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	const token = "lab"
	ctx, stop := context.WithCancel(t.Context())
	var sweeps sync.WaitGroup
	sweeps.Go(func() {
		for ctx.Err() == nil {
			s.sweep(ctx, heldByAll{token})
		}
	})
	defer func() { stop(); sweeps.Wait() }()
	for i := range 2000 {
		u := s.upload(token, worker.Fence{JobID: "0123456789abcdef0123456789abcdef", Attempt: i + 1}, "t1.cif")
		f, err := s.open(u)
		if err != nil {
			t.Fatalf("upload %d: %v", i, err)
		}
		f.Close()
		s.dropAttempt(u)
	}
}
