package catalog

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/chaperone-bio/chaperone/job"
)

// small is a catalog with tiny caps, so that tests can cross every cap with short inputs.
func small() *Catalog {
	return New(Limits{
		ResidueCeiling: 40, MaxContentChars: 60, StructureChars: 300, TargetsPerJob: 3,
		EmbedSequences: 3, EmbedResidues: 30, BoltzGenDesigns: 20, RFD3Designs: 6, NameChars: 10,
	})
}

func predict(c *Catalog, body string) (*job.Job, error) {
	var r PredictRequest
	if err := Decode([]byte(body), &r); err != nil {
		return nil, err
	}
	return c.NewPredict(&r)
}

func design(c *Catalog, body string) (*job.Job, error) {
	var r DesignRequest
	if err := Decode([]byte(body), &r); err != nil {
		return nil, err
	}
	return c.NewDesign(&r)
}

func embed(c *Catalog, body string) (*job.Job, error) {
	var r EmbedRequest
	if err := Decode([]byte(body), &r); err != nil {
		return nil, err
	}
	return c.NewEmbed(&r)
}

// structureText is a small mmCIF structure: protein chain A (residues 1-12) and DNA chain
// B (1-4).
var structureText = func() string {
	var b strings.Builder
	b.WriteString("data_x\nloop_\n_atom_site.label_comp_id\n_atom_site.auth_asym_id\n_atom_site.auth_seq_id\n")
	for i := 1; i <= 12; i++ {
		fmt.Fprintf(&b, "ALA A %d\n", i)
	}
	for i, n := range []string{"DA", "DC", "DG", "DT"} {
		fmt.Fprintf(&b, "%s B %d\n", n, i+1)
	}
	return b.String()
}()

// jsonText is s as a JSON string.
func jsonText(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestNewPredictJob(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
		want job.Job
	}{
		{
			name: "a bare sequence runs boltz2 with every default filled in",
			body: `{"sequence": "mkt ayi\nak", "name": "mine"}`,
			want: job.Job{
				Kind: job.PredictKind, Name: "mine", Model: "boltz2", RunModel: "boltz2", Total: 1,
				Input:    job.Input{Sequence: "MKTAYIAK"},
				Searches: []job.Search{{Chains: []string{"MKTAYIAK"}, Target: 1}},
				Params:   map[string]any{"use_msa_server": true, "fast": true, "diffusion_samples": 1, "output_format": "cif", "seed": 0, "write_pae": false},
			},
		},
		{
			name: "esmfold2 folds single-sequence by default",
			body: `{"model": "esmfold2", "input": ">a\nMK"}`,
			want: job.Job{
				Kind: job.PredictKind, Model: "esmfold2", RunModel: "esmfold2", Total: 1,
				Input:  job.Input{Input: ">a\nMK"},
				Params: map[string]any{"use_msa_server": false, "fast": true, "diffusion_samples": 1, "output_format": "cif", "seed": 42, "write_pae": false},
			},
		},
		{
			name: "esmfold2-fast accepts use_msa_server false",
			body: `{"model": "esmfold2-fast", "sequence": "MK", "params": {"use_msa_server": false, "fast": false}}`,
			want: job.Job{
				Kind: job.PredictKind, Model: "esmfold2-fast", RunModel: "esmfold2-fast", Total: 1,
				Input:  job.Input{Sequence: "MK"},
				Params: map[string]any{"use_msa_server": false, "fast": false, "diffusion_samples": 1, "output_format": "cif", "seed": 42, "write_pae": false},
			},
		},
		{
			name: "numbers are clamped at both ends and aliases resolved",
			body: `{"model": "protenix-v2", "sequence": "MK", "params": {"recycling_steps": 0, "sampling_steps": 9000,
				"diffusion_samples": -3, "output_format": "mmCIF", "use_msa_server": false}}`,
			want: job.Job{
				Kind: job.PredictKind, Model: "protenix-v2", RunModel: "protenix-v2", Total: 1,
				Input: job.Input{Sequence: "MK"},
				Params: map[string]any{"use_msa_server": false, "fast": true, "recycling_steps": 1,
					"sampling_steps": 500, "diffusion_samples": 1, "output_format": "cif", "seed": 101, "write_pae": false},
			},
		},
		{
			name: "in-range values are kept; integral floats and exponents are integers; null means omitted",
			body: `{"sequence": "MK", "params": {"recycling_steps": 4.0, "sampling_steps": 2e2, "diffusion_samples": 5,
				"output_format": "pdb", "fast": null}}`,
			want: job.Job{
				Kind: job.PredictKind, Model: "boltz2", RunModel: "boltz2", Total: 1,
				Input:    job.Input{Sequence: "MK"},
				Searches: []job.Search{{Chains: []string{"MK"}, Target: 1}},
				Params: map[string]any{"use_msa_server": true, "fast": true, "recycling_steps": 4,
					"sampling_steps": 200, "diffusion_samples": 5, "output_format": "pdb", "seed": 0, "write_pae": false},
			},
		},
		{
			name: "a seed is kept, clamped into range, and a PAE matrix asked for",
			body: `{"model": "protenix-v2", "sequence": "MK", "params": {"seed": -5, "write_pae": true}}`,
			want: job.Job{
				Kind: job.PredictKind, Model: "protenix-v2", RunModel: "protenix-v2", Total: 1,
				Input:    job.Input{Sequence: "MK"},
				Searches: []job.Search{{Chains: []string{"MK"}, Target: 1}},
				Params: map[string]any{"use_msa_server": true, "fast": true, "diffusion_samples": 1, "output_format": "cif",
					"seed": 0, "write_pae": true},
			},
		},
		{
			name: "huge numbers clamp",
			body: `{"sequence": "MK", "params": {"sampling_steps": 1e400}}`,
			want: job.Job{
				Kind: job.PredictKind, Model: "boltz2", RunModel: "boltz2", Total: 1,
				Input:    job.Input{Sequence: "MK"},
				Searches: []job.Search{{Chains: []string{"MK"}, Target: 1}},
				Params: map[string]any{"use_msa_server": true, "fast": true, "sampling_steps": 500,
					"diffusion_samples": 1, "output_format": "cif", "seed": 0, "write_pae": false},
			},
		},
		{
			name: "targets keep their names; missing ones are named by position",
			body: `{"model": "openfold3", "targets": [{"content": ">a\nMK"}, {"name": "Lys-1.b_2", "content": "sequences: [{protein: {id: A, sequence: MK}}]"}, {"content": ">b\nGG"}]}`,
			want: job.Job{
				Kind: job.PredictKind, Model: "openfold3", RunModel: "openfold3", Total: 3,
				Input: job.Input{Targets: []job.Target{
					{Name: "target_1", Content: ">a\nMK"}, {Name: "Lys-1.b_2", Content: "sequences: [{protein: {id: A, sequence: MK}}]"}, {Name: "target_3", Content: ">b\nGG"},
				}},
				Searches: []job.Search{{Chains: []string{"MK"}, Target: 1}, {Chains: []string{"GG"}, Target: 3}},
				Params:   map[string]any{"use_msa_server": true, "fast": true, "diffusion_samples": 1, "output_format": "cif", "seed": 42, "write_pae": false},
			},
		},
		{
			name: "a caller may give the name its position would get",
			body: `{"targets": [{"name": "target_1", "content": ">x\nMK"}, {"content": ">y\nMK"}]}`,
			want: job.Job{
				Kind: job.PredictKind, Model: "boltz2", RunModel: "boltz2", Total: 2,
				Input:    job.Input{Targets: []job.Target{{Name: "target_1", Content: ">x\nMK"}, {Name: "target_2", Content: ">y\nMK"}}},
				Searches: []job.Search{{Chains: []string{"MK"}, Target: 1}},
				Params:   map[string]any{"use_msa_server": true, "fast": true, "diffusion_samples": 1, "output_format": "cif", "seed": 0, "write_pae": false},
			},
		},
		{
			name: "a sequence at the model's ceiling",
			body: `{"sequence": "` + strings.Repeat("A", 40) + `"}`,
			want: job.Job{
				Kind: job.PredictKind, Model: "boltz2", RunModel: "boltz2", Total: 1,
				Input:    job.Input{Sequence: strings.Repeat("A", 40)},
				Searches: []job.Search{{Chains: []string{strings.Repeat("A", 40)}, Target: 1}},
				Params:   map[string]any{"use_msa_server": true, "fast": true, "diffusion_samples": 1, "output_format": "cif", "seed": 0, "write_pae": false},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := predict(small(), tt.body)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*got, tt.want) {
				t.Errorf("job =\n%+v\nwant\n%+v", *got, tt.want)
			}
		})
	}
}

func TestNewPredictSearches(t *testing.T) {
	t.Parallel()
	const yaml = "sequences:\n- protein: {id: [A, B], sequence: MKV}\n- protein: {id: C, sequence: GGS, msa: empty}\n" +
		"- ligand: {id: L, ccd: ATP}\n- protein: {id: D, sequence: WWY}\n- protein: {id: E, sequence: MKV}\n"
	tests := []struct {
		name string
		body string
		want []job.Search
	}{
		{"a target's protein chains with no alignment of their own, every copy, in order",
			`{"input": ` + jsonText(yaml) + `}`, []job.Search{{Chains: []string{"MKV", "MKV", "WWY", "MKV"}, Target: 1}}},
		{"one search per target that has chains to search, named by its number",
			`{"targets": [{"content": ">a\nMKV"}, {"content": "sequences: [{protein: {id: A, sequence: GG, msa: empty}}]"}, {"content": ">b\nWWY"}]}`,
			[]job.Search{{Chains: []string{"MKV"}, Target: 1}, {Chains: []string{"WWY"}, Target: 3}}},
		{"targets of the same chains in the same order share the first one's search",
			`{"targets": [{"content": ">a\nMKV\n>b\nWWY"}, {"content": ">c\nWWY\n>d\nMKV"}, {"content": ">e\nMKV\n>f\nWWY"}]}`,
			[]job.Search{{Chains: []string{"MKV", "WWY"}, Target: 1}, {Chains: []string{"WWY", "MKV"}, Target: 2}}},
		{"none with use_msa_server off", `{"input": ` + jsonText(yaml) + `, "params": {"use_msa_server": false}}`, nil},
		{"none for a model that folds single-sequence by default", `{"model": "esmfold2", "sequence": "MKV"}`, nil},
		{"esmfold2 searches when asked", `{"model": "esmfold2", "sequence": "MKV", "params": {"use_msa_server": true}}`,
			[]job.Search{{Chains: []string{"MKV"}, Target: 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := predict(Default(), tt.body)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Searches, tt.want) {
				t.Errorf("searches = %+v, want %+v", got.Searches, tt.want)
			}
		})
	}
}

func TestNewPredictRejects(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("A", 61)
	tests := []struct {
		name   string
		body   string
		field  string
		reason string
	}{
		{"unknown model lists the prediction models", `{"model": "alphafold3", "sequence": "MK"}`, "model",
			`unknown prediction model "alphafold3"; valid prediction models are boltz2, esmfold2, esmfold2-fast, protenix-v2, openfold3, opendde, opendde-abag`},
		{"an embedding model is not a prediction model", `{"model": "esmc-600m", "sequence": "MK"}`, "model", "unknown prediction model"},
		{"no input", `{"model": "boltz2"}`, "", "provide exactly one of sequence, input, targets; none was given"},
		{"sequence and input", `{"sequence": "MK", "input": ">a\nMK"}`, "", "got sequence and input"},
		{"sequence and targets", `{"sequence": "MK", "targets": [{"content": "x"}]}`, "", "got sequence and targets"},
		{"input and targets", `{"input": "x", "targets": []}`, "", "got input and targets"},
		{"an empty field still counts as given", `{"sequence": "", "input": "x"}`, "", "got sequence and input"},
		{"empty sequence", `{"sequence": ""}`, "sequence", "must not be empty"},
		{"blank input", `{"input": " \n "}`, "input", "must not be empty"},
		{"empty targets", `{"targets": []}`, "targets", "must hold at least one target"},
		{"empty target content", `{"targets": [{"content": "x"}, {"content": ""}]}`, "targets[1].content", "must not be empty"},
		{"not a protein letter", `{"sequence": "MKJT"}`, "sequence", `position 3: 'J' is not an amino-acid letter`},
		{"over the model's ceiling", `{"model": "opendde", "sequence": "` + strings.Repeat("A", 41) + `"}`, "sequence",
			"has 41 residues; opendde takes at most 40 (max_residues)"},
		{"sequence over the character cap", `{"sequence": "` + long + `"}`, "sequence", "is 61 characters, over the cap of 60 (max_content_chars)"},
		{"input over the character cap", `{"input": "` + long + `"}`, "input", "is 61 characters, over the cap of 60 (max_content_chars)"},
		{"characters, not bytes", `{"input": "` + strings.Repeat("é", 61) + `"}`, "input", "is 61 characters"},
		{"target content over the cap", `{"targets": [{"content": "` + long + `"}]}`, "targets[0].content", "over the cap of 60"},
		{"too many targets", `{"targets": [{"content": "a"}, {"content": "b"}, {"content": "c"}, {"content": "d"}]}`, "targets",
			"holds 4 targets, over the cap of 3 (targets_per_job)"},
		{"duplicate target names ignore case", `{"targets": [{"name": "a", "content": "x"}, {"name": "A", "content": "y"}]}`,
			"targets[1].name", `"A" is also the name of targets[0]`},
		{"derived name taken", `{"targets": [{"content": "x"}, {"name": "target_1", "content": "y"}]}`,
			"targets[0].name", `is missing, and the default "target_1" is already the name of targets[1]`},
		{"target name with a slash", `{"targets": [{"name": "../etc", "content": "x"}]}`, "targets[0].name", "must start with a letter or digit"},
		{"target name with a space", `{"targets": [{"name": "my target", "content": "x"}]}`, "targets[0].name", "may hold only letters, digits"},
		{"target name too long", `{"targets": [{"name": "` + strings.Repeat("a", 65) + `", "content": "x"}]}`, "targets[0].name", "names are at most 64"},
		{"job name over its cap", `{"name": "eleven-char", "sequence": "MK"}`, "name", "is 11 characters, over the cap of 10 (name_chars)"},
		{"unknown param lists the model's params", `{"sequence": "MK", "params": {"recycles": 3}}`, "params.recycles",
			"unknown param for boltz2; valid params are use_msa_server, fast, recycling_steps, sampling_steps, diffusion_samples, output_format, seed, write_pae"},
		{"design params are not prediction params", `{"sequence": "MK", "params": {"num_designs": 3}}`, "params.num_designs", "unknown param"},
		{"boolean as a string", `{"sequence": "MK", "params": {"fast": "true"}}`, "params.fast", "must be true or false, not a string"},
		{"boolean as a number", `{"sequence": "MK", "params": {"use_msa_server": 1}}`, "params.use_msa_server", "must be true or false, not a number"},
		{"integer as a string", `{"sequence": "MK", "params": {"sampling_steps": "50"}}`, "params.sampling_steps", "must be an integer, not a string"},
		{"fractional integer", `{"sequence": "MK", "params": {"diffusion_samples": 2.5}}`, "params.diffusion_samples", "must be an integer, not 2.5"},
		{"enum outside its values", `{"sequence": "MK", "params": {"output_format": "sdf"}}`, "params.output_format",
			`must be one of cif, pdb (mmcif is accepted as cif), not "sdf"`},
		{"enum of the wrong type", `{"sequence": "MK", "params": {"output_format": 1}}`, "params.output_format", "must be a string, not a number"},
		{"MSA on a single-sequence model names both", `{"model": "esmfold2-fast", "sequence": "MK", "params": {"use_msa_server": true}}`,
			"params.use_msa_server", "esmfold2-fast is single-sequence only and cannot use an MSA server"},
		{"a PAE matrix from a model that writes none names both", `{"model": "openfold3", "sequence": "MK", "params": {"write_pae": true}}`,
			"params.write_pae", "openfold3 writes no PAE matrix"},
		{"a fractional seed", `{"sequence": "MK", "params": {"seed": 1.5}}`, "params.seed", "must be an integer, not 1.5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := predict(small(), tt.body)
			if err == nil {
				t.Fatalf("accepted: %+v", got)
			}
			wantInvalid(t, err, tt.field, tt.reason)
		})
	}
}

func TestPredictParamsPerModel(t *testing.T) {
	t.Parallel()
	c := Default()
	for _, id := range c.ModelIDs(job.PredictKind) {
		j, err := c.NewPredict(&PredictRequest{Model: id, Seq: ptrTo("MK")})
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		wantMSA := id != "esmfold2" && id != "esmfold2-fast"
		if j.Params["use_msa_server"] != wantMSA || j.Params["fast"] != true {
			t.Errorf("%s: params %v; want use_msa_server %v and fast on", id, j.Params, wantMSA)
		}
		m, _ := c.Model(id)
		recycles, steps := "10.", "200."
		if id == "boltz2" || id == "openfold3" {
			recycles = "3."
		}
		if strings.HasPrefix(id, "esmfold2") {
			steps = "100."
		}
		if d := m.param("recycling_steps").Description; !strings.HasSuffix(d, recycles) {
			t.Errorf("%s: recycling_steps description %q does not name its own %s", id, d, recycles)
		}
		if d := m.param("sampling_steps").Description; !strings.HasSuffix(d, steps) {
			t.Errorf("%s: sampling_steps description %q does not name its own %s", id, d, steps)
		}
	}
}

func TestNewDesignJob(t *testing.T) {
	t.Parallel()
	spec := `"spec": "entities:\n  - protein: {id: B, sequence: 20..30}\n"`
	structure := `"structure": ` + jsonText(structureText)
	tests := []struct {
		name string
		body string
		want job.Job
	}{
		{
			name: "a BoltzGen protocol with defaults",
			body: `{"protocol": "protein-anything", ` + spec + `}`,
			want: job.Job{
				Kind: job.DesignKind, Protocol: "protein-anything", RunModel: "boltzgen", Total: 10,
				Input:  job.Input{Spec: "entities:\n  - protein: {id: B, sequence: 20..30}\n"},
				Params: map[string]any{"num_designs": 10, "budget": 10, "fast": true},
			},
		},
		{
			name: "the matching model may be named; budget is clamped down to num_designs",
			body: `{"protocol": "nanobody-anything", "model": "boltzgen", "name": "nb", ` + spec + `, "params": {"num_designs": 4, "budget": 9}}`,
			want: job.Job{
				Kind: job.DesignKind, Name: "nb", Protocol: "nanobody-anything", RunModel: "boltzgen", Total: 4,
				Input:  job.Input{Spec: "entities:\n  - protein: {id: B, sequence: 20..30}\n"},
				Params: map[string]any{"num_designs": 4, "budget": 4, "fast": true},
			},
		},
		{
			name: "the default budget is clamped down to a smaller num_designs",
			body: `{"protocol": "peptide-anything", ` + spec + `, "params": {"num_designs": 3, "fast": false}}`,
			want: job.Job{
				Kind: job.DesignKind, Protocol: "peptide-anything", RunModel: "boltzgen", Total: 3,
				Input:  job.Input{Spec: "entities:\n  - protein: {id: B, sequence: 20..30}\n"},
				Params: map[string]any{"num_designs": 3, "budget": 3, "fast": false},
			},
		},
		{
			name: "BoltzGen numbers clamp to the configured cap",
			body: `{"protocol": "protein-redesign", ` + spec + `, "params": {"num_designs": 5000, "budget": 0}}`,
			want: job.Job{
				Kind: job.DesignKind, Protocol: "protein-redesign", RunModel: "boltzgen", Total: 20,
				Input:  job.Input{Spec: "entities:\n  - protein: {id: B, sequence: 20..30}\n"},
				Params: map[string]any{"num_designs": 20, "budget": 1, "fast": true},
			},
		},
		{
			name: "an rfd3 protocol with defaults",
			body: `{"protocol": "rfd3-binder", ` + structure + `, "contig": " A1-10,/0,5-20 "}`,
			want: job.Job{
				Kind: job.DesignKind, Protocol: "rfd3-binder", RunModel: "rfd3", Total: 4,
				Input:  job.Input{Structure: structureText, Contig: "A1-10,/0,5-20"},
				Params: map[string]any{"num_designs": 4, "num_timesteps": 100, "seed": 42},
			},
		},
		{
			name: "rfd3 numbers clamp at both ends",
			body: `{"protocol": "rfd3-scaffold", ` + structure + `, "contig": "A1-5,30",
				"params": {"num_designs": 0, "num_timesteps": 1000, "seed": -1}}`,
			want: job.Job{
				Kind: job.DesignKind, Protocol: "rfd3-scaffold", RunModel: "rfd3", Total: 1,
				Input:  job.Input{Structure: structureText, Contig: "A1-5,30"},
				Params: map[string]any{"num_designs": 1, "num_timesteps": 200, "seed": 0},
			},
		},
		{
			name: "rfd3 upper clamps and lower timesteps",
			body: `{"protocol": "rfd3-na-binder", ` + structure + `, "contig": "B1-B4,/0,25",
				"params": {"num_designs": 99, "num_timesteps": 1, "seed": 3000000000}}`,
			want: job.Job{
				Kind: job.DesignKind, Protocol: "rfd3-na-binder", RunModel: "rfd3", Total: 6,
				Input:  job.Input{Structure: structureText, Contig: "B1-4,/0,25"},
				Params: map[string]any{"num_designs": 6, "num_timesteps": 4, "seed": 2147483647},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := design(small(), tt.body)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*got, tt.want) {
				t.Errorf("job =\n%+v\nwant\n%+v", *got, tt.want)
			}
		})
	}
}

func TestNewDesignRejects(t *testing.T) {
	t.Parallel()
	s := `"structure": ` + jsonText(structureText)
	const spec = `"spec": "entities:\n  - protein: {id: B, sequence: 20..30}\n"`
	tests := []struct {
		name   string
		body   string
		field  string
		reason string
	}{
		{"protocol is required", `{"spec": "x"}`, "protocol", "is required; valid protocols are protein-anything, peptide-anything, " +
			"nanobody-anything, antibody-anything, protein-small_molecule, protein-redesign, rfd3-binder, rfd3-scaffold, rfd3-na-binder"},
		{"unknown protocol lists the valid ones", `{"protocol": "binder", "spec": "x"}`, "protocol", `unknown protocol "binder"; valid protocols are protein-anything,`},
		{"model must match the protocol", `{"protocol": "rfd3-binder", "model": "boltzgen", ` + s + `, "contig": "10"}`, "model",
			"protocol rfd3-binder runs on rfd3, not boltzgen; omit model or send rfd3"},
		{"model must match the protocol, the other way", `{"protocol": "protein-anything", "model": "rfd3", "spec": "x"}`, "model",
			"protocol protein-anything runs on boltzgen, not rfd3"},
		{"a prediction model is not a design model", `{"protocol": "protein-anything", "model": "boltz2", "spec": "x"}`, "model",
			`unknown design model "boltz2"; valid design models are boltzgen, rfd3`},
		{"spec is required for BoltzGen", `{"protocol": "antibody-anything"}`, "spec", "is required by protocol antibody-anything, which takes spec"},
		{"structure is required for rfd3", `{"protocol": "rfd3-binder", "contig": "10"}`, "structure", "is required by protocol rfd3-binder, which takes structure and contig"},
		{"contig is required for rfd3", `{"protocol": "rfd3-binder", ` + s + `}`, "contig", "is required by protocol rfd3-binder"},
		{"a structure the BoltzGen spec does not name", `{"protocol": "protein-anything", ` + spec + `, ` + s + `}`, "spec",
			"a structure was sent, but the spec has no file entity naming it"},
		{"a BoltzGen spec that is no spec", `{"protocol": "protein-anything", "spec": "x"}`, "spec",
			"line 1, column 1: a design spec is a YAML mapping"},
		{"a BoltzGen spec naming a file outside its folder", `{"protocol": "protein-anything", "spec": "entities:\n  - file: {path: ../t.cif}\n"}`,
			"spec", `line 2, column 18: entities[0].file.path "../t.cif" leaves the spec's folder`},
		{"a BoltzGen design over the ceiling", `{"protocol": "protein-anything", "spec": "entities:\n  - protein: {id: B, sequence: 30..41}\n"}`,
			"spec", "describes designs of up to 41 residues; boltzgen designs at most 40 (max_residues)"},
		{"a target whose binder would pass the ceiling", `{"protocol": "nanobody-anything", "spec": "sequences:\n- protein: {id: A, sequence: MK}"}`,
			"spec", "describes designs of up to 132 residues"},
		{"protein-redesign takes no sequences form", `{"protocol": "protein-redesign", "spec": "sequences:\n  - protein: {id: A, sequence: MK}\n"}`,
			"spec", "protocol protein-redesign takes BoltzGen's entities form only"},
		{"a structure that does not read", `{"protocol": "rfd3-binder", "contig": "10", "structure": "ATOM      1  N   ALA A   X \n"}`,
			"structure", `line 1, column 23: residue number "X" is not a number`},
		{"a contig residue the structure lacks", `{"protocol": "rfd3-binder", ` + s + `, "contig": "A1-13,5"}`, "contig",
			"segment 1 A1-13: chain A has no residue 13; its residues are 1-12"},
		{"a contig chain the structure lacks", `{"protocol": "rfd3-binder", ` + s + `, "contig": "C1-3,5"}`, "contig",
			"segment 1 C1-3: the structure has no chain C; its chains are A (protein, residues 1-12), B (dna, residues 1-4)"},
		{"a nucleic-acid binder against protein only", `{"protocol": "rfd3-na-binder", ` + s + `, "contig": "A1-5,/0,20"}`, "contig",
			"keeps no residue of a DNA or RNA chain"},
		{"a binder against nothing", `{"protocol": "rfd3-binder", ` + s + `, "contig": "20"}`, "contig",
			"keeps no residue of the structure, so rfd3-binder has no target"},
		{"contig is not for BoltzGen", `{"protocol": "protein-anything", "spec": "x", "contig": "10"}`, "contig", "is not used by protocol protein-anything"},
		{"spec is not for rfd3", `{"protocol": "rfd3-scaffold", "spec": "x", ` + s + `, "contig": "10"}`, "spec",
			"is not used by protocol rfd3-scaffold, which takes structure and contig"},
		{"empty spec", `{"protocol": "protein-anything", "spec": ""}`, "spec", "must not be empty"},
		{"spec over the cap", `{"protocol": "protein-anything", "spec": "` + strings.Repeat("x", 61) + `"}`, "spec", "is 61 characters, over the cap of 60 (max_content_chars)"},
		{"structure over its own cap", `{"protocol": "rfd3-binder", "contig": "10", "structure": "` + strings.Repeat("x", 301) + `"}`,
			"structure", "is 301 characters, over the cap of 300 (structure_chars)"},
		{"structure that is not PDB or mmCIF", `{"protocol": "rfd3-binder", "contig": "10", "structure": ">a\nMKT"}`,
			"structure", "must be PDB text (ATOM or HETATM records) or mmCIF text"},
		{"empty contig", `{"protocol": "rfd3-binder", ` + s + `, "contig": " "}`, "contig", "must not be empty"},
		{"contig syntax", `{"protocol": "rfd3-binder", ` + s + `, "contig": "A1-10,B"}`, "contig", `segment 2 "B"`},
		{"contig range backwards", `{"protocol": "rfd3-binder", ` + s + `, "contig": "A1-10,80-60"}`, "contig", "minimum length 80 is above maximum 60"},
		{"contig with nothing to design", `{"protocol": "rfd3-binder", ` + s + `, "contig": "A1-10"}`, "contig", "has no designed segment"},
		{"contig over the ceiling", `{"protocol": "rfd3-binder", ` + s + `, "contig": "A1-12,5-29"}`, "contig",
			"describes up to 41 residues; rfd3 designs at most 40 (max_residues)"},
		{"unknown param", `{"protocol": "rfd3-binder", ` + s + `, "contig": "A1-2,10", "params": {"budget": 2}}`, "params.budget",
			"unknown param for rfd3; valid params are num_designs, num_timesteps, seed"},
		{"BoltzGen takes no seed, and says why", `{"protocol": "protein-anything", ` + spec + `, "params": {"seed": 0}}`, "params.seed",
			"boltzgen takes no seed: BoltzGen offers no seed (its command line has no seed option"},
		{"wrong param type", `{"protocol": "protein-anything", ` + spec + `, "params": {"num_designs": "10"}}`, "params.num_designs", "must be an integer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := design(small(), tt.body)
			if err == nil {
				t.Fatalf("accepted: %+v", got)
			}
			wantInvalid(t, err, tt.field, tt.reason)
		})
	}
}

func TestNewEmbedJob(t *testing.T) {
	t.Parallel()
	defaults := map[string]any{"pool": "mean", "format": "npz", "fast": false}
	tests := []struct {
		name string
		body string
		want job.Job
	}{
		{
			name: "a bare sequence runs esmc-600m as seq1",
			body: `{"sequence": "mk ta"}`,
			want: job.Job{
				Kind: job.EmbedKind, Model: "esmc-600m", RunModel: "esmc-600m", Total: 1,
				Input: job.Input{Sequences: []job.NamedSequence{{ID: "seq1", Sequence: "MKTA"}}}, Params: defaults,
			},
		},
		{
			name: "sequences keep given ids and get positional ones",
			body: `{"model": "saprot-650m", "sequences": ["MK", {"id": "P69905", "sequence": "gg"}, {"sequence": "AA"}],
				"params": {"pool": "CLS", "format": "parquet", "fast": true}}`,
			want: job.Job{
				Kind: job.EmbedKind, Model: "saprot-650m", RunModel: "saprot-650m", Total: 3,
				Input: job.Input{Sequences: []job.NamedSequence{
					{ID: "seq1", Sequence: "MK"}, {ID: "P69905", Sequence: "GG"}, {ID: "seq3", Sequence: "AA"},
				}},
				Params: map[string]any{"pool": "cls", "format": "parquet", "fast": true},
			},
		},
		{
			name: "FASTA input uses the first word of each header",
			body: `{"model": "esmc-6b", "input": ";made by hand\r\n>HBA human alpha\r\nVLSPADK\r\nTNVKAAW\r\n\r\n>b\nmk\n"}`,
			want: job.Job{
				Kind: job.EmbedKind, Model: "esmc-6b", RunModel: "esmc-6b", Total: 2,
				Input: job.Input{Sequences: []job.NamedSequence{
					{ID: "HBA", Sequence: "VLSPADKTNVKAAW"}, {ID: "b", Sequence: "MK"},
				}},
				Params: defaults,
			},
		},
		{
			name: "a sequence at the embedding cap",
			body: `{"model": "esmc-300m", "sequence": "` + strings.Repeat("W", 30) + `"}`,
			want: job.Job{
				Kind: job.EmbedKind, Model: "esmc-300m", RunModel: "esmc-300m", Total: 1,
				Input: job.Input{Sequences: []job.NamedSequence{{ID: "seq1", Sequence: strings.Repeat("W", 30)}}}, Params: defaults,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := embed(small(), tt.body)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*got, tt.want) {
				t.Errorf("job =\n%+v\nwant\n%+v", *got, tt.want)
			}
		})
	}
}

func TestNewEmbedRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		body   string
		field  string
		reason string
	}{
		{"unknown model lists the embedding models", `{"model": "esm2", "sequence": "MK"}`, "model",
			`unknown embedding model "esm2"; valid embedding models are esmc-300m, esmc-600m, esmc-6b, saprot-650m, saprot-1.3b`},
		{"a prediction model is not an embedding model", `{"model": "boltz2", "sequence": "MK"}`, "model", "unknown embedding model"},
		{"no input", `{}`, "", "provide exactly one of sequence, sequences, input; none was given"},
		{"sequence and sequences", `{"sequence": "MK", "sequences": ["MK"]}`, "", "got sequence and sequences"},
		{"sequences and input", `{"sequences": ["MK"], "input": ">a\nMK"}`, "", "got sequences and input"},
		{"empty sequence", `{"sequence": ""}`, "sequence", "must not be empty"},
		{"empty sequences", `{"sequences": []}`, "sequences", "must hold at least one sequence"},
		{"empty item", `{"sequences": ["MK", {"id": "a"}]}`, "sequences[1].sequence", "must not be empty"},
		{"too many sequences", `{"sequences": ["A", "C", "D", "E"]}`, "sequences", "holds 4 sequences, over the cap of 3 (embed_sequences_per_job)"},
		{"too many FASTA records", `{"input": ">a\nA\n>b\nC\n>c\nD\n>d\nE\n"}`, "input", "holds 4 sequences, over the cap of 3"},
		{"sequence over the residue cap", `{"sequence": "` + strings.Repeat("A", 31) + `"}`, "sequence",
			"has 31 residues; esmc-600m takes at most 30 (max_residues)"},
		{"list item over the residue cap", `{"sequences": ["MK", "` + strings.Repeat("A", 31) + `"]}`, "sequences[1].sequence", "has 31 residues"},
		{"bad letter in a list item", `{"sequences": ["MK", "M*"]}`, "sequences[1].sequence", `position 2: '*'`},
		{"bad letter in a FASTA record", `{"input": ">a\nMK\n>b\nM1\n"}`, "input", `record 2 (b): position 2: '1'`},
		{"a letter SaProt's tokenizer does not know", `{"model": "saprot-650m", "sequences": ["MK", "MKX"]}`, "sequences[1].sequence",
			`position 3: 'X' is a letter saprot-650m's tokenizer does not know (it knows ACDEFGHIKLMNPQRSTVWY)`},
		{"an unknown letter in a FASTA record for SaProt", `{"model": "saprot-1.3b", "input": ">a\nMK\n>b\nMBK\n"}`, "input",
			`record 2 (b): position 2: 'B' is a letter saprot-1.3b's tokenizer does not know`},
		{"FASTA syntax names the line", `{"input": "MK\n>a\nMK"}`, "input", "line 1: sequence data before the first '>' header"},
		{"FASTA over the character cap", `{"input": ">a\n` + strings.Repeat("A", 60) + `"}`, "input", "over the cap of 60 (max_content_chars)"},
		{"duplicate ids", `{"sequences": [{"id": "x", "sequence": "A"}, {"id": "X", "sequence": "C"}]}`, "sequences[1].id",
			`"X" is also the name of sequences[0]`},
		{"duplicate FASTA ids", `{"input": ">a\nA\n>a\nC\n"}`, "input", `"a" is also the name of record 1`},
		{"id that is not file-safe", `{"sequences": [{"id": "a/b", "sequence": "A"}]}`, "sequences[0].id", "may hold only letters"},
		{"FASTA id that is not file-safe", `{"input": ">sp|P69905|HBA_HUMAN\nA\n"}`, "input", `"sp|P69905|HBA_HUMAN" may hold only letters`},
		{"derived id taken", `{"sequences": ["A", {"id": "seq1", "sequence": "C"}]}`, "sequences[0].id", `the default "seq1" is already the name of sequences[1]`},
		{"unknown param", `{"sequence": "MK", "params": {"pooling": "mean"}}`, "params.pooling",
			"unknown param for esmc-600m; valid params are pool, format, fast"},
		{"enum outside its values", `{"sequence": "MK", "params": {"format": "csv"}}`, "params.format", `must be one of npz, parquet, not "csv"`},
		{"fast as a string", `{"sequence": "MK", "params": {"fast": "false"}}`, "params.fast", "must be true or false"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := embed(small(), tt.body)
			if err == nil {
				t.Fatalf("accepted: %+v", got)
			}
			wantInvalid(t, err, tt.field, tt.reason)
		})
	}
}

func ptrTo[T any](v T) *T { return &v }

func TestDecodeDesignNamesAnUnknownProtocolFirst(t *testing.T) {
	t.Parallel()
	_, err := Default().DecodeDesign([]byte(`{"protocol": "pxdesign-binder", "structure": "x", "chains": "A", "binder_length": 80}`))
	wantInvalid(t, err, "protocol", `unknown protocol "pxdesign-binder"; valid protocols are protein-anything`)
	_, err = Default().DecodeDesign([]byte(`{"protocol": "rfd3-binder", "chains": "A"}`))
	wantInvalid(t, err, "chains", "unknown field")
}
