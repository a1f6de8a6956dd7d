package catalog

import (
	"slices"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/job"
)

func TestDefaultOffersEveryModelOfTheInterface(t *testing.T) {
	t.Parallel()
	c := Default()
	for kind, want := range map[job.Kind][]string{
		job.PredictKind: {"boltz2", "esmfold2", "esmfold2-fast", "protenix-v2", "openfold3", "opendde", "opendde-abag"},
		job.DesignKind:  {"boltzgen", "rfd3"},
		job.EmbedKind:   {"esmc-300m", "esmc-600m", "esmc-6b", "saprot-650m", "saprot-1.3b"},
	} {
		if got := c.ModelIDs(kind); !slices.Equal(got, want) {
			t.Errorf("ModelIDs(%s) = %v, want %v", kind, got, want)
		}
	}
}

func TestDefaultModels(t *testing.T) {
	t.Parallel()
	c := Default()
	tests := []struct {
		id     string
		tool   string
		dModel int
		max    int
	}{
		{"boltz2", "boltz", 0, 1024},
		{"esmfold2", "esm", 0, 1024},
		{"esmfold2-fast", "esm", 0, 1024},
		{"protenix-v2", "protenix", 0, 1024},
		{"openfold3", "run_openfold", 0, 1024},
		{"opendde", "opendde", 0, 1024},
		{"opendde-abag", "opendde", 0, 1024},
		{"boltzgen", "boltzgen", 0, 1024},
		{"rfd3", "rfd3", 0, 1024},
		{"esmc-300m", "esm", 960, 2000},
		{"esmc-600m", "esm", 1152, 2000},
		{"esmc-6b", "esm", 2560, 2000},
		{"saprot-650m", "transformers", 1280, 2000},
		{"saprot-1.3b", "transformers", 1280, 2000},
	}
	for _, tt := range tests {
		m, ok := c.Model(tt.id)
		if !ok {
			t.Errorf("Model(%q) not found", tt.id)
			continue
		}
		if m.Tool != tt.tool || m.DModel != tt.dModel || m.MaxResidues != tt.max {
			t.Errorf("%s: tool %q, d_model %d, max_residues %d; want %q, %d, %d",
				tt.id, m.Tool, m.DModel, m.MaxResidues, tt.tool, tt.dModel, tt.max)
		}
		if m.Name == "" || m.Fast == "" {
			t.Errorf("%s: name %q and fast %q must both be set", tt.id, m.Name, m.Fast)
		}
		for _, p := range m.Params {
			if p.Description == "" {
				t.Errorf("%s: param %s has no description", tt.id, p.Name)
			}
		}
	}
	if _, ok := c.Model("alphafold3"); ok {
		t.Error("Model(alphafold3) found")
	}
}

func TestCapabilities(t *testing.T) {
	t.Parallel()
	c := Default()
	for _, m := range c.Models {
		caps := m.Capabilities
		if (caps.Affinity || caps.Constraints || caps.Templates || caps.Cyclic) != (m.ID == "boltz2") {
			t.Errorf("%s: affinity %v, constraints %v, templates %v, cyclic %v; only boltz2 has them", m.ID,
				caps.Affinity, caps.Constraints, caps.Templates, caps.Cyclic)
		}
		if m.Kind == job.EmbedKind && caps != (Capabilities{}) {
			t.Errorf("%s: an embedding model claims %+v", m.ID, caps)
		}
	}
	for _, id := range []string{"esmfold2", "esmfold2-fast", "opendde", "opendde-abag"} {
		m, _ := c.Model(id)
		if m.Capabilities.Ligands || m.Capabilities.NucleicAcids {
			t.Errorf("%s is protein-only but claims ligands or nucleic acids", id)
		}
	}
	if m, _ := c.Model("esmfold2-fast"); m.Capabilities.MSA {
		t.Error("esmfold2-fast claims MSA; it is single-sequence only")
	}
}

func TestProtocols(t *testing.T) {
	t.Parallel()
	c := Default()
	want := map[string]string{
		"protein-anything": "boltzgen", "peptide-anything": "boltzgen", "nanobody-anything": "boltzgen",
		"antibody-anything": "boltzgen", "protein-small_molecule": "boltzgen", "protein-redesign": "boltzgen",
		"rfd3-binder": "rfd3", "rfd3-scaffold": "rfd3", "rfd3-na-binder": "rfd3",
	}
	if len(c.Protocols) != len(want) {
		t.Errorf("%d protocols, want %d", len(c.Protocols), len(want))
	}
	for id, model := range want {
		p, ok := c.Protocol(id)
		if !ok {
			t.Errorf("Protocol(%q) not found", id)
			continue
		}
		requires := []string{"spec"}
		if model == "rfd3" {
			requires = []string{"structure", "contig"}
		}
		if p.Model != model || !slices.Equal(p.Requires, requires) || p.Description == "" {
			t.Errorf("%s = %+v; want model %s, requires %v and a description", id, p, model, requires)
		}
	}
	if _, ok := c.Protocol("rfd3"); ok {
		t.Error("Protocol(rfd3) found; rfd3 is a model")
	}
}

func TestDefaultLimits(t *testing.T) {
	t.Parallel()
	got := DefaultLimits()
	want := Limits{
		ResidueCeiling: 1024, ChainsPerComplex: 20, LigandsPerComplex: 20, ConstraintsPerComplex: 50,
		TargetsPerJob: 100, MaxContentChars: 1_000_000, StructureChars: 700_000,
		EmbedSequences: 50, EmbedResidues: 2000, RequestBytes: 8 << 20,
		ActiveJobsPerOwner: 16, CreatesPerMinute: 60, QueuedJobs: 1000, RetainedJobs: 1000,
		ListDefault: 20, ListMax: 100, WaitDefaultSeconds: 25, WaitMaxSeconds: 60,
		BoltzGenDesigns: 1000, RFD3Designs: 100, NameChars: 256, ConnectionsPerClient: 64, HeldWaitsPerClient: 16,
		PredictRuntime: time.Hour, DesignRuntime: 4 * time.Hour, EmbedRuntime: 10 * time.Minute,
		Stall: 15 * time.Minute,
	}
	if got != want {
		t.Errorf("DefaultLimits() =\n%+v\nwant\n%+v", got, want)
	}
	if c := Default(); c.Limits != want {
		t.Errorf("Default().Limits = %+v, want the defaults", c.Limits)
	}
}

func TestNewAppliesLimits(t *testing.T) {
	t.Parallel()
	c := New(Limits{ResidueCeiling: 600, EmbedResidues: 1500, BoltzGenDesigns: 50, RFD3Designs: 8})
	if c.Limits.TargetsPerJob != 100 || c.Limits.Stall != 15*time.Minute {
		t.Errorf("zero limits did not take their defaults: %+v", c.Limits)
	}
	for _, m := range c.Models {
		want := 600
		if m.Kind == job.EmbedKind {
			want = 1500
		}
		if m.MaxResidues != want {
			t.Errorf("%s: max_residues %d under lowered limits, want %d", m.ID, m.MaxResidues, want)
		}
	}
	for model, max := range map[string]float64{"boltzgen": 50, "rfd3": 8} {
		m, _ := c.Model(model)
		if p := m.param("num_designs"); *p.Max != max {
			t.Errorf("%s num_designs max %v, want %v", model, *p.Max, max)
		}
	}
	if p, _ := c.Model("boltzgen"); *p.param("budget").Max != 50 {
		t.Errorf("boltzgen budget max %v, want 50", *p.param("budget").Max)
	}
	// Raising the ceiling does not raise a model above its own value.
	if m, _ := New(Limits{ResidueCeiling: 4096}).Model("boltz2"); m.MaxResidues != 1024 {
		t.Errorf("boltz2 max_residues %d under a 4096 ceiling, want its own 1024", m.MaxResidues)
	}
}
