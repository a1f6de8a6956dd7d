package pydriver

import (
	"context"
	"fmt"

	"github.com/chaperone-bio/chaperone/engine"
)

// fold runs an ESMFold2 prediction job.
func (e *Engine) fold(ctx context.Context, run *engine.Run, ch channel, m model) (*engine.Output, error) {
	return nil, fmt.Errorf("%s: prediction is not built yet", m.id)
}
