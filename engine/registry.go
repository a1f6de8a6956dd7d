package engine

import (
	"context"
	"fmt"
	"sort"
)

// Registry is the set of engines a worker offers.
type Registry struct {
	engines []Engine
	byModel map[string]Engine
}

// NewRegistry returns a registry of the given engines; a model served by two engines is a
// programming error.
func NewRegistry(engines ...Engine) (*Registry, error) {
	r := &Registry{byModel: map[string]Engine{}}
	for _, e := range engines {
		for _, m := range e.Models() {
			if prev, dup := r.byModel[m]; dup {
				return nil, fmt.Errorf("engine: model %q is served by both %s and %s", m, prev.Name(), e.Name())
			}
			r.byModel[m] = e
		}
		r.engines = append(r.engines, e)
	}
	return r, nil
}

// ForModel returns the engine that serves a catalog model.
func (r *Registry) ForModel(model string) (Engine, bool) {
	e, ok := r.byModel[model]
	return e, ok
}

// Availability is the result of checking every engine on this machine.
type Availability struct {
	Models []string // models whose engine passed its check, sorted
	// Missing is, per model, what kind of thing is missing, as API callers may read it
	// (PublicReason); Detail is the operator's full account of the same (the error's text).
	Missing map[string]string
	Detail  map[string]string
}

// Check runs every engine's Check and reports which models can run.
func (r *Registry) Check(ctx context.Context, tools Tools) Availability {
	a := Availability{Missing: map[string]string{}, Detail: map[string]string{}}
	for _, e := range r.engines {
		err := e.Check(ctx, tools)
		for _, m := range e.Models() {
			if err != nil {
				a.Missing[m] = PublicReason(err)
				a.Detail[m] = err.Error()
			} else {
				a.Models = append(a.Models, m)
			}
		}
	}
	sort.Strings(a.Models)
	return a
}
