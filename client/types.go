package client

import (
	"encoding/json"
	"maps"
	"reflect"
	"strings"
	"time"
)

// Kind is what a job computes.
type Kind string

const (
	KindPredict Kind = "predict"
	KindDesign  Kind = "design"
	KindEmbed   Kind = "embed"
)

// Status is where a job is in its life: queued, then running, then one of the three
// terminal statuses.
type Status string

const (
	Queued    Status = "queued"
	Running   Status = "running"
	Succeeded Status = "succeeded"
	Failed    Status = "failed"
	Canceled  Status = "canceled"
)

// Terminal reports whether the job has ended; a terminal job never changes again.
func (s Status) Terminal() bool { return s == Succeeded || s == Failed || s == Canceled }

// Job is the Job resource. Fields the API sends as null are zero here (an empty string, a
// zero time, a nil Progress); Job marshals back to the API's own shape, nulls included.
type Job struct {
	ID       string
	Kind     Kind
	Status   Status
	Name     string
	Model    string // empty for designs
	Protocol string // set for designs
	// Progress is 0..1, or nil while it cannot be told.
	Progress *float64
	// Stage is the current step ("msa", "inference", ...); empty while queued.
	Stage string
	// Done and Total count sub-units (targets, designs, sequences).
	Done, Total int
	// Params are the accepted params: clamped, with every default filled in.
	Params map[string]any
	// Error says why a failed job failed.
	Error        string
	CreatedAt    time.Time
	StartedAt    time.Time
	FinishedAt   time.Time
	ResultsReady bool
	Links        Links
}

// Links are the paths of a job's sub-resources, relative to the server's base URL.
type Links struct {
	Self    string `json:"self"`
	Results string `json:"results"`
	Archive string `json:"archive"`
	Logs    string `json:"logs"`
}

// jobWire is the Job as JSON carries it.
type jobWire struct {
	Object       string         `json:"object"`
	ID           string         `json:"id"`
	Kind         Kind           `json:"kind"`
	Status       Status         `json:"status"`
	Name         string         `json:"name"`
	Model        *string        `json:"model"`
	Protocol     *string        `json:"protocol"`
	Progress     *float64       `json:"progress"`
	Stage        *string        `json:"stage"`
	Done         int            `json:"done"`
	Total        int            `json:"total"`
	Params       map[string]any `json:"params"`
	Error        *string        `json:"error"`
	CreatedAt    *apiTime       `json:"created_at"`
	StartedAt    *apiTime       `json:"started_at"`
	FinishedAt   *apiTime       `json:"finished_at"`
	ResultsReady bool           `json:"results_ready"`
	Links        Links          `json:"links"`
}

func (j *Job) UnmarshalJSON(b []byte) error {
	var w jobWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*j = Job{
		ID: w.ID, Kind: w.Kind, Status: w.Status, Name: w.Name, Model: deref(w.Model),
		Protocol: deref(w.Protocol), Progress: w.Progress, Stage: deref(w.Stage), Done: w.Done,
		Total: w.Total, Params: w.Params, Error: deref(w.Error), CreatedAt: derefTime(w.CreatedAt),
		StartedAt: derefTime(w.StartedAt), FinishedAt: derefTime(w.FinishedAt),
		ResultsReady: w.ResultsReady, Links: w.Links,
	}
	return nil
}

func (j Job) MarshalJSON() ([]byte, error) {
	params := j.Params
	if params == nil {
		params = map[string]any{}
	}
	return json.Marshal(jobWire{
		Object: "job", ID: j.ID, Kind: j.Kind, Status: j.Status, Name: j.Name, Model: orNull(j.Model),
		Protocol: orNull(j.Protocol), Progress: j.Progress, Stage: orNull(j.Stage), Done: j.Done,
		Total: j.Total, Params: params, Error: orNull(j.Error), CreatedAt: timeOrNull(j.CreatedAt),
		StartedAt: timeOrNull(j.StartedAt), FinishedAt: timeOrNull(j.FinishedAt),
		ResultsReady: j.ResultsReady, Links: j.Links,
	})
}

// JobList is one page of the caller's jobs, newest first.
type JobList struct {
	Data    []*Job `json:"data"`
	HasMore bool   `json:"has_more"`
	// NextCursor fetches the next page; empty on the last one.
	NextCursor string `json:"next_cursor"`
}

func (l JobList) MarshalJSON() ([]byte, error) {
	data := l.Data
	if data == nil {
		data = []*Job{}
	}
	return json.Marshal(struct {
		Object     string  `json:"object"`
		Data       []*Job  `json:"data"`
		HasMore    bool    `json:"has_more"`
		NextCursor *string `json:"next_cursor"`
	}{"list", data, l.HasMore, orNull(l.NextCursor)})
}

// Results is a job's results manifest. While the job has not succeeded only JobID, Ready
// (false) and Status are set. Once ready, Kind says which of Rows (predictions), Designs
// (designs) or the embedding fields (Model, Pool, Format, DModel, Sequences) are set;
// Artifacts lists every downloadable file of every kind.
type Results struct {
	JobID  string `json:"job_id"`
	Ready  bool   `json:"ready"`
	Status Status `json:"status,omitempty"`
	Kind   Kind   `json:"kind,omitempty"`

	Rows    []Row    `json:"rows,omitempty"`
	Designs []Design `json:"designs,omitempty"`

	Model     string             `json:"model,omitempty"`
	Pool      string             `json:"pool,omitempty"`
	Format    string             `json:"format,omitempty"`
	DModel    int                `json:"d_model,omitempty"`
	Sequences []EmbeddedSequence `json:"sequences,omitempty"`

	Artifacts  []Artifact `json:"artifacts,omitempty"`
	ArchiveURL string     `json:"archive_url,omitempty"`
}

func (r Results) MarshalJSON() ([]byte, error) {
	type plain Results
	b, err := json.Marshal(plain(r))
	if err != nil {
		return nil, err
	}
	// The API names the object; keep the shape it sends.
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	m["object"] = json.RawMessage(`"results"`)
	if r.Ready && r.Artifacts == nil {
		m["artifacts"] = json.RawMessage(`[]`)
	}
	return json.Marshal(m)
}

// Row is one target of a prediction: the fields every row has, the scores (nil when the
// row has none: a failed target has no scores, and a model may give one as null), and in
// Extra whatever else the row carries.
type Row struct {
	ID        string  `json:"id"`
	Status    string  `json:"status"` // "ok" or "failed"
	Error     string  `json:"error,omitempty"`
	NChains   int     `json:"n_chains"`
	NResidues int     `json:"n_residues"`
	Samples   int     `json:"samples"`
	MSA       bool    `json:"msa"`
	RuntimeS  float64 `json:"runtime_s"`

	PLDDT           *float64 `json:"plddt,omitempty"` // 0..1
	PTM             *float64 `json:"ptm,omitempty"`
	ComplexPLDDT    *float64 `json:"complex_plddt,omitempty"`
	IPTM            *float64 `json:"iptm,omitempty"`
	ConfidenceScore *float64 `json:"confidence_score,omitempty"`

	// Affinity runs (boltz2 with an affinity property).
	AffinityPredValue          *float64 `json:"affinity_pred_value,omitempty"`
	AffinityProbabilityBinary  *float64 `json:"affinity_probability_binary,omitempty"`
	AffinityPredValue1         *float64 `json:"affinity_pred_value1,omitempty"`
	AffinityProbabilityBinary1 *float64 `json:"affinity_probability_binary1,omitempty"`
	AffinityPredValue2         *float64 `json:"affinity_pred_value2,omitempty"`
	AffinityProbabilityBinary2 *float64 `json:"affinity_probability_binary2,omitempty"`
	// The row's runtime_s split between the structure and the affinity predictions.
	StructureRuntimeS *float64 `json:"structure_runtime_s,omitempty"`
	AffinityRuntimeS  *float64 `json:"affinity_runtime_s,omitempty"`

	// Extra holds the row's other fields, as decoded JSON, and the typed fields it sent as
	// null, so that the row marshals back to what the server sent.
	Extra map[string]any `json:"-"`
}

type rowFields Row

func (r *Row) UnmarshalJSON(b []byte) error {
	var known rowFields
	if err := json.Unmarshal(b, &known); err != nil {
		return err
	}
	var all map[string]any
	if err := json.Unmarshal(b, &all); err != nil {
		return err
	}
	for _, k := range rowKeys {
		if all[k] != nil {
			delete(all, k)
		}
	}
	*r = Row(known)
	if len(all) > 0 {
		r.Extra = all
	}
	return nil
}

func (r Row) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(rowFields(r))
	if err != nil || len(r.Extra) == 0 {
		return b, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	extra := maps.Clone(r.Extra)
	maps.Copy(extra, m) // the typed fields win over a stale copy in Extra
	return json.Marshal(extra)
}

// rowKeys are the JSON names of Row's typed fields.
var rowKeys = func() []string {
	t := reflect.TypeFor[rowFields]()
	var keys []string
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			keys = append(keys, name)
		}
	}
	return keys
}()

// Design is one designed binder or scaffold.
type Design struct {
	ID       string `json:"id"`
	Rank     *int   `json:"rank"` // 1-based for BoltzGen; nil for rfd3, whose designs are unranked
	Sequence string `json:"sequence"`
	// File is the artifact path of the design's mmCIF.
	File    string         `json:"file"`
	Metrics map[string]any `json:"metrics"`
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
	Type   string `json:"type"` // structure, confidence, pae, affinity, embedding, table, metrics, log
	URL    string `json:"url"`  // path under the base URL
}

// Health is the answer of GET /v1/health.
type Health struct {
	Status     string `json:"status"`
	Service    string `json:"service"`
	APIVersion string `json:"api_version"`
	Version    string `json:"version"`
	// Ready is false while the server is starting: creates may wait, or be refused with
	// a short Retry-After.
	Ready bool `json:"ready"`
}

// Catalog is what a server offers (GET /v1/models): models, design protocols and limits.
type Catalog struct {
	APIVersion string           `json:"api_version"`
	Models     []Model          `json:"models"`
	Protocols  []Protocol       `json:"protocols"`
	Limits     map[string]int64 `json:"limits"`
}

// Model is one model of the catalog.
type Model struct {
	ID   string `json:"id"`
	Kind Kind   `json:"kind"`
	Name string `json:"name"`
	// Available says whether a live worker can run the model now; creating a job for an
	// unavailable model is a 503.
	Available bool `json:"available"`
	// UnavailableReason says why no live worker can run the model, in words an operator can
	// act on; nil when it is available.
	UnavailableReason *string          `json:"unavailable_reason"`
	MaxResidues       int              `json:"max_residues"`
	Capabilities      map[string]bool  `json:"capabilities"`
	DModel            int              `json:"d_model,omitempty"`
	Fast              string           `json:"fast"`
	Params            map[string]Param `json:"params"`
}

// Protocol is one design protocol.
type Protocol struct {
	ID          string           `json:"id"`
	Model       string           `json:"model"`
	Requires    []string         `json:"requires"`
	Description string           `json:"description"`
	Params      map[string]Param `json:"params"`
}

// Param describes one accepted key of a request's params.
type Param struct {
	Type        string            `json:"type"` // boolean, integer, number, string
	Default     any               `json:"default"`
	Min         *float64          `json:"min,omitempty"`
	Max         *float64          `json:"max,omitempty"`
	Enum        []string          `json:"enum,omitempty"`
	Aliases     map[string]string `json:"aliases,omitempty"`
	NotAbove    string            `json:"not_above,omitempty"`
	Description string            `json:"description"`
}

// PredictRequest is the body of a prediction. Give exactly one of Sequence, Input and
// Targets. Model defaults to boltz2 on the server.
type PredictRequest struct {
	Model    string   `json:"model,omitempty"`
	Name     string   `json:"name,omitempty"`
	Sequence string   `json:"sequence,omitempty"`
	Input    string   `json:"input,omitempty"` // FASTA or Boltz YAML
	Targets  []Target `json:"targets,omitempty"`
	// Params as GET /v1/models lists them for the model, for example
	// {"diffusion_samples": 2, "use_msa_server": false}.
	Params map[string]any `json:"params,omitempty"`
}

// Target is one input of a multi-target prediction.
type Target struct {
	Name    string `json:"name,omitempty"`
	Content string `json:"content"` // FASTA or Boltz YAML
}

// DesignRequest is the body of a design. The six BoltzGen protocols take Spec; the three
// rfd3-* protocols take Structure and Contig.
type DesignRequest struct {
	Protocol  string         `json:"protocol"`
	Model     string         `json:"model,omitempty"` // optional; must match the protocol's
	Name      string         `json:"name,omitempty"`
	Spec      string         `json:"spec,omitempty"`
	Structure string         `json:"structure,omitempty"` // PDB or mmCIF text
	Contig    string         `json:"contig,omitempty"`
	Params    map[string]any `json:"params,omitempty"`
}

// EmbedRequest is the body of an embedding job. Give exactly one of Sequence, Sequences
// and Input. Model defaults to esmc-600m on the server; Params take pool, format and fast.
type EmbedRequest struct {
	Model     string          `json:"model,omitempty"`
	Name      string          `json:"name,omitempty"`
	Sequence  string          `json:"sequence,omitempty"`
	Sequences []EmbedSequence `json:"sequences,omitempty"`
	Input     string          `json:"input,omitempty"` // FASTA
	Params    map[string]any  `json:"params,omitempty"`
}

// EmbedSequence is one sequence of an embedding job; an empty ID lets the server number it.
type EmbedSequence struct {
	ID       string `json:"id,omitempty"`
	Sequence string `json:"sequence"`
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func orNull(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// apiTime is a timestamp as the API writes it: RFC 3339 in UTC, to the millisecond.
type apiTime struct{ time.Time }

func (t apiTime) MarshalJSON() ([]byte, error) {
	return []byte(`"` + t.UTC().Format("2006-01-02T15:04:05.000Z") + `"`), nil
}

func derefTime(t *apiTime) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.Time
}

func timeOrNull(t time.Time) *apiTime {
	if t.IsZero() {
		return nil
	}
	return &apiTime{t}
}
