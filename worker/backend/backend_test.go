package backend_test

import (
	"testing"

	"github.com/chaperone-bio/chaperone/worker"
	"github.com/chaperone-bio/chaperone/worker/backend"
	"github.com/chaperone-bio/chaperone/worker/queuetest"
)

// The in-process worker calls the backend itself.
func TestInProcessQueue(t *testing.T) {
	queuetest.Run(t, func(t *testing.T, q *backend.Queue) worker.Queue { return q })
}
