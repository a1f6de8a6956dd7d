package worker

import (
	"context"
	"errors"
	"sync"
)

// ErrRefused is what a Queue answers once the server refuses the worker itself: its token
// is unknown or was revoked. No retry mends that.
var ErrRefused = errors.New("the server refused the worker token")

// ErrRevoked is why a worker that the server took at start stopped on its own: the server
// refused its token later, which is what revoking it does.
var ErrRevoked = errors.New("the server no longer accepts this worker's token: it was revoked, so the worker stopped " +
	"(the jobs it held go back to the queue once their leases run out)")

// Refusal stops a worker for good the first time the server refuses it, rather than have it
// retry, and log the refusal, every second until someone kills it. A worker arms it in
// Start, hands every error of its queue to Check, and asks Err in Wait.
type Refusal struct {
	once    sync.Once
	stop    context.CancelFunc
	stopped chan struct{}
}

// Arm returns the context the worker runs in, which a refusal ends.
func (r *Refusal) Arm(ctx context.Context) context.Context {
	ctx, r.stop = context.WithCancel(ctx)
	r.stopped = make(chan struct{})
	return ctx
}

// Check reports whether err is the server's refusal, and if so stops the worker. Before
// Arm (a worker that runs one lease and no loop of its own) it only reports.
func (r *Refusal) Check(err error) bool {
	if !errors.Is(err, ErrRefused) || r.stopped == nil {
		return errors.Is(err, ErrRefused)
	}
	r.once.Do(func() {
		r.stop()
		close(r.stopped)
	})
	return true
}

// Stopped is closed once the server refused the worker; nil before Arm.
func (r *Refusal) Stopped() <-chan struct{} { return r.stopped }

// Err is ErrRevoked after a refusal, else nil.
func (r *Refusal) Err() error {
	select {
	case <-r.stopped:
		return ErrRevoked
	default:
		return nil
	}
}
