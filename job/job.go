// Package job holds chaperone's domain types: a Job, its kind and status, the owner it
// belongs to, the results it produces, and the errors the rest of the program speaks in.
// It does no I/O and imports nothing of chaperone's.
package job

import (
	"crypto/rand"
	"encoding/hex"
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
	Rows      []map[string]any `json:"rows,omitempty"`
	Designs   []Design         `json:"designs,omitempty"`
	Embedding *Embedding       `json:"embedding,omitempty"`
	Artifacts []Artifact       `json:"artifacts"`
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
