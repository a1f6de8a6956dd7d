// Package catalog is chaperone's list of what it can run: every model and design protocol
// of the interface, each with its parameters (types, defaults, ranges), capabilities and
// size ceilings, plus the service limits. It validates create requests against that list,
// so a job that reaches the queue has exactly the params that will run. What a model's
// upstream tool demands of an input beyond its capabilities is not known here: the engine
// of the tool registers it (AddInputRule). It imports only job (the domain types) and bio
// (the input formats).
package catalog

import (
	"encoding/json"
	"time"

	"github.com/chaperone-bio/chaperone/bio"
	"github.com/chaperone-bio/chaperone/job"
)

// Catalog is the full offer of one deployment.
type Catalog struct {
	Models    []Model
	Protocols []Protocol
	Limits    Limits
	// MSAServer is the alignment server that use_msa_server sends protein sequences to, as
	// the operator configured the server's alignment stage (align.DefaultServer unless
	// they chose another; "" for a local search); the catalog shows it so that callers
	// know where their sequences go.
	MSAServer string
	// MSASearch says where and how alignments are searched (align.Source), for a local
	// search as for a server.
	MSASearch string
}

// Model is one model of the interface.
type Model struct {
	ID   string
	Kind job.Kind
	Name string
	// Tool is the name of the upstream tool (engine) that runs the model, for example
	// "boltz".
	Tool string
	// MaxResidues is the most residues the model takes: per structure for prediction and
	// design models (at most Limits.ResidueCeiling), per sequence for embedding models (at
	// most Limits.EmbedResidues).
	MaxResidues int
	// MaxTokens is the most tokens a structure of a prediction or design model holds: a
	// token per polymer residue and per ligand heavy atom (bio.Entity.Tokens), as the
	// models tokenize, so that a ligand of thousands of atoms cannot pass as one residue.
	// It equals MaxResidues; 0 for embedding models.
	MaxTokens int
	DModel    int // embedding models; 0 for others
	// Letters are the residue letters the model's tokenizer knows, for an embedding model
	// whose vocabulary is narrower than the protein alphabet; empty when it knows them all.
	Letters      string
	Capabilities Capabilities
	Params       []Param
	// Refused are params that clients of the reference service send but that this model's
	// tool cannot honour, each with the reason a caller is told; any other unknown key is
	// refused with the list of valid params.
	Refused map[string]string
	// Fast says what `fast` does for this model, shown in the catalog.
	Fast string
	// rules are the input rules of the model's upstream tool, registered by its engine.
	rules []InputRule
}

// InputRule is what a model's upstream tool demands of one parsed target beyond the
// model's capabilities, where the tool would otherwise fail on the input or silently read
// it differently. params are the job's accepted params. Its error is placed in the input
// (bio.Errorf) where a place exists.
type InputRule func(cx *bio.Complex, params map[string]any) error

// Capabilities are what a model can take as input or give as output.
type Capabilities struct {
	MSA              bool `json:"msa"`
	Ligands          bool `json:"ligands"`
	NucleicAcids     bool `json:"nucleic_acids"`
	Affinity         bool `json:"affinity"`
	Constraints      bool `json:"constraints"`
	PAE              bool `json:"pae"`
	ModifiedResidues bool `json:"modified_residues"`
	Templates        bool `json:"templates"` // structure templates for protein chains
	Cyclic           bool `json:"cyclic"`    // cyclic polymer chains
}

// ParamType is the JSON type a param takes.
type ParamType string

const (
	Boolean ParamType = "boolean"
	Integer ParamType = "integer"
	Number  ParamType = "number"
	String  ParamType = "string"
)

// Param is one accepted key of a request's params.
type Param struct {
	Name string
	Type ParamType
	// Default is the value filled in when the caller omits the key; nil means the key is
	// left out of the accepted params (the model uses its own value).
	Default  any
	Min, Max *float64          // numeric range; values outside are clamped
	Enum     []string          // allowed strings
	Aliases  map[string]string // accepted spellings mapped to an Enum value
	// NotAbove names another integer param of the model that this one may not exceed; a
	// larger value is clamped down to it (BoltzGen's budget never exceeds num_designs).
	NotAbove    string
	Description string
}

// Protocol is one design protocol.
type Protocol struct {
	ID       string
	Model    string   // the design model that runs it
	Requires []string // request fields it needs
	// Optional are request fields it takes besides (BoltzGen's structure, for a spec's file
	// entity).
	Optional []string
	// Binder is what a BoltzGen protocol designs against a spec in Boltz's sequences form,
	// in BoltzGen's sequence notation (80..140: a chain of 80 to 140 designed residues);
	// empty where the protocol takes only BoltzGen's entities form.
	Binder      string
	Description string
}

// Limits are every cap and quota of decisions.md's Limits table, all configurable.
type Limits struct {
	ResidueCeiling        int `json:"residue_ceiling"`
	ChainsPerComplex      int `json:"chains_per_complex"`
	LigandsPerComplex     int `json:"ligands_per_complex"`
	ConstraintsPerComplex int `json:"constraints_per_complex"`
	TargetsPerJob         int `json:"targets_per_job"`
	MaxContentChars       int `json:"max_content_chars"`
	StructureChars        int `json:"structure_chars"`
	EmbedSequences        int `json:"embed_sequences_per_job"`
	EmbedResidues         int `json:"embed_residues_per_sequence"`
	RequestBytes          int `json:"request_body_bytes"`
	ActiveJobsPerOwner    int `json:"active_jobs_per_owner"`
	CreatesPerMinute      int `json:"creates_per_owner_per_minute"`
	QueuedJobs            int `json:"queued_jobs"`
	RetainedJobs          int `json:"retained_jobs"`
	ListDefault           int `json:"list_default"`
	ListMax               int `json:"list_max"`
	WaitDefaultSeconds    int `json:"wait_default_seconds"`
	WaitMaxSeconds        int `json:"wait_max_seconds"`
	// Designs per job: the upper bound of each design model's num_designs (and budget).
	BoltzGenDesigns int `json:"boltzgen_designs_per_job"`
	RFD3Designs     int `json:"rfd3_designs_per_job"`
	// NameChars caps the optional job name, a label shown in listings.
	NameChars int `json:"name_chars"`
	// Per client (an IPv4 address or an IPv6 /64, not a trusted proxy): open connections,
	// and of them requests held by Prefer: wait. An operator behind a proxy that does not
	// forward client addresses, where every client is the proxy, raises them.
	ConnectionsPerClient int `json:"connections_per_client"`
	HeldWaitsPerClient   int `json:"held_waits_per_client"`
	// Runtime caps per kind and the stall cap.
	PredictRuntime time.Duration `json:"-"`
	DesignRuntime  time.Duration `json:"-"`
	EmbedRuntime   time.Duration `json:"-"`
	Stall          time.Duration `json:"-"`
}

// PredictRequest is the body of POST /v1/predictions.
type PredictRequest struct {
	Model   string                     `json:"model"`
	Name    string                     `json:"name"`
	Input   *string                    `json:"input"`
	Seq     *string                    `json:"sequence"`
	Targets []job.Target               `json:"targets"`
	Params  map[string]json.RawMessage `json:"params"`
}

// DesignRequest is the body of POST /v1/designs.
type DesignRequest struct {
	Protocol  string                     `json:"protocol"`
	Model     string                     `json:"model"`
	Name      string                     `json:"name"`
	Spec      *string                    `json:"spec"`
	Structure *string                    `json:"structure"`
	Contig    *string                    `json:"contig"`
	Params    map[string]json.RawMessage `json:"params"`
}

// EmbedRequest is the body of POST /v1/embeddings.
type EmbedRequest struct {
	Model     string                     `json:"model"`
	Name      string                     `json:"name"`
	Sequence  *string                    `json:"sequence"`
	Sequences []EmbedSequence            `json:"sequences"`
	Input     *string                    `json:"input"`
	Params    map[string]json.RawMessage `json:"params"`
}

// EmbedSequence is one item of EmbedRequest.Sequences: a bare string or {id, sequence}.
type EmbedSequence struct {
	ID       string
	Sequence string
}
