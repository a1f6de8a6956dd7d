package catalog

import "github.com/chaperone-bio/chaperone/job"

// CatalogDoc is the body of GET /v1/models (decisions.md, "Catalog").
type CatalogDoc struct {
	Object     string        `json:"object"` // always "catalog"
	APIVersion string        `json:"api_version"`
	Models     []ModelDoc    `json:"models"`
	Protocols  []ProtocolDoc `json:"protocols"`
	Limits     LimitsDoc     `json:"limits"`
	// MSAServer is where use_msa_server sends protein sequences.
	MSAServer string `json:"msa_server"`
	// MSASearch says where and how alignments are searched: the server and its modes, or
	// local MMseqs2 databases, from which no sequence leaves the deployment.
	MSASearch string `json:"msa_search"`
}

// ModelDoc describes one model.
type ModelDoc struct {
	ID        string   `json:"id"`
	Kind      job.Kind `json:"kind"`
	Name      string   `json:"name"`
	Available bool     `json:"available"`
	// UnavailableReason says why no live worker can run the model, in words an operator
	// can act on; null when it is available.
	UnavailableReason *string `json:"unavailable_reason"`
	MaxResidues       int     `json:"max_residues"`
	MaxTokens         int     `json:"max_tokens,omitempty"` // structure models: residues plus ligand heavy atoms
	// MeasuredWall is the largest input this server has run the model on to a result; null
	// until it has one. max_residues is what is accepted, this is the track record.
	MeasuredWall *int                `json:"measured_wall"`
	Capabilities Capabilities        `json:"capabilities"`
	DModel       int                 `json:"d_model,omitempty"` // embedding models only
	Fast         string              `json:"fast"`
	Params       map[string]ParamDoc `json:"params"`
}

// ProtocolDoc describes one design protocol, with the params of the model that runs it.
type ProtocolDoc struct {
	ID          string              `json:"id"`
	Model       string              `json:"model"`
	Requires    []string            `json:"requires"`
	Description string              `json:"description"`
	Params      map[string]ParamDoc `json:"params"`
}

// ParamDoc describes one param. Default is null when omitting the param lets the model use
// its own value, which the description names.
type ParamDoc struct {
	Type        ParamType         `json:"type"`
	Default     any               `json:"default"`
	Min         *float64          `json:"min,omitempty"`
	Max         *float64          `json:"max,omitempty"`
	Enum        []string          `json:"enum,omitempty"`
	Aliases     map[string]string `json:"aliases,omitempty"`
	NotAbove    string            `json:"not_above,omitempty"`
	Description string            `json:"description"`
}

// LimitsDoc is every cap of the service, with durations in whole seconds, and the same caps
// again under the reference service's names.
type LimitsDoc struct {
	Limits
	PredictRuntimeSeconds int `json:"predict_runtime_seconds"`
	DesignRuntimeSeconds  int `json:"design_runtime_seconds"`
	EmbedRuntimeSeconds   int `json:"embed_runtime_seconds"`
	StallSeconds          int `json:"stall_seconds"`
	PublicLimits
}

// PublicLimits are the caps of this server under the names the reference service's docs
// give them (docs/models-and-limits.md, "Limits"), so that a script written for that
// service reads them here. Where the docs name two caps that are one here, both names
// carry it: one active-jobs cap and one create rate bind a key, a session and an address
// alike; BoltzGen's num_designs and budget share one bound; one stall cap serves every kind
// of job. The docs' parameter ceilings are the largest maximum of the param among the
// models. A cap the docs name that this server does not have (a service-wide active-jobs
// cap, a cost budget, byte quotas) is left out rather than given a value that means
// something else.
type PublicLimits struct {
	MaxResidues              int `json:"max_residues"`
	MaxChainsPerComplex      int `json:"max_chains_per_complex"`
	MaxLigandsPerComplex     int `json:"max_ligands_per_complex"`
	MaxConstraintsPerComplex int `json:"max_constraints_per_complex"`
	MaxComplexes             int `json:"max_complexes"`
	MaxDesigns               int `json:"max_designs"`
	MaxBudget                int `json:"max_budget"`
	MaxRFD3Designs           int `json:"max_rfd3_designs"`
	MaxRFD3Timesteps         int `json:"max_rfd3_timesteps"`
	MaxStructureChars        int `json:"max_structure_chars"`
	MaxEmbedSequences        int `json:"max_embed_sequences"`
	MaxEmbedSequenceResidues int `json:"max_embed_sequence_residues"`
	MaxRecyclingSteps        int `json:"max_recycling_steps"`
	MaxSamplingSteps         int `json:"max_sampling_steps"`
	MaxDiffusionSamples      int `json:"max_diffusion_samples"`
	MaxActiveJobsPerIP       int `json:"max_active_jobs_per_ip"`
	MaxActiveJobsPerSession  int `json:"max_active_jobs_per_session"`
	MaxSubmitsPerMin         int `json:"max_submits_per_min"`
	MaxSubmitsPerMinPerIP    int `json:"max_submits_per_min_per_ip"`
	MaxRetainedJobs          int `json:"max_retained_jobs"`
	MaxRuntimePredictSeconds int `json:"max_runtime_predict_s"`
	MaxRuntimeDesignSeconds  int `json:"max_runtime_design_s"`
	MaxRuntimeEmbedSeconds   int `json:"max_runtime_embed_s"`
	MaxStallSeconds          int `json:"max_stall_s"`
	MaxStallDesignSeconds    int `json:"max_stall_design_s"`
	MaxStallEmbedSeconds     int `json:"max_stall_embed_s"`
}

// publicLimits is the catalog's caps under the reference service's names.
func (c *Catalog) publicLimits() PublicLimits {
	l := c.Limits
	stall := int(l.Stall.Seconds())
	return PublicLimits{
		MaxResidues:              l.ResidueCeiling,
		MaxChainsPerComplex:      l.ChainsPerComplex,
		MaxLigandsPerComplex:     l.LigandsPerComplex,
		MaxConstraintsPerComplex: l.ConstraintsPerComplex,
		MaxComplexes:             l.TargetsPerJob,
		MaxDesigns:               l.BoltzGenDesigns,
		MaxBudget:                l.BoltzGenDesigns,
		MaxRFD3Designs:           l.RFD3Designs,
		MaxRFD3Timesteps:         c.paramCeiling("num_timesteps"),
		MaxStructureChars:        l.StructureChars,
		MaxEmbedSequences:        l.EmbedSequences,
		MaxEmbedSequenceResidues: l.EmbedResidues,
		MaxRecyclingSteps:        c.paramCeiling("recycling_steps"),
		MaxSamplingSteps:         c.paramCeiling("sampling_steps"),
		MaxDiffusionSamples:      c.paramCeiling("diffusion_samples"),
		MaxActiveJobsPerIP:       l.ActiveJobsPerOwner,
		MaxActiveJobsPerSession:  l.ActiveJobsPerOwner,
		MaxSubmitsPerMin:         l.CreatesPerMinute,
		MaxSubmitsPerMinPerIP:    l.CreatesPerMinute,
		MaxRetainedJobs:          l.RetainedJobs,
		MaxRuntimePredictSeconds: int(l.PredictRuntime.Seconds()),
		MaxRuntimeDesignSeconds:  int(l.DesignRuntime.Seconds()),
		MaxRuntimeEmbedSeconds:   int(l.EmbedRuntime.Seconds()),
		MaxStallSeconds:          stall,
		MaxStallDesignSeconds:    stall,
		MaxStallEmbedSeconds:     stall,
	}
}

// paramCeiling is the largest maximum of the named param among the catalog's models.
func (c *Catalog) paramCeiling(name string) int {
	ceiling := 0.0
	for _, m := range c.Models {
		for _, p := range m.Params {
			if p.Name == name && p.Max != nil {
				ceiling = max(ceiling, *p.Max)
			}
		}
	}
	return int(ceiling)
}

// Document is the catalog as GET /v1/models shows it; unavailable says, for each model id no
// live worker can run now, why (a model without an entry is available), and walls the
// largest input each has run (store.History). Models and protocols keep catalog order, and
// encoding/json sorts the param keys, so the same catalog always encodes to the same bytes.
func (c *Catalog) Document(unavailable map[string]string, walls map[string]int) CatalogDoc {
	d := CatalogDoc{
		Object:     "catalog",
		APIVersion: APIVersion,
		MSAServer:  c.MSAServer,
		MSASearch:  c.MSASearch,
		Models:     make([]ModelDoc, 0, len(c.Models)),
		Protocols:  make([]ProtocolDoc, 0, len(c.Protocols)),
		Limits: LimitsDoc{
			Limits:                c.Limits,
			PredictRuntimeSeconds: int(c.Limits.PredictRuntime.Seconds()),
			DesignRuntimeSeconds:  int(c.Limits.DesignRuntime.Seconds()),
			EmbedRuntimeSeconds:   int(c.Limits.EmbedRuntime.Seconds()),
			StallSeconds:          int(c.Limits.Stall.Seconds()),
			PublicLimits:          c.publicLimits(),
		},
	}
	for _, m := range c.Models {
		var reason *string
		if why, ok := unavailable[m.ID]; ok {
			reason = &why
		}
		d.Models = append(d.Models, ModelDoc{
			ID:                m.ID,
			Kind:              m.Kind,
			Name:              m.Name,
			Available:         reason == nil,
			UnavailableReason: reason,
			MaxResidues:       m.MaxResidues,
			MaxTokens:         m.MaxTokens,
			MeasuredWall:      measuredWall(walls, m.ID),
			Capabilities:      m.Capabilities,
			DModel:            m.DModel,
			Fast:              m.Fast,
			Params:            paramDocs(m.Params),
		})
	}
	for _, p := range c.Protocols {
		var params map[string]ParamDoc
		if m, ok := c.Model(p.Model); ok {
			params = paramDocs(m.Params)
		}
		d.Protocols = append(d.Protocols, ProtocolDoc{
			ID: p.ID, Model: p.Model, Requires: p.Requires, Description: p.Description, Params: params,
		})
	}
	return d
}

func measuredWall(walls map[string]int, model string) *int {
	n, ok := walls[model]
	if !ok {
		return nil
	}
	return &n
}

func paramDocs(ps []Param) map[string]ParamDoc {
	docs := make(map[string]ParamDoc, len(ps))
	for _, p := range ps {
		docs[p.Name] = ParamDoc{
			Type: p.Type, Default: p.Default, Min: p.Min, Max: p.Max, Enum: p.Enum,
			Aliases: p.Aliases, NotAbove: p.NotAbove, Description: p.Description,
		}
	}
	return docs
}
