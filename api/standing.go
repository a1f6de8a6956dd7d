package api

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/chaperone-bio/chaperone/bio"
	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/store"
)

// The reasons a queued job gives for waiting (queue.reason).
const (
	waitNoWorker = "no_worker" // no live worker can run its model now
	waitBusy     = "busy"      // every slot that can run its model is running a job
	// waitScheduler: a worker handed the job to a cluster scheduler (Slurm), where it
	// waits for a node.
	waitScheduler = "scheduler"
	// waitAligning: the job's alignments are being searched, or wait for the alignment
	// stage to search them (stage "msa" while a search is under way); no worker can take it
	// before, whatever slots are free.
	waitAligning = "aligning"
)

// showWaitingInScheduler shows a job that waits in a cluster scheduler's queue as what it
// is to its owner: queued, not started, waiting for a device, because of the scheduler.
// That a worker holds its lease meanwhile is the worker's affair.
func showWaitingInScheduler(v *jobJSON) {
	v.Status, v.Stage, v.StartedAt = job.Queued, nil, nil
	v.WaitingForDevice, v.Queue = true, &queueJSON{Reason: waitScheduler}
}

// queueJSON says why a queued job waits (the reference service's queue object). There is
// no position and no time estimate: the scheduler is fair between owners, not first-in
// first-out, so neither would hold.
type queueJSON struct {
	Reason string `json:"reason"`
	// AccountsAhead counts the other owners whose queued jobs of the model go first
	// (store.History.OwnersAhead).
	AccountsAhead int `json:"accounts_ahead"`
	// ChipsBusy and ChipsOnline count the job slots of the live workers that can run the
	// model (a slot runs one job: one per accelerator on a GPU host), and how many of them
	// are running a job.
	ChipsBusy   int `json:"chips_busy"`
	ChipsOnline int `json:"chips_online"`
}

// partialJSON says how much of what a succeeded job was asked for it delivered, when that
// is less: targets that folded of those sent, designs kept of those asked for.
type partialJSON struct {
	Delivered int `json:"delivered"`
	Requested int `json:"requested"`
}

// jobDetail is one job as its own endpoints show it: the Job of jobView, plus what only a
// read of a single job can afford to work out. A queued job that nothing can start now says
// why it waits; a succeeded job that delivered less than asked says how much. Those extras
// describe the job without being part of it, so a failure to work one out is logged and
// leaves it out rather than failing the read.
func (s *Server) jobDetail(ctx context.Context, j *store.JobSummary) jobJSON {
	v := jobView(j)
	var err error
	switch j.Status {
	case job.Queued:
		if j.Aligning {
			v.Queue = &queueJSON{Reason: waitAligning}
			break
		}
		v.Queue, err = s.queueOf(ctx, j)
		v.WaitingForDevice = v.Queue != nil
	case job.Succeeded:
		v.Partial, err = s.partialOf(ctx, j)
	}
	if err != nil {
		s.log.WarnContext(ctx, "job view: working out its standing", "job", j.ID, "error", err.Error())
	}
	return v
}

// queueOf is why a queued job waits, or nil when a live worker has a free slot for it and
// it is about to start.
func (s *Server) queueOf(ctx context.Context, j *store.JobSummary) (*queueJSON, error) {
	ws, err := s.store.LiveWorkers(ctx, s.now().Add(-s.workerTTL))
	if err != nil {
		return nil, err
	}
	q := &queueJSON{Reason: waitNoWorker}
	for _, w := range ws {
		if slices.Contains(w.Models, j.RunModel) {
			q.ChipsOnline += w.Slots
			q.ChipsBusy += min(w.Busy, w.Slots)
		}
	}
	if q.ChipsOnline > 0 {
		if q.ChipsBusy < q.ChipsOnline {
			return nil, nil
		}
		q.Reason = waitBusy
	}
	if q.AccountsAhead, err = s.store.OwnersAhead(ctx, j.ID); err != nil {
		return nil, err
	}
	return q, nil
}

// partialOf compares what a succeeded job delivered with what it was asked for: targets
// that folded against targets sent (each has a row, failed or not), designs against num_designs (rfd3, which designs
// exactly that many) or budget (BoltzGen, which keeps at most that many after filtering).
// An embedding job is all or nothing.
func (s *Server) partialOf(ctx context.Context, j *store.JobSummary) (*partialJSON, error) {
	if j.Kind == job.EmbedKind {
		return nil, nil
	}
	if p, ok := s.partials.get(j.ID); ok {
		return p, nil
	}
	p, err := s.workOutPartial(ctx, j)
	if err == nil {
		s.partials.put(j.ID, p)
	}
	return p, err
}

// workOutPartial reads the job's results to compare them with what was asked.
func (s *Server) workOutPartial(ctx context.Context, j *store.JobSummary) (*partialJSON, error) {
	full, err := s.store.GetJob(ctx, j.ID)
	if err != nil || full.Results == nil {
		return nil, err
	}
	var delivered, requested int
	switch j.Kind {
	case job.PredictKind:
		// Every target has a row, failed or not.
		requested = len(full.Results.Rows)
		for _, row := range full.Results.Rows {
			if row.Status == job.RowOK {
				delivered++
			}
		}
	case job.DesignKind:
		key := "num_designs"
		if _, ok := j.Params["budget"]; ok {
			key = "budget"
		}
		requested, delivered = intParam(j.Params[key]), len(full.Results.Designs)
	}
	if delivered >= requested {
		return nil, nil
	}
	return &partialJSON{Delivered: delivered, Requested: requested}, nil
}

// partialMemo remembers what partialOf worked out per succeeded job. A succeeded job never
// changes, so the answer holds for good, and a client polling a finished job does not read
// its whole row (input and results) on every poll.
type partialMemo struct {
	mu   sync.Mutex
	byID map[string]*partialJSON
}

// partialMemoSize bounds the memo; an entry is a job id and at most two integers.
const partialMemoSize = 16384

func (m *partialMemo) get(id string) (*partialJSON, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.byID[id]
	return p, ok
}

func (m *partialMemo) put(id string, p *partialJSON) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byID == nil {
		m.byID = make(map[string]*partialJSON)
	}
	if len(m.byID) >= partialMemoSize {
		for old := range m.byID { // any one: map order is random
			delete(m.byID, old)
			break
		}
	}
	m.byID[id] = p
}

// intParam reads an integer param as the catalog stores it (int) or the store gives it back
// (float64).
func intParam(v any) int {
	switch n := v.(type) {
	case int:
		return n
	case float64:
		return int(n)
	}
	return 0
}

// warningsOf are the caveats a job is accepted with: an input larger than any this server
// has run its model on (measured_wall in GET /v1/models) is taken and tried, but nothing
// says it will finish inside the runtime cap.
func (s *Server) warningsOf(ctx context.Context, j *job.Job) ([]string, error) {
	size := largestInput(j)
	if size == 0 {
		return nil, nil
	}
	walls, err := s.store.MeasuredWalls(ctx)
	if err != nil {
		return nil, err
	}
	wall, ok := walls[j.RunModel]
	if !ok || size <= wall {
		return nil, nil
	}
	return []string{fmt.Sprintf("The largest input has %d residues; the largest %s has run on this server is %d "+
		"(measured_wall in GET /v1/models). It is accepted and tried, but may not finish within the runtime cap.",
		size, j.RunModel, wall)}, nil
}

// largestInput is the residues of a job's largest target or sequence; 0 for a design, whose
// size the engine works out from its spec.
func largestInput(j *job.Job) int {
	n := 0
	switch j.Kind {
	case job.PredictKind:
		cxs, err := bio.Complexes(j.Input)
		if err != nil {
			return 0
		}
		for _, cx := range cxs {
			n = max(n, cx.NumResidues())
		}
	case job.EmbedKind:
		for _, s := range j.Input.Sequences {
			n = max(n, len(s.Sequence))
		}
	}
	return n
}
