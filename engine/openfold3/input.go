package openfold3

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/chaperone-bio/chaperone/bio"
)

// OpenFold3's query JSON (inference_query_format.py: InferenceQuerySet, Query, Chain). A
// chain forbids keys it does not know; the MSA switches belong to the query, not to the
// chain as the docs show them.
type querySet struct {
	Queries map[string]query `json:"queries"`
}

type query struct {
	Chains []chain `json:"chains"`
	// UseMSAs false folds the query single-sequence; nil leaves upstream's true.
	UseMSAs *bool `json:"use_msas,omitempty"`
}

type chain struct {
	MoleculeType         string            `json:"molecule_type"`
	ChainIDs             []string          `json:"chain_ids"`
	Sequence             string            `json:"sequence,omitempty"`
	SMILES               string            `json:"smiles,omitempty"`
	CCDCodes             []string          `json:"ccd_codes,omitempty"`
	NonCanonicalResidues map[string]string `json:"non_canonical_residues,omitempty"`
	MainMSAFilePaths     []string          `json:"main_msa_file_paths,omitempty"`
	PairedMSAFilePaths   []string          `json:"paired_msa_file_paths,omitempty"`
}

// The alignment files the engine writes (alignments.go says how OpenFold3 reads them).
const (
	mainMSA   = "colabfold_main.a3m"
	pairedMSA = "colabfold_paired.a3m"
)

// alignment is where one protein entity's alignment files are, in the run's files folder.
type alignment struct {
	dir    string // <files>/<target>/e<entity>
	main   bool   // dir holds mainMSA
	paired bool   // dir holds pairedMSA
}

// target is one complex of the job as this engine runs it.
type target struct {
	cx *bio.Complex
	// alignments holds, per entity, its alignment files; nil for a chain without one.
	alignments []*alignment
}

// msa reports whether some chain of the target is folded with an alignment.
func (t *target) msa() bool {
	return slices.ContainsFunc(t.alignments, func(a *alignment) bool { return a != nil })
}

// queryChains are the target's entities as OpenFold3 chains, with their alignment files.
func queryChains(t *target) []chain {
	var out []chain
	for i, e := range t.cx.Entities {
		c := chain{MoleculeType: string(e.Kind), ChainIDs: e.IDs}
		switch {
		case e.Kind.Polymer():
			c.Sequence = e.Sequence
		case e.SMILES != "":
			c.SMILES = e.SMILES
		default:
			c.CCDCodes = e.CCD
		}
		if len(e.Modifications) > 0 {
			c.NonCanonicalResidues = map[string]string{}
			for _, m := range e.Modifications {
				c.NonCanonicalResidues[strconv.Itoa(m.Position)] = m.CCD
			}
		}
		if a := t.alignments[i]; a != nil {
			if a.main {
				c.MainMSAFilePaths = []string{filepath.Join(a.dir, mainMSA)}
			}
			if a.paired {
				c.PairedMSAFilePaths = []string{filepath.Join(a.dir, pairedMSA)}
			}
		}
		out = append(out, c)
	}
	return out
}

// writeQuerySet writes the query JSON of every target to path.
func writeQuerySet(path string, targets []*target) error {
	qs := querySet{Queries: map[string]query{}}
	for _, t := range targets {
		q := query{Chains: queryChains(t)}
		if !t.msa() {
			off := false
			q.UseMSAs = &off
		}
		qs.Queries[t.cx.Name] = q
	}
	return writeJSON(path, qs)
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// entityDir is the folder of one entity's alignments; its name tells OpenFold3 which
// chains share them.
func entityDir(files, target string, entity int) string {
	return filepath.Join(files, target, "e"+strconv.Itoa(entity+1))
}

// a3m writes an A3M as OpenFold3's parser reads it: every sequence on one line after its
// own '>' header, without comment or blank lines.
func a3m(text string) string {
	var b strings.Builder
	header := ""
	n := 0
	for line := range strings.Lines(text) {
		l := strings.TrimSpace(line)
		switch {
		case l == "" || l[0] == '#':
		case l[0] == '>':
			header = l
		default:
			n++
			if header == "" {
				header = fmt.Sprintf(">sequence_%d", n)
			}
			fmt.Fprintf(&b, "%s\n%s\n", header, l)
			header = ""
		}
	}
	return b.String()
}

// csvRow is one row of Boltz's alignment CSV.
type csvRow struct {
	key   int
	keyed bool
	seq   string
}

// csvRows reads an alignment CSV that bio has checked. Key -1 is no key, as Boltz reads it
// (boltz 2.2.1 data/parse/csv.py:50-53 takes a missing key as taxonomy -1, and
// data/feature/featurizerv2.py:307 pairs only rows whose taxonomy is not -1): its own
// compute_msa writes -1 on every unpaired row.
func csvRows(text string) []csvRow {
	var rows []csvRow
	keyCol := -1
	for line := range strings.Lines(text) {
		t := strings.TrimSpace(line)
		if t == "" {
			continue
		}
		fields := strings.Split(t, ",")
		if keyCol < 0 {
			keyCol = 0
			if fields[0] == "sequence" {
				keyCol = 1
			}
			continue
		}
		r := csvRow{seq: fields[1-keyCol]}
		if k, err := strconv.Atoi(fields[keyCol]); err == nil && k != -1 {
			r.key, r.keyed = k, true
		}
		rows = append(rows, r)
	}
	return rows
}

// splitCSV turns one chain's CSV rows into its main and, given the keys paired across
// chains, its paired A3M. The query comes first in each.
func splitCSV(query string, rows []csvRow, keys []int) (main, paired string) {
	var m, p strings.Builder
	fmt.Fprintf(&m, ">query\n%s\n", query)
	byKey := map[int]string{}
	for i, r := range rows {
		if i == 0 && r.seq == query {
			continue
		}
		if len(keys) > 0 && r.keyed {
			if _, dup := byKey[r.key]; !dup {
				byKey[r.key] = r.seq
			}
			continue
		}
		fmt.Fprintf(&m, ">row_%d\n%s\n", i+1, r.seq)
	}
	if len(keys) == 0 {
		return m.String(), ""
	}
	fmt.Fprintf(&p, ">query\n%s\n", query)
	for _, k := range keys {
		seq, ok := byKey[k]
		if !ok {
			seq = strings.Repeat("-", len(query))
		}
		fmt.Fprintf(&p, ">key_%d\n%s\n", k, seq)
	}
	return m.String(), p.String()
}

// runnerYAML is the runner YAML of a predict run (InferenceExperimentConfig of
// entry_points/validator.py). Steps the caller left out stay OpenFold3's own (3 recycles,
// 200 sampling steps). The PAE head, which gives ptm, iptm and sample_ranking_score, is on
// in OpenFold3's model config (model_config.py:47, pae_head_enabled) since 0.4, which
// dropped the pae_enabled preset (project_entry.py:36-45).
type runnerYAML struct {
	output string // experiment_settings.output_dir
	seed   int    // experiment_settings.seeds, the one seed of the run
	// msaDir is msa_computation_settings.msa_output_directory, where OpenFold3 writes a
	// query-only alignment for a protein chain without files (colabfold_msa_server.py:
	// 1379-1435, augment_main_msa_with_query_sequence).
	msaDir         string
	format         string // cif or pdb
	gpu            bool   // pl_trainer_args.accelerator gpu, else cpu
	recycles       *int
	samplingSteps  *int
	kernels        bool // DeepSpeed evo attention and Triton kernels (upstream's defaults)
	cuEquivariance bool // cuEquivariance triangle kernels
}

// seed is OpenFold3's default model seed, for a job stored before the catalog filled in its
// seed param; the seed is always written out, so that a rerun gives the same structures.
const seed = 42

func (r runnerYAML) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "experiment_settings:\n  mode: predict\n  output_dir: %s\n  seeds: [%d]\n", q(r.output), r.seed)
	b.WriteString("  use_msa_server: false\n  use_templates: false\n")
	b.WriteString("model_update:\n  presets: [predict]\n  custom:\n")
	if r.recycles != nil || r.samplingSteps != nil {
		b.WriteString("    architecture:\n      shared:\n")
		if r.recycles != nil {
			fmt.Fprintf(&b, "        num_recycles: %d\n", *r.recycles)
		}
		if r.samplingSteps != nil {
			fmt.Fprintf(&b, "        diffusion:\n          no_full_rollout_steps: %d\n", *r.samplingSteps)
		}
	}
	fmt.Fprintf(&b, "    settings:\n      memory:\n        eval:\n          use_deepspeed_evo_attention: %t\n"+
		"          use_cueq_triangle_kernels: %t\n", r.kernels, r.cuEquivariance)
	if !r.kernels {
		// OpenFold3's eval default runs the triangle updates on Triton kernels
		// (model_config.py:119), which need a GPU: on the CPU every query fails "0 active
		// drivers". Plain PyTorch kernels go without them.
		b.WriteString("          use_triton_triangle_kernels: false\n")
	}
	accelerator := "gpu"
	if !r.gpu {
		accelerator = "cpu"
	}
	fmt.Fprintf(&b, "output_writer_settings:\n  structure_format: %s\n  full_confidence_output_format: json\n", r.format)
	fmt.Fprintf(&b, "pl_trainer_args:\n  accelerator: %s\n  devices: 1\n", accelerator)
	if !r.gpu {
		// Featurising in the main process: the data loader's 10 workers (validator.py:112)
		// each start their own Python and torch (forkserver, data_module.py:188-200), minutes
		// of a CPU worker's time with no GPU to keep busy.
		b.WriteString("data_module_args:\n  num_workers: 0\n")
	}
	fmt.Fprintf(&b, "msa_computation_settings:\n  msa_output_directory: %s\n  cleanup_msa_dir: false\n", q(r.msaDir))
	return b.String()
}

// q quotes a string as a YAML double-quoted scalar, which JSON's string syntax is.
func q(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
