package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/chaperone-bio/chaperone/align"
	"github.com/chaperone-bio/chaperone/bio"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/job"
)

// computeEngine stands in for a structure-prediction tool of a fixed compute time, on one
// GPU slot of one worker. With a searcher it searches alignments itself first, inside
// the job, keeping them for its later jobs, as the engines did before the alignment stage
// (each tool searching on the server from its worker, each worker with its own cache);
// without one it takes them from the run (engine.Run.Alignments), as engines do now, and
// fails a job whose alignments are missing.
type computeEngine struct {
	compute  time.Duration
	searcher align.Searcher // nil: the alignment stage searches
	runs     *runLog

	mu     sync.Mutex
	cached map[string]bool
}

func (e *computeEngine) Name() string                              { return "boltz" }
func (e *computeEngine) Models() []string                          { return []string{"boltz2"} }
func (e *computeEngine) Check(context.Context, engine.Tools) error { return nil }
func (e *computeEngine) searchedBefore(key string) (seen bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	seen = e.cached[key]
	e.cached[key] = true
	return
}

func (e *computeEngine) Run(ctx context.Context, run *engine.Run) (*engine.Output, error) {
	leased := time.Now()
	complexes, err := bio.Complexes(run.Job.Input)
	if err != nil {
		return nil, err
	}
	var waited time.Duration
	for _, cx := range complexes {
		chains := cx.SearchChains()
		switch {
		case e.searcher != nil:
			if e.searchedBefore(strings.Join(chains, "/")) {
				continue
			}
			t0 := time.Now()
			if _, err := e.searcher.Search(ctx, align.Query{Chains: chains}); err != nil {
				return nil, err
			}
			waited += time.Since(t0)
		case run.Job.Params["use_msa_server"] == true:
			if _, ok := align.Find(run.Alignments, chains); !ok {
				return nil, fmt.Errorf("target %s: no alignments in the run", cx.Name)
			}
		}
	}
	start := time.Now()
	select {
	case <-time.After(e.compute):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	e.runs.add(runRecord{engine: e, leased: leased, computeStart: start, computeEnd: time.Now(), toolWait: waited})
	rows := make([]job.PredictionRow, len(complexes))
	for i, cx := range complexes {
		rows[i] = job.PredictionRow{ID: cx.Name, Status: job.RowOK, NChains: 1, NResidues: len(cx.Entities[0].Sequence),
			Samples: 1, MSA: true, RuntimeS: e.compute.Seconds(), Scores: &job.Scores{PLDDT: 0.5, PTM: 0.5}}
	}
	return &engine.Output{Rows: rows}, nil
}

// runRecord is one job as a slot ran it.
type runRecord struct {
	engine                           *computeEngine // one per worker slot
	leased, computeStart, computeEnd time.Time
	toolWait                         time.Duration
}

type runLog struct {
	mu   sync.Mutex
	runs []runRecord
}

func (l *runLog) add(r runRecord) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.runs = append(l.runs, r)
}

// idleGaps are the times each slot computed nothing between two consecutive jobs: from
// the end of one job's compute to the start of the next one's, waits on an alignment
// server inside the job included.
func (l *runLog) idleGaps() []time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	bySlot := map[*computeEngine][]runRecord{}
	for _, r := range l.runs {
		bySlot[r.engine] = append(bySlot[r.engine], r)
	}
	var gaps []time.Duration
	for _, runs := range bySlot {
		slices.SortFunc(runs, func(a, b runRecord) int { return a.computeStart.Compare(b.computeStart) })
		for i := 1; i < len(runs); i++ {
			gaps = append(gaps, runs[i].computeStart.Sub(runs[i-1].computeEnd))
		}
	}
	slices.Sort(gaps)
	return gaps
}

func (l *runLog) toolWait() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	var total time.Duration
	for _, r := range l.runs {
		total += r.toolWait
	}
	return total
}
