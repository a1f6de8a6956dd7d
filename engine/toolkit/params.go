package toolkit

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// DecodeParams decodes a job's accepted params into the engine's own struct, by its json
// tags. The params come as the catalog accepted them (an int is an int) or as the job store
// gives them back (every number a float64); through JSON both decode alike, so an engine
// sees an integer as an int. Fields the params leave out keep the values v holds, which is
// where an engine puts the catalog's defaults. A param v has no field for is an error: the
// catalog accepted it, so the engine must run with it rather than quietly drop it.
func DecodeParams(params map[string]any, v any) error {
	b, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("params: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("params: %w", err)
	}
	return nil
}

// PredictParams are the params of every prediction model in the catalog.
type PredictParams struct {
	UseMSAServer bool `json:"use_msa_server"`
	Fast         bool `json:"fast"`
	// RecyclingSteps and SamplingSteps are nil when the caller left them to the tool.
	RecyclingSteps   *int   `json:"recycling_steps"`
	SamplingSteps    *int   `json:"sampling_steps"`
	DiffusionSamples int    `json:"diffusion_samples"`
	OutputFormat     string `json:"output_format"` // "cif" or "pdb"
	// Seed is nil only in params stored before the catalog filled it in.
	Seed *int `json:"seed"`
	// WritePAE asks for the best sample's PAE matrix as <target>_pae.npz.
	WritePAE bool `json:"write_pae"`
}

// SeedOr is the seed the job asked for, or def, the tool's own default, for a job stored
// before seeds were params.
func (p PredictParams) SeedOr(def int) int {
	if p.Seed == nil {
		return def
	}
	return *p.Seed
}

// NewPredictParams decodes a prediction job's params. The catalog fills in every param
// that has a default, so a key is missing only from params stored before it existed; it
// then reads as the tool's own default: fast on, one sample, mmCIF, no alignment server.
func NewPredictParams(params map[string]any) (PredictParams, error) {
	p := PredictParams{Fast: true, DiffusionSamples: 1, OutputFormat: "cif"}
	err := DecodeParams(params, &p)
	return p, err
}
