// Command run_openfold is a stand-in for OpenFold3's command line, a test fixture of
// package openfold3test (see there for the behaviours that query names choose). It
// follows openfold3/run_openfold.py, entry_points/validator.py,
// projects/of3_all_atom/config/inference_query_format.py, core/runners/writer.py,
// core/utils/callbacks.py and core/data/io/sequence/msa.py of aqlaboratory/openfold-3: the
// click options and click's errors, the pydantic models' refusal of unknown keys, how
// precomputed alignments are found and read (msa.go), the messages that matter to a
// caller, and the output layout, file names and JSON keys. It refuses to search
// alignments on a server, which a test machine cannot reach. Its numbers are made up,
// deterministically from each query's name.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/chaperone-bio/chaperone/internal/standin"
)

func main() { standin.Main(run) }

// commands are run_openfold's click commands.
var commands = map[string]*standin.Command{
	"predict": {
		Usage: "run_openfold predict [OPTIONS]",
		Try:   "run_openfold predict --help",
		Options: []standin.Option{
			{Name: "--query_json", Kind: standin.ExistingFile, Required: true},
			{Name: "--inference_ckpt_path", Kind: standin.ExistingFile},
			{Name: "--num_diffusion_samples", Kind: standin.Int},
			{Name: "--num_model_seeds", Kind: standin.Int},
			{Name: "--runner_yaml", Kind: standin.ExistingFile},
			{Name: "--use_msa_server", Kind: standin.Bool},
			{Name: "--use_templates", Kind: standin.Bool},
			{Name: "--output_dir", Kind: standin.Path},
		},
	},
	"train": {
		Usage: "run_openfold train [OPTIONS]",
		Try:   "run_openfold train --help",
		Options: []standin.Option{
			{Name: "--runner_yaml", Kind: standin.ExistingFile, Required: true},
			{Name: "--seed", Kind: standin.Int},
			{Name: "--data_seed", Kind: standin.Int},
		},
	},
}

func run(args []string) int {
	if len(args) == 0 || args[0] == "--help" {
		fmt.Print("Usage: run_openfold [OPTIONS] COMMAND [ARGS]...\n\nOptions:\n  --help  Show this message and exit.\n\n" +
			"Commands:\n  predict  Perform inference on a set of queries defined in the query_json.\n" +
			"  train    Perform a training experiment with a preprepared dataset cache.\n")
		return 0
	}
	command, ok := commands[args[0]]
	if !ok {
		return standin.UsageError("run_openfold [OPTIONS] COMMAND [ARGS]...", "run_openfold --help", fmt.Sprintf("No such command '%s'.", args[0]))
	}
	values, _, code := command.Parse(args[1:])
	if values == nil {
		return code
	}
	fmt.Printf("[run_openfold stand-in] %s\n", strings.Join(args, " "))
	if args[0] == "predict" {
		return predict(values)
	}
	traceback("train", "NotImplementedError: the stand-in does not train")
	return 1
}

// runOpenFoldPy is where OpenFold3's tracebacks point.
var runOpenFoldPy = standin.Frame{File: "/opt/openfold3/openfold3/run_openfold.py", Line: 170, Code: "raise"}

// traceback prints a Python traceback ending in err.
func traceback(where, err string) { fmt.Fprint(os.Stderr, runOpenFoldPy.Traceback(where, err)) }

// chain and query are the pydantic models Chain and Query of inference_query_format.py.
type chain struct {
	MoleculeType         string            `json:"molecule_type"`
	ChainIDs             stringList        `json:"chain_ids"`
	Sequence             *string           `json:"sequence"`
	NonCanonicalResidues map[string]string `json:"non_canonical_residues"`
	SMILES               *string           `json:"smiles"`
	CCDCodes             stringList        `json:"ccd_codes"`
	PairedMSAFilePaths   stringList        `json:"paired_msa_file_paths"`
	MainMSAFilePaths     stringList        `json:"main_msa_file_paths"`
	TemplateAlignment    *string           `json:"template_alignment_file_path"`
	TemplateEntryChains  stringList        `json:"template_entry_chain_ids"`
	SDFFilePath          *string           `json:"sdf_file_path"`
}

type query struct {
	QueryName     *string         `json:"query_name"`
	Chains        []chain         `json:"chains"`
	UseMSAs       *bool           `json:"use_msas"`
	UsePairedMSAs *bool           `json:"use_paired_msas"`
	UseMainMSAs   *bool           `json:"use_main_msas"`
	CovalentBonds json.RawMessage `json:"covalent_bonds"`
}

type querySet struct {
	Seeds   []int            `json:"seeds"`
	Queries map[string]query `json:"queries"`
}

// stringList is a list that a single string also fills (_ensure_list).
type stringList []string

func (l *stringList) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		*l = []string{s}
		return nil
	}
	var ss []string
	if err := json.Unmarshal(b, &ss); err != nil {
		return err
	}
	*l = ss
	return nil
}

// readQuerySet reads a query JSON as InferenceQuerySet.from_json does: unknown keys of a
// chain are errors, paths must exist, and a chain's molecule type must be known.
func readQuerySet(path string) (*querySet, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var raw struct {
		Queries map[string]struct {
			Chains []map[string]json.RawMessage `json:"chains"`
		} `json:"queries"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("1 validation error for InferenceQuerySet\n  Invalid JSON: %v", err)
	}
	known := []string{"molecule_type", "chain_ids", "sequence", "non_canonical_residues", "smiles", "ccd_codes",
		"paired_msa_file_paths", "main_msa_file_paths", "template_alignment_file_path", "template_entry_chain_ids", "sdf_file_path"}
	for name, q := range raw.Queries {
		for i, c := range q.Chains {
			for k := range c {
				if !slices.Contains(known, k) {
					return nil, fmt.Errorf("1 validation error for InferenceQuerySet\nqueries.%s.chains.%d.%s\n  Extra inputs are not permitted [type=extra_forbidden]", name, i, k)
				}
			}
		}
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	var qs querySet
	if err := dec.Decode(&qs); err != nil {
		return nil, fmt.Errorf("1 validation error for InferenceQuerySet\n  %v", err)
	}
	for name, q := range qs.Queries {
		for i, c := range q.Chains {
			if !slices.Contains([]string{"PROTEIN", "RNA", "DNA", "LIGAND"}, strings.ToUpper(c.MoleculeType)) {
				return nil, fmt.Errorf("queries.%s.chains.%d.molecule_type: invalid value %q", name, i, c.MoleculeType)
			}
			if len(c.ChainIDs) == 0 {
				return nil, fmt.Errorf("queries.%s.chains.%d.chain_ids: field required", name, i)
			}
			for _, p := range append(slices.Clone(c.MainMSAFilePaths), c.PairedMSAFilePaths...) {
				if _, err := os.Stat(p); err != nil {
					return nil, fmt.Errorf("queries.%s.chains.%d: Path does not point to a file [type=path_not_file, input_value='%s']", name, i, p)
				}
			}
		}
	}
	return &qs, nil
}

// known keys of the runner YAML's sections (InferenceExperimentConfig and its models).
var runnerKeys = map[string][]string{
	"":                         {"experiment_settings", "pl_trainer_args", "model_update", "inference_ckpt_path", "cache_path", "data_module_args", "dataset_config_kwargs", "output_writer_settings", "msa_computation_settings", "template_preprocessor_settings"},
	"experiment_settings":      {"mode", "output_dir", "log_dir", "seeds", "num_seeds", "use_msa_server", "use_templates", "skip_existing"},
	"model_update":             {"presets", "custom"},
	"output_writer_settings":   {"structure_format", "full_confidence_output_format", "write_features", "write_latent_outputs"},
	"msa_computation_settings": {"msa_file_format", "server_user_agent", "server_url", "save_mappings", "msa_output_directory", "cleanup_msa_dir"},
}

// runner is what the stand-in takes from the runner YAML.
type runner struct {
	seeds          []int
	presets        []string
	recycles       int
	steps          int
	format         string
	accelerator    string
	evoAttention   bool
	cuEquivariance bool
	// useMSAServer and useTemplates are experiment_settings' own, nil when the YAML leaves
	// them out.
	useMSAServer, useTemplates *bool
}

func readRunner(path string) (*runner, error) {
	r := &runner{seeds: []int{42}, presets: []string{"predict"}, recycles: 3, steps: 200, format: "cif",
		accelerator: "gpu", evoAttention: true}
	if path == "" {
		return r, nil
	}
	doc, err := standin.ReadYAML(path)
	if err != nil {
		return nil, err
	}
	for section, keys := range runnerKeys {
		m := doc
		if section != "" {
			m, _ = doc[section].(map[string]any)
		}
		for k := range m {
			if !slices.Contains(keys, k) {
				where := k
				if section != "" {
					where = section + "." + k
				}
				return nil, fmt.Errorf("1 validation error for InferenceExperimentConfig\n%s\n  Extra inputs are not permitted [type=extra_forbidden]", where)
			}
		}
	}
	get := func(path ...string) any {
		var v any = doc
		for _, p := range path {
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[p]
		}
		return v
	}
	if v, ok := get("experiment_settings", "seeds").([]any); ok {
		r.seeds = nil
		for _, s := range v {
			r.seeds = append(r.seeds, toInt(s))
		}
	}
	if v, ok := get("experiment_settings", "use_msa_server").(bool); ok {
		r.useMSAServer = &v
	}
	if v, ok := get("experiment_settings", "use_templates").(bool); ok {
		r.useTemplates = &v
	}
	if v, ok := get("model_update", "presets").([]any); ok {
		r.presets = nil
		for _, s := range v {
			r.presets = append(r.presets, fmt.Sprint(s))
		}
	}
	if v := get("model_update", "custom", "architecture", "shared", "num_recycles"); v != nil {
		r.recycles = toInt(v)
	}
	if v := get("model_update", "custom", "architecture", "shared", "diffusion", "no_full_rollout_steps"); v != nil {
		r.steps = toInt(v)
	}
	if v, ok := get("model_update", "custom", "settings", "memory", "eval", "use_deepspeed_evo_attention").(bool); ok {
		r.evoAttention = v
	}
	if v, ok := get("model_update", "custom", "settings", "memory", "eval", "use_cueq_triangle_kernels").(bool); ok {
		r.cuEquivariance = v
	}
	if v, ok := get("output_writer_settings", "structure_format").(string); ok {
		if v != "cif" && v != "pdb" {
			return nil, fmt.Errorf("output_writer_settings.structure_format: Input should be 'pdb' or 'cif'")
		}
		r.format = v
	}
	if v, ok := get("pl_trainer_args", "accelerator").(string); ok {
		r.accelerator = v
	}
	return r, nil
}

// on is a tri-state switch of predict: the command line's value when given, else the
// runner YAML's, else experiment_settings' default, true (run_openfold.py's options
// default to None; experiment_runner.py, update_config_with_cli_args; validator.py).
func on(cli string, yaml *bool) bool {
	switch {
	case cli != "":
		return cli == "true"
	case yaml != nil:
		return *yaml
	}
	return true
}

func toInt(v any) int {
	switch n := v.(type) {
	case uint64:
		return int(n)
	case int64:
		return int(n)
	case int:
		return n
	case float64:
		return int(n)
	}
	return 0
}

// score is a made-up number in [lo, hi), fixed by the words.
func score(lo, hi float64, words ...string) float64 {
	return lo + (hi-lo)*standin.Random(strings.Join(words, "\x00"))(0)
}

// writeJSON writes what OpenFold3 writes, as its writer does: indented by four spaces.
func writeJSON(path string, v any) { _ = standin.WriteJSONIndent(path, v) }

func predict(opts map[string]string) int {
	r, err := readRunner(opts["--runner_yaml"])
	if err != nil {
		traceback("predict", "pydantic_core._pydantic_core.ValidationError: "+err.Error())
		return 1
	}
	if on(opts["--use_msa_server"], r.useMSAServer) || on(opts["--use_templates"], r.useTemplates) {
		// Either would go to the ColabFold server (and data.rcsb.org), which a test machine
		// cannot reach.
		traceback("predict", "requests.exceptions.ConnectionError: HTTPSConnectionPool(host='api.colabfold.com', port=443): Max retries exceeded")
		return 1
	}
	if opts["--inference_ckpt_path"] == "" {
		fmt.Print("Download openfold3-parameters/of3-ob-2025-06-30-174k.pt from s3://openfold3-data to ~/.openfold3/of3-ob-2025-06-30-174k.pt? (yes/no): ")
		traceback("predict", "EOFError: EOF when reading a line")
		return 1
	}
	qs, err := readQuerySet(opts["--query_json"])
	if err != nil {
		traceback("predict", "pydantic_core._pydantic_core.ValidationError: "+err.Error())
		return 1
	}
	out := opts["--output_dir"]
	if out == "" {
		out = "."
	}
	samples := 5
	if v := opts["--num_diffusion_samples"]; v != "" {
		samples, _ = strconv.Atoi(v)
	}
	if slices.Contains(r.presets, "pae_enabled") {
		// 0.4 dropped the preset; the PAE head is on by default (project_entry.py:36-45).
		fmt.Println("WARNING:openfold3.projects.of3_all_atom.project_entry:The `pae_enabled` model preset is deprecated and will be removed. from the ModelUpdate.presets list.")
		r.presets = slices.DeleteFunc(r.presets, func(p string) bool { return p == "pae_enabled" })
	}
	fmt.Printf("INFO:openfold3.entry_points.experiment_runner:Set diffusion samples to %d\n", samples)
	fmt.Printf("[run_openfold stand-in] accelerator %s, seeds %v, presets %v, num_recycles %d, no_full_rollout_steps %d, "+
		"use_deepspeed_evo_attention %t, use_cueq_triangle_kernels %t, structure_format %s\n",
		r.accelerator, r.seeds, r.presets, r.recycles, r.steps, r.evoAttention, r.cuEquivariance, r.format)
	if err := os.MkdirAll(filepath.Join(out, "logs"), 0o755); err != nil {
		traceback("predict", "OSError: "+err.Error())
		return 1
	}
	writeJSON(filepath.Join(out, "inference_query_set.json"), qs)
	fmt.Printf("INFO:openfold3.entry_points.experiment_runner:Loading weights from %s\n", opts["--inference_ckpt_path"])
	fmt.Println("INFO:openfold3.entry_points.experiment_runner:Beginning inference prediction")

	names := make([]string, 0, len(qs.Queries))
	for n := range qs.Queries {
		names = append(names, n)
	}
	sort.Strings(names)
	total := len(names) * len(r.seeds)
	var failed []string
	step := 0
	fmt.Printf("\r%s", standin.ProgressBar("Predicting DataLoader 0: ", 0, total))
	for _, name := range names {
		q := qs.Queries[name]
		for _, seed := range r.seeds {
			step++
			switch {
			case strings.HasPrefix(name, "crash"):
				fmt.Println()
				traceback("predict", standin.CUDACrash)
				return 1
			case strings.HasPrefix(name, "fail"):
				failProcessing(name, "ValueError: Unknown CCD code ZZZ for chain L")
				failed = append(failed, name)
			case strings.HasPrefix(name, "oom"):
				fmt.Printf("\nERROR:openfold3.projects.of3_all_atom.runner:OOM for query_id(s) %s. See %s/logs/predict_err_rank0.log for details.\n", name, out)
				logError(out, name, "OutOfMemoryError", "CUDA out of memory. Tried to allocate 20.00 GiB. GPU 0 has a total capacity of 39.39 GiB")
				failed = append(failed, name)
			default:
				msas, err := readAlignments(q)
				if err != nil {
					failProcessing(name, err.Error())
					failed = append(failed, name)
					break
				}
				if strings.HasPrefix(name, "slow") && !slow(name) {
					return 1
				}
				started := time.Now()
				describe(name, q, msas)
				writeQuery(out, name, seed, q, samples, r.format)
				writeJSON(filepath.Join(out, name, fmt.Sprintf("seed_%d", seed), "timing.json"),
					map[string]float64{"runtime_s": time.Since(started).Seconds() + score(0.5, 2, name, "time")})
			}
			fmt.Printf("\r%s", standin.ProgressBar("Predicting DataLoader 0: ", step, total))
		}
	}
	fmt.Println()
	summary := fmt.Sprintf("\n%s\n    PREDICTION SUMMARY (COMPLETE)    \n%s\nTotal Queries Processed: %d\n  - Successful Queries:  %d\n  - Failed Queries:      %d\n",
		strings.Repeat("=", 50), strings.Repeat("=", 50), total, total-len(failed), len(failed))
	if len(failed) > 0 {
		sort.Strings(failed)
		summary += "\nFailed Queries: " + strings.Join(failed, ", ") + "\n"
	}
	summary += strings.Repeat("=", 50) + "\n"
	_ = os.WriteFile(filepath.Join(out, "summary.txt"), []byte(summary), 0o644)
	fmt.Print(summary)
	return 0
}

// failProcessing prints what OpenFold3 prints when featurising a query raised err
// (single_datasets/inference.py, __getitem__), which then counts it as failed.
func failProcessing(name, err string) {
	fmt.Printf("\nWARNING:openfold3.core.data.framework.single_datasets.inference:----------------------------------------\n"+
		"Failed to process %s with preferredException type: %s\nTraceback: Traceback (most recent call last):\n"+
		"  File \"/opt/openfold3/openfold3/core/data/framework/single_datasets/inference.py\", line 333, in __getitem__\n"+
		"    features = self.create_all_features(query)\n%s\n"+
		"----------------------------------------\n", name, strings.SplitN(err, ":", 2)[0], err)
}

func logError(out, name, typ, msg string) {
	_ = standin.AppendFile(filepath.Join(out, "logs", "predict_err_rank0.log"), fmt.Sprintf("==================================================\nTimestamp: 2026-01-01 00:00:00\nQuery ID(s): %s\n"+
		"Error Type: %s\nError Message: %s\n--------------------------------------------------\nTraceback:Traceback (most recent call last):\n"+
		"  File \"runner.py\", line 640, in predict_step\n%s: %s\n==================================================", name, typ, msg, typ, msg))
}

// slow is the prediction of a slow query: 30 s of progress lines, with a helper process
// that ignores SIGTERM (its pid in hang.pid in the working folder), so that a cancel must
// stop the whole process group.
func slow(name string) bool {
	stop, err := standin.Stall("hang.pid", 300, 100*time.Millisecond, func(i int) {
		fmt.Printf("[run_openfold stand-in] %s: diffusion step %d of 300\n", name, i+1)
	})
	if err != nil {
		traceback("predict", "OSError: "+err.Error())
		return false
	}
	stop()
	return true
}
