// Package job holds chaperone's domain types: a Job, its kind and status, the owner it
// belongs to, the results it produces, and the errors the rest of the program speaks in.
// It does no I/O and imports nothing of chaperone's.
package job

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"time"
)

// Kind is what a job computes.
type Kind string

const (
	PredictKind Kind = "predict"
	DesignKind  Kind = "design"
	EmbedKind   Kind = "embed"
)

// Status is where a job is in its life.
type Status string

const (
	Queued    Status = "queued"
	Running   Status = "running"
	Succeeded Status = "succeeded"
	Failed    Status = "failed"
	Canceled  Status = "canceled"
)

// Terminal reports whether no further transition can happen.
func (s Status) Terminal() bool {
	return s == Succeeded || s == Failed || s == Canceled
}

// Active reports whether the job still counts against an owner's active-job quota.
func (s Status) Active() bool { return s == Queued || s == Running }

// Stage vocabulary shared by all engines (decisions: Lifecycle).
const (
	StageStarting  = "starting"
	StageMSA       = "msa"
	StageInference = "inference"
	StageAffinity  = "affinity"
	StageDesigning = "designing"
	StageFolding   = "folding"
	StageFiltering = "filtering"
	StageEmbedding = "embedding"
	StageWriting   = "writing"
)

// StageScheduler is the stage of a job that a worker leased and handed to a cluster
// scheduler (Slurm), where it waits for a node: it has not started, and the API shows it
// as queued with queue.reason "scheduler". It is not in Stages, the vocabulary the API
// shows and engines report.
const StageScheduler = "scheduler"

// Stages lists the stage vocabulary, in no particular order.
var Stages = []string{StageStarting, StageMSA, StageInference, StageAffinity, StageDesigning,
	StageFolding, StageFiltering, StageEmbedding, StageWriting}

// Job is one unit of asynchronous work and everything the service knows about it.
type Job struct {
	ID       string
	Owner    Owner
	Kind     Kind
	Name     string
	Model    string // empty for designs, whose model follows from the protocol
	Protocol string // set for designs
	// RunModel is the catalog model whose engine runs the job: Model, or for a design the
	// protocol's model. Workers lease by it.
	RunModel string
	Params   map[string]any // accepted params: clamped, defaults filled in
	Input    Input
	// Searches are the alignment searches the job needs before a worker runs it, one per
	// target with protein chains to align (use_msa_server on, no alignment sent), in target
	// order; none for a job that needs none.
	Searches []Search
	// Aligning is true while the searches are still to be done: the job is queued, but no
	// worker can lease it until the alignment stage has searched them.
	Aligning bool

	Status   Status
	Stage    string
	Progress *float64
	Done     int
	Total    int
	Error    string

	// Attempt counts leases taken; a completion is accepted only for the current attempt.
	Attempt        int
	WorkerID       string
	LeaseExpiresAt time.Time
	// LastActivityAt is the last time the running job reported progress or log output, as
	// its worker's heartbeats say. The worker enforces the stall cap from its own clock; the
	// store keeps this so that a job's liveness is on record beside its lease.
	LastActivityAt time.Time

	CreatedAt  time.Time
	StartedAt  time.Time
	FinishedAt time.Time

	// Results is the manifest body, set when the job succeeded.
	Results *Results
}

// Input is the caller's input exactly as submitted, one field set per kind.
type Input struct {
	Sequence  string          `json:"sequence,omitempty"`
	Input     string          `json:"input,omitempty"`
	Targets   []Target        `json:"targets,omitempty"`
	Sequences []NamedSequence `json:"sequences,omitempty"`
	Spec      string          `json:"spec,omitempty"`
	Structure string          `json:"structure,omitempty"`
	Contig    string          `json:"contig,omitempty"`
}

// Target is one prediction input of a multi-target job.
type Target struct {
	Name    string `json:"name,omitempty"`
	Content string `json:"content"`
}

// NamedSequence is one sequence of an embedding job.
type NamedSequence struct {
	ID       string `json:"id"`
	Sequence string `json:"sequence"`
}

// Search is one alignment search: the protein chains of one target, aligned together so
// that a complex's chains are also paired. Chains holds one sequence per chain copy, in
// the target's order; a sequence may repeat (a homodimer).
type Search struct {
	Chains []string `json:"chains"`
	// Target is the first target (from 1) whose chains these are: later targets of the
	// same chains, in the same order, share its search.
	Target int `json:"target,omitempty"`
}

// ResultsReady reports whether results can be read.
func (j *Job) ResultsReady() bool { return j.Status == Succeeded && j.Results != nil }

// NewID returns a fresh job id: 128 random bits as 32 lowercase hex characters.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go ≥1.24)
	return hex.EncodeToString(b[:])
}

// ValidID reports whether s has the shape of a job id, so malformed ids never reach a store.
func ValidID(s string) bool {
	if len(s) != 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// Results is what a succeeded job produced: rows for predictions, designs for designs,
// sequences for embeddings, and the artifact files of all kinds.
type Results struct {
	Rows      []PredictionRow `json:"rows,omitempty"`
	Designs   []Design        `json:"designs,omitempty"`
	Embedding *Embedding      `json:"embedding,omitempty"`
	Artifacts []Artifact      `json:"artifacts"`
}

// LargestInput is the size of the largest input the job ran to a result: the residues of
// its largest target that succeeded, or of its longest embedded sequence; 0 for a design,
// whose size its results do not hold.
func (r *Results) LargestInput() int {
	n := 0
	for _, row := range r.Rows {
		if row.Status == RowOK {
			n = max(n, row.NResidues)
		}
	}
	if r.Embedding != nil {
		for _, s := range r.Embedding.Sequences {
			n = max(n, s.Length)
		}
	}
	return n
}

// PredictionRow is one target of a prediction job, with the same keys for every model
// (decisions: Results).
type PredictionRow struct {
	ID        string
	Status    RowStatus
	Error     string // why the target failed; set on failed rows only
	NChains   int
	NResidues int
	Samples   int  // structures written for the target
	MSA       bool // some chain was folded with an alignment
	RuntimeS  float64
	// Scores are the best sample's; nil when the tool gave none, as for a target that
	// failed before any structure was written.
	Scores *Scores
	// Affinity is set on a target that asked for one and got it (boltz2 only).
	Affinity *Affinity
}

// RowStatus says whether the tool produced a target's results.
type RowStatus string

const (
	RowOK     RowStatus = "ok"
	RowFailed RowStatus = "failed"
)

// Scores are the confidence of one predicted structure. Every model gives PLDDT and PTM;
// any other score a model does not give is nil, which shows as null.
type Scores struct {
	PLDDT           float64  // mean pLDDT on 0..1, whatever scale the tool writes
	PTM             float64  // predicted TM score of the complex
	IPTM            *float64 // interface pTM; nil for one chain, which has no interface
	ComplexPLDDT    *float64
	ConfidenceScore *float64 // the tool's own ranking score, by which its samples are ranked
	// Boltz's further summary scores.
	ComplexIPLDDT *float64
	ComplexPDE    *float64
	ComplexIPDE   *float64
}

// Affinity is Boltz-2's binding affinity of the target's ligand: the ensemble's values,
// and those of its two models where the tool gave them.
type Affinity struct {
	PredValue          float64 // log10 of the IC50 in µM
	ProbabilityBinary  float64 // likelihood that the ligand binds, 0..1
	PredValue1         *float64
	ProbabilityBinary1 *float64
	PredValue2         *float64
	ProbabilityBinary2 *float64
	// StructureRuntimeS and RuntimeS split the row's runtime_s between the structure and
	// the affinity predictions (the reference service's structure_runtime_s and
	// affinity_runtime_s); nil in rows stored before they were measured.
	StructureRuntimeS *float64
	RuntimeS          *float64
}

// MarshalJSON writes the row as an object with its keys sorted, as rows were written
// before they were typed, so that a stored row and its re-marshalled form are the same
// bytes: the keys of Scores and Affinity only when they are set, error only when set.
func (r PredictionRow) MarshalJSON() ([]byte, error) {
	m := map[string]any{"id": r.ID, "status": r.Status, "n_chains": r.NChains, "n_residues": r.NResidues,
		"samples": r.Samples, "msa": r.MSA, "runtime_s": r.RuntimeS}
	if r.Error != "" {
		m["error"] = r.Error
	}
	if s := r.Scores; s != nil {
		m["plddt"], m["ptm"], m["iptm"], m["complex_plddt"], m["confidence_score"] = s.PLDDT, s.PTM, s.IPTM, s.ComplexPLDDT, s.ConfidenceScore
		m["complex_iplddt"], m["complex_pde"], m["complex_ipde"] = s.ComplexIPLDDT, s.ComplexPDE, s.ComplexIPDE
	}
	if a := r.Affinity; a != nil {
		m["affinity_pred_value"], m["affinity_probability_binary"] = a.PredValue, a.ProbabilityBinary
		for key, v := range map[string]*float64{"affinity_pred_value1": a.PredValue1, "affinity_probability_binary1": a.ProbabilityBinary1,
			"affinity_pred_value2": a.PredValue2, "affinity_probability_binary2": a.ProbabilityBinary2,
			"structure_runtime_s": a.StructureRuntimeS, "affinity_runtime_s": a.RuntimeS} {
			if v != nil {
				m[key] = *v
			}
		}
	}
	return json.Marshal(m)
}

// rowJSON is a row as JSON holds it, where a missing key and null are both nil.
type rowJSON struct {
	ID                         string    `json:"id"`
	Status                     RowStatus `json:"status"`
	Error                      string    `json:"error"`
	NChains                    int       `json:"n_chains"`
	NResidues                  int       `json:"n_residues"`
	Samples                    int       `json:"samples"`
	MSA                        bool      `json:"msa"`
	RuntimeS                   float64   `json:"runtime_s"`
	PLDDT                      *float64  `json:"plddt"`
	PTM                        *float64  `json:"ptm"`
	IPTM                       *float64  `json:"iptm"`
	ComplexPLDDT               *float64  `json:"complex_plddt"`
	ConfidenceScore            *float64  `json:"confidence_score"`
	ComplexIPLDDT              *float64  `json:"complex_iplddt"`
	ComplexPDE                 *float64  `json:"complex_pde"`
	ComplexIPDE                *float64  `json:"complex_ipde"`
	AffinityPredValue          *float64  `json:"affinity_pred_value"`
	AffinityProbabilityBinary  *float64  `json:"affinity_probability_binary"`
	AffinityPredValue1         *float64  `json:"affinity_pred_value1"`
	AffinityProbabilityBinary1 *float64  `json:"affinity_probability_binary1"`
	AffinityPredValue2         *float64  `json:"affinity_pred_value2"`
	AffinityProbabilityBinary2 *float64  `json:"affinity_probability_binary2"`
	StructureRuntimeS          *float64  `json:"structure_runtime_s"`
	AffinityRuntimeS           *float64  `json:"affinity_runtime_s"`
}

// UnmarshalJSON reads a row as MarshalJSON writes it. A row has scores when it has a
// plddt, and an affinity when it has an affinity_pred_value.
func (r *PredictionRow) UnmarshalJSON(b []byte) error {
	var w rowJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*r = PredictionRow{ID: w.ID, Status: w.Status, Error: w.Error, NChains: w.NChains, NResidues: w.NResidues,
		Samples: w.Samples, MSA: w.MSA, RuntimeS: w.RuntimeS}
	if w.PLDDT != nil {
		r.Scores = &Scores{PLDDT: *w.PLDDT, PTM: orZero(w.PTM), IPTM: w.IPTM, ComplexPLDDT: w.ComplexPLDDT,
			ConfidenceScore: w.ConfidenceScore, ComplexIPLDDT: w.ComplexIPLDDT, ComplexPDE: w.ComplexPDE, ComplexIPDE: w.ComplexIPDE}
	}
	if w.AffinityPredValue != nil {
		r.Affinity = &Affinity{PredValue: *w.AffinityPredValue, ProbabilityBinary: orZero(w.AffinityProbabilityBinary),
			PredValue1: w.AffinityPredValue1, ProbabilityBinary1: w.AffinityProbabilityBinary1,
			PredValue2: w.AffinityPredValue2, ProbabilityBinary2: w.AffinityProbabilityBinary2,
			StructureRuntimeS: w.StructureRuntimeS, RuntimeS: w.AffinityRuntimeS}
	}
	return nil
}

func orZero(v *float64) float64 {
	if v == nil {
		return 0
	}
	return *v
}

// Design is one designed binder or scaffold.
type Design struct {
	ID       string         `json:"id"`
	Rank     *int           `json:"rank"`
	Sequence string         `json:"sequence"`
	File     string         `json:"file"`
	Metrics  map[string]any `json:"metrics"`
}

// Embedding describes the vectors an embedding job wrote.
type Embedding struct {
	Model     string             `json:"model"`
	Pool      string             `json:"pool"`
	Format    string             `json:"format"`
	DModel    int                `json:"d_model"`
	Sequences []EmbeddedSequence `json:"sequences"`
}

// EmbeddedSequence points at the file holding one sequence's vectors.
type EmbeddedSequence struct {
	ID     string `json:"id"`
	Length int    `json:"length"`
	File   string `json:"file"`
}

// Artifact is one downloadable result file.
type Artifact struct {
	Path   string `json:"path"`
	Target string `json:"target"`
	Type   string `json:"type"`
}

// Artifact types (decisions: Results).
const (
	ArtifactStructure  = "structure"
	ArtifactConfidence = "confidence"
	ArtifactPAE        = "pae"
	ArtifactAffinity   = "affinity"
	ArtifactEmbedding  = "embedding"
	ArtifactTable      = "table"
	ArtifactMetrics    = "metrics"
	ArtifactLog        = "log"
)

// Progress is what a running job reports about itself.
type Progress struct {
	Stage    string   `json:"stage,omitempty"`
	Done     int      `json:"done"`
	Total    int      `json:"total"`
	Fraction *float64 `json:"fraction,omitempty"` // engine-reported, finer than Done/Total
}

// Value is the progress a Job shows: the engine's fraction if it gave one, else
// done/total when sub-units are counted, else nil (indeterminate).
func (p Progress) Value() *float64 {
	if p.Fraction != nil {
		f := min(max(*p.Fraction, 0), 1)
		return &f
	}
	if p.Total > 0 {
		f := min(float64(p.Done)/float64(p.Total), 1)
		return &f
	}
	return nil
}
