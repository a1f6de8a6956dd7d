package catalog

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"

	"github.com/chaperone-bio/chaperone/job"
)

// APIVersion is the version of the interface this catalog describes.
const APIVersion = "1.0.0"

// Default returns the catalog with the default limits.
func Default() *Catalog { return New(DefaultLimits()) }

// New returns the catalog under the given limits. A zero field of l takes its default, so a
// configuration that sets only some limits (or predates a newer one) still gets a working
// catalog; no cap of this service is meaningful at zero. Every model's max_residues is cut
// to the configured ceiling, so an operator lowering the ceiling lowers it everywhere.
func New(l Limits) *Catalog {
	lv, dv := reflect.ValueOf(&l).Elem(), reflect.ValueOf(DefaultLimits())
	for i := range lv.NumField() {
		if lv.Field(i).IsZero() {
			lv.Field(i).Set(dv.Field(i))
		}
	}
	c := &Catalog{Models: models(l), Protocols: protocols(), Limits: l}
	for i := range c.Models {
		m := &c.Models[i]
		if m.Kind == job.EmbedKind {
			m.MaxResidues = min(m.MaxResidues, l.EmbedResidues)
		} else {
			m.MaxResidues = min(m.MaxResidues, l.ResidueCeiling)
			m.MaxTokens = m.MaxResidues
		}
	}
	return c
}

// AddInputRule makes the catalog check every target of the model's prediction jobs with
// rule at submit, after the caps and capabilities. The engine that runs the model owns the
// rule; the server registers it from the engines it is given, so that a server without a
// worker refuses what the tool would fail on just the same.
func (c *Catalog) AddInputRule(model string, rule InputRule) error {
	m, ok := c.Model(model)
	if !ok {
		return fmt.Errorf("catalog: an input rule for %q, which is no model of the catalog", model)
	}
	m.rules = append(m.rules, rule)
	return nil
}

// Model returns the model with the given id.
func (c *Catalog) Model(id string) (*Model, bool) {
	i := slices.IndexFunc(c.Models, func(m Model) bool { return m.ID == id })
	if i < 0 {
		return nil, false
	}
	return &c.Models[i], true
}

// Protocol returns the design protocol with the given id.
func (c *Catalog) Protocol(id string) (*Protocol, bool) {
	i := slices.IndexFunc(c.Protocols, func(p Protocol) bool { return p.ID == id })
	if i < 0 {
		return nil, false
	}
	return &c.Protocols[i], true
}

// ModelIDs lists the ids of the models of one kind, in catalog order.
func (c *Catalog) ModelIDs(kind job.Kind) []string {
	var ids []string
	for _, m := range c.Models {
		if m.Kind == kind {
			ids = append(ids, m.ID)
		}
	}
	return ids
}

// ProtocolIDs lists the ids of the design protocols, in catalog order.
func (c *Catalog) ProtocolIDs() []string {
	ids := make([]string, len(c.Protocols))
	for i, p := range c.Protocols {
		ids[i] = p.ID
	}
	return ids
}

// foldResidues is the ceiling of every structure model, prediction and design: each
// prediction model folds this platform ceiling of 1024 residues inside the 3600 s runtime
// cap on one 80 GB GPU, going by the upstream figures in research/upstream-models.md:
// Boltz-2 users fold ~2000 residues on 80 GB; Protenix reports 1000 tokens in 59 s and
// 18 GB; OpenFold3 is tested on 40 GB A100s; OpenDDE peaks at 66.9 GiB for 1001 tokens in
// bf16 with plain kernels, which is why its fast switch never leaves bf16. ESMFold2 has no
// published figure; the reference service (JapanFold) advertises 1024 for both variants.
// Lower it, or give one model a ceiling of its own, when a measurement says so.
const foldResidues = 1024

// embedMaxResidues is every embedding model's ceiling per sequence. ESM C has no length cap
// in its code; SaProt's rotary positions do not cap it either, though it was trained on
// sequences of up to 1024.
const embedMaxResidues = 2000

func ptr(f float64) *float64 { return &f }

func boolParam(name string, def bool, desc string) Param {
	return Param{Name: name, Type: Boolean, Default: def, Description: desc}
}

// intParam is an integer param clamped to lo..hi; def is an int, or nil for "the model's
// own value".
func intParam(name string, lo, hi int, def any, desc string) Param {
	return Param{Name: name, Type: Integer, Default: def, Min: ptr(float64(lo)), Max: ptr(float64(hi)), Description: desc}
}

func enumParam(name, def string, enum []string, aliases map[string]string, desc string) Param {
	return Param{Name: name, Type: String, Default: def, Enum: enum, Aliases: aliases, Description: desc}
}

// msaUse says how a prediction model treats use_msa_server.
type msaUse int

const (
	msaOn    msaUse = iota // optional, on by default
	msaOff                 // optional, off by default
	msaNever               // single-sequence model: only false is accepted
)

// predictParams are the params of a prediction model. recycles and steps are the model's
// own recycling and diffusion step counts, used when the caller omits those keys; seed is
// the tool's documented default seed (Boltz documents none: it takes the reference
// service's 0), filled in so that the job shows the seed that ran.
func predictParams(id string, msa msaUse, recycles, steps, seed int) []Param {
	var msaDesc string
	switch msa {
	case msaOn:
		msaDesc = "Align each protein chain on the operator's MSA server (msa_server above; the sequence leaves " +
			"this service unless that server is self-hosted); false folds single-sequence."
	case msaOff:
		msaDesc = "Off by default: " + id + " folds single-sequence. True aligns each protein chain on " +
			"the operator's MSA server first (msa_server above; the sequence leaves this service unless that server is self-hosted)."
	case msaNever:
		msaDesc = id + " is single-sequence only: the key is accepted as false, and true is rejected."
	}
	return []Param{
		boolParam("use_msa_server", msa == msaOn, msaDesc),
		boolParam("fast", true, "Faster numerics where the engine offers them (see the model's fast); never fewer steps."),
		intParam("recycling_steps", 1, 10, nil,
			"Trunk recycling iterations; omit it and "+id+" uses its own "+strconv.Itoa(recycles)+"."),
		intParam("sampling_steps", 10, 500, nil,
			"Diffusion sampling steps; omit it and "+id+" uses its own "+strconv.Itoa(steps)+"."),
		intParam("diffusion_samples", 1, 5, 1,
			"Structures sampled per target; the best-ranked one is <target>.cif (or .pdb), the others <target>_sample_<k>.cif."),
		enumParam("output_format", "cif", []string{"cif", "pdb"}, map[string]string{"mmcif": "cif"},
			"Structure file format: cif (mmCIF) or pdb; mmcif is accepted as cif."),
		intParam("seed", 0, maxSeed, seed, "Random seed of the model's sampling; the same seed and input give the same "+
			"structures. Omit it and "+id+" uses its own "+strconv.Itoa(seed)+"."),
		boolParam("write_pae", false, "Also write the best sample's token-pair PAE matrix as <target>_pae.npz (array pae, "+
			"float32 [tokens, tokens], in Å); only for models with the pae capability."),
	}
}

// maxSeed is the largest seed every tool takes (a signed 32-bit integer).
const maxSeed = 2147483647

func models(l Limits) []Model {
	predictCaps := Capabilities{MSA: true, Ligands: true, NucleicAcids: true, PAE: true, ModifiedResidues: true}
	proteinOnly := Capabilities{MSA: true, PAE: true, ModifiedResidues: true}
	boltz2 := predictCaps
	boltz2.Affinity, boltz2.Constraints, boltz2.Templates, boltz2.Cyclic = true, true, true, true
	esmfold2Fast := proteinOnly
	esmfold2Fast.MSA = false
	// OpenFold3 computes PAE logits, but its fold writes no PAE matrix (only per-atom pLDDT
	// and the token-pair PDE).
	openfold3 := predictCaps
	openfold3.PAE = false

	budget := intParam("budget", 1, l.BoltzGenDesigns, 10,
		"Top-ranked designs kept after filtering; never above num_designs (clamped down to it).")
	budget.NotAbove = "num_designs"

	// esmFast and openddeFast say what fast switches in the models that share a tool.
	const esmFast = "On (on a GPU): esm's default, the ESM C backbone in fp8, as ESMFold2 was trained; off: the backbone in fp32. " +
		"esm runs the trunk under its own bf16 autocast on a GPU either way; a CPU-only worker runs fp32 throughout."
	const openddeFast = "On: cuEquivariance triangle kernels; off: plain PyTorch kernels. Both run bf16: upstream's fp32 " +
		"default needs about twice the memory and would not fit max_residues on one GPU."

	return []Model{
		predictModel("boltz2", "Boltz-2", "boltz", boltz2, msaOn, 3, 200, 0,
			"On: cuEquivariance fused triangle kernels (upstream's default; Boltz uses them on GPUs of "+
				"compute capability 8.0 or newer); off: --no_kernels. Precision is bf16-mixed either way, as upstream "+
				"fixes it, and steps and samples are never cut."),
		predictModel("esmfold2", "ESMFold2", "esm", proteinOnly, msaOff, 10, 100, 42, esmFast),
		predictModel("esmfold2-fast", "ESMFold2 Fast", "esm", esmfold2Fast, msaNever, 10, 100, 42,
			esmFast+" The model itself is the inference-optimised single-sequence ESMFold2."),
		predictModel("protenix-v2", "Protenix v2", "protenix", predictCaps, msaOn, 10, 200, 101,
			"On: bf16 with cuEquivariance triangle kernels (upstream's defaults); off: fp32 with plain PyTorch kernels."),
		predictModel("openfold3", "OpenFold3", "run_openfold", openfold3, msaOn, 3, 200, 42,
			"On (on a GPU): upstream's DeepSpeed evo attention, plus cuEquivariance triangle kernels where the worker's "+
				"OpenFold3 has them installed (openfold3[cuequivariance]); off: plain PyTorch kernels. Precision stays "+
				"at upstream's fp32, and steps and samples are never cut."),
		predictModel("opendde", "OpenDDE", "opendde", proteinOnly, msaOn, 10, 200, 101, openddeFast),
		predictModel("opendde-abag", "OpenDDE antibody-antigen", "opendde", proteinOnly, msaOn, 10, 200, 101, openddeFast),
		{
			// The size of a BoltzGen design follows from its spec, which is checked against
			// this ceiling once specs are parsed.
			ID: "boltzgen", Kind: job.DesignKind, Name: "BoltzGen", Tool: "boltzgen", MaxResidues: foldResidues,
			Capabilities: Capabilities{Ligands: true, NucleicAcids: true},
			Params: []Param{
				intParam("num_designs", 1, l.BoltzGenDesigns, 10, "Designs generated before filtering and ranking."),
				budget,
				boolParam("fast", true, "Faster numerics (see the model's fast); never fewer designs or steps."),
			},
			// BoltzGen (github.com/HannesStark/boltzgen) has no seed option, its design task
			// takes no seed key, and its design data draws from np.random.default_rng(None),
			// fresh entropy on every run (src/boltzgen/task/predict/data_from_yaml.py).
			Refused: map[string]string{"seed": "BoltzGen offers no seed (its command line has no seed option and " +
				"its design step draws fresh randomness on every run), so no seed could reproduce its designs"},
			Fast: "On: cuEquivariance kernels where the GPU has them (--use_kernels auto, upstream's default); off: --use_kernels false. " +
				"Never fewer designs or steps.",
		},
		{
			// A contig bounds the size of an rfd3 design: kept ranges plus designed maxima.
			ID: "rfd3", Kind: job.DesignKind, Name: "RFdiffusion3", Tool: "rfd3", MaxResidues: foldResidues,
			Capabilities: Capabilities{NucleicAcids: true},
			Params: []Param{
				intParam("num_designs", 1, l.RFD3Designs, 4, "Independent designs for the same structure and contig."),
				intParam("num_timesteps", 4, 200, 100, "Diffusion steps per design; 200 is cleanest, fewer is faster."),
				intParam("seed", 0, maxSeed, 42, "Noise seed; the same seed and inputs give the same designs."),
			},
			Fast: "No fast switch: RFdiffusion3 runs at its default precision. Use fewer num_timesteps to go faster.",
		},
		esmc("esmc-300m", "ESM C 300M", 960),
		esmc("esmc-600m", "ESM C 600M", 1152),
		esmc("esmc-6b", "ESM C 6B", 2560),
		saprot("saprot-650m", "SaProt 650M"),
		saprot("saprot-1.3b", "SaProt 1.3B"),
	}
}

// predictModel is a prediction model that folds up to the platform ceiling, with the params
// of predictParams: msa, its own recycles and steps, and its documented seed.
func predictModel(id, name, tool string, caps Capabilities, msa msaUse, recycles, steps, seed int, fast string) Model {
	return Model{
		ID: id, Kind: job.PredictKind, Name: name, Tool: tool, MaxResidues: foldResidues,
		Capabilities: caps, Params: predictParams(id, msa, recycles, steps, seed), Fast: fast,
	}
}

func embedParams() []Param {
	return []Param{
		enumParam("pool", "mean", []string{"mean", "max", "cls"}, nil,
			"How per-residue vectors become the pooled vector: mean, max, or cls (the class token)."),
		enumParam("format", "npz", []string{"npz", "parquet"}, nil,
			"npz: <id>.npz per sequence with per_residue, pooled and sequence; parquet: one embeddings.parquet of pooled vectors."),
		boolParam("fast", false, "Higher throughput at slightly lower precision (see the model's fast)."),
	}
}

func esmc(id, name string, dModel int) Model {
	return Model{
		ID: id, Kind: job.EmbedKind, Name: name, Tool: "esm", MaxResidues: embedMaxResidues, DModel: dModel,
		Params: embedParams(),
		Fast:   "On (on a GPU): bf16 weights and flash attention where flash-attn is installed; off, or on a CPU-only worker: fp32 throughout.",
	}
}

// saprot models run sequence-only (every structure token masked); both have a hidden size
// of 1280 (their Hugging Face configs). Their vocabulary pairs only the 20 standard amino
// acids (and #) with a structure letter: X, B, Z, U and O would become unknown tokens.
func saprot(id, name string) Model {
	return Model{
		ID: id, Kind: job.EmbedKind, Name: name, Tool: "transformers", MaxResidues: embedMaxResidues, DModel: 1280,
		Letters: "ACDEFGHIKLMNPQRSTVWY",
		Params:  embedParams(),
		Fast:    "On (on a GPU): bf16 weights; off, or on a CPU-only worker: fp32 throughout.",
	}
}

func protocols() []Protocol {
	rfd3 := []string{"structure", "contig"}
	boltzgen := func(id, binder, desc string) Protocol {
		return Protocol{ID: id, Model: "boltzgen", Requires: []string{"spec"}, Optional: []string{"structure"}, Binder: binder,
			Description: desc + specForms(binder)}
	}
	return []Protocol{
		boltzgen("protein-anything", "80..140", "Mini-protein binder against any target."),
		boltzgen("peptide-anything", "12..20", "Short peptide binder (no cysteines, peptide filters)."),
		boltzgen("nanobody-anything", "110..130", "Single-domain antibody (nanobody) binder, with antibody filters."),
		boltzgen("antibody-anything", "110..130", "Antibody binder, with antibody filters."),
		boltzgen("protein-small_molecule", "80..140", "Protein binder of a small molecule, with a binding-affinity step."),
		boltzgen("protein-redesign", "", "Re-design residues of an existing binder: a file entity whose design lists the residues."),
		{ID: "rfd3-binder", Model: "rfd3", Requires: rfd3, Description: "Binder against a protein structure: the contig keeps " +
			"target residues (E6-155) and designs the binder (40-120), with /0 between them."},
		{ID: "rfd3-scaffold", Model: "rfd3", Requires: rfd3, Description: "Scaffold around a fixed motif: the contig keeps the " +
			"motif residues (A1-80, B5-12) and designs what joins them (10, 60-80)."},
		{ID: "rfd3-na-binder", Model: "rfd3", Requires: rfd3, Description: "Binder against a fixed DNA or RNA structure: the contig " +
			"keeps residues of at least one DNA or RNA chain and designs the protein (120-130)."},
	}
}

// specForms says which spec forms a BoltzGen protocol takes.
func specForms(binder string) string {
	const entities = " spec: BoltzGen's design-spec YAML (entities: ...); a file entity names the structure field by a " +
		"file name (path: target.cif)."
	if binder == "" {
		return entities
	}
	return entities + " Or a Boltz-style YAML of the target alone (sequences: ...), against which one protein chain of " +
		binder + " designed residues is the binder."
}

// Binders maps each BoltzGen protocol that takes the sequences form to the binder it
// designs there, for the engine that writes BoltzGen's spec.
func (c *Catalog) Binders() map[string]string {
	m := map[string]string{}
	for _, p := range c.Protocols {
		if p.Binder != "" {
			m[p.ID] = p.Binder
		}
	}
	return m
}
