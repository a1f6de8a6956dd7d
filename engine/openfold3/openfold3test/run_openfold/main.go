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
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/chaperone-bio/chaperone/internal/standin"
)

func main() { os.Exit(run(os.Args[1:])) }

// option is one click option.
type option struct {
	name     string
	kind     string // int, bool, file (a path that must exist), path
	required bool
}

var commands = map[string][]option{
	"predict": {
		{name: "--query_json", kind: "file", required: true},
		{name: "--inference_ckpt_path", kind: "file"},
		{name: "--num_diffusion_samples", kind: "int"},
		{name: "--num_model_seeds", kind: "int"},
		{name: "--runner_yaml", kind: "file"},
		{name: "--use_msa_server", kind: "bool"},
		{name: "--use_templates", kind: "bool"},
		{name: "--output_dir", kind: "path"},
	},
	"train": {
		{name: "--runner_yaml", kind: "file", required: true},
		{name: "--seed", kind: "int"},
		{name: "--data_seed", kind: "int"},
	},
}

func run(args []string) int {
	standin.ServeSleeper(args)
	if len(args) == 0 || args[0] == "--help" {
		fmt.Print("Usage: run_openfold [OPTIONS] COMMAND [ARGS]...\n\nOptions:\n  --help  Show this message and exit.\n\n" +
			"Commands:\n  predict  Perform inference on a set of queries defined in the query_json.\n" +
			"  train    Perform a training experiment with a preprepared dataset cache.\n")
		return 0
	}
	opts, ok := commands[args[0]]
	if !ok {
		return usageError("run_openfold [OPTIONS] COMMAND [ARGS]...", "run_openfold --help", fmt.Sprintf("No such command '%s'.", args[0]))
	}
	values, code := parse(args[0], opts, args[1:])
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

// parse reads a command's arguments as click does; on an error it prints click's message
// and returns the exit status.
func parse(command string, opts []option, args []string) (map[string]string, int) {
	usage, try := "run_openfold "+command+" [OPTIONS]", "run_openfold "+command+" --help"
	values := map[string]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--help" {
			fmt.Printf("Usage: %s\n\nOptions:\n", usage)
			for _, o := range opts {
				meta := map[string]string{"int": "INTEGER", "bool": "BOOLEAN", "file": "FILE", "path": "PATH"}[o.kind]
				req := ""
				if o.required {
					req = "  [required]"
				}
				fmt.Printf("  %s %s%s\n", o.name, meta, req)
			}
			fmt.Print("  --help  Show this message and exit.\n")
			return nil, 0
		}
		name, value, hasValue := strings.Cut(a, "=")
		if !strings.HasPrefix(a, "-") {
			return nil, usageError(usage, try, fmt.Sprintf("Got unexpected extra argument (%s)", a))
		}
		i0 := slices.IndexFunc(opts, func(o option) bool { return o.name == name })
		if i0 < 0 {
			return nil, usageError(usage, try, "No such option: "+name)
		}
		if !hasValue {
			if i+1 >= len(args) {
				return nil, usageError(usage, try, fmt.Sprintf("Option '%s' requires an argument.", name))
			}
			i++
			value = args[i]
		}
		bad := ""
		switch opts[i0].kind {
		case "int":
			if _, err := strconv.Atoi(value); err != nil {
				bad = fmt.Sprintf("'%s' is not a valid integer.", value)
			}
		case "bool":
			switch strings.ToLower(value) {
			case "1", "true", "t", "yes", "y", "on":
				value = "true"
			case "0", "false", "f", "no", "n", "off":
				value = "false"
			default:
				bad = fmt.Sprintf("'%s' is not a valid boolean.", value)
			}
		case "file":
			if _, err := os.Stat(value); err != nil {
				bad = fmt.Sprintf("Path '%s' does not exist.", value)
			}
		}
		if bad != "" {
			return nil, usageError(usage, try, fmt.Sprintf("Invalid value for '%s': %s", name, bad))
		}
		values[name] = value
	}
	for _, o := range opts {
		if _, ok := values[o.name]; o.required && !ok {
			return nil, usageError(usage, try, fmt.Sprintf("Missing option '%s'.", o.name))
		}
	}
	return values, 0
}

func usageError(usage, try, msg string) int {
	fmt.Fprintf(os.Stderr, "Usage: %s\nTry '%s' for help.\n\nError: %s\n", usage, try, msg)
	return 2
}

// traceback prints a Python traceback ending in err.
func traceback(where, err string) {
	fmt.Fprintf(os.Stderr, "Traceback (most recent call last):\n  File \"/opt/openfold3/openfold3/run_openfold.py\", line 170, in %s\n    raise\n%s\n", where, err)
}

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
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("yaml: %v", err)
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
	h := sha256.Sum256([]byte(strings.Join(words, "\x00")))
	return lo + (hi-lo)*float64(h[0])/256
}

func writeJSON(path string, v any) {
	b, _ := json.MarshalIndent(v, "", "    ")
	_ = os.WriteFile(path, b, 0o644)
}

func tqdm(n, total int) string {
	pct := 0
	if total > 0 {
		pct = 100 * n / total
	}
	bar := strings.Repeat("█", pct/10) + strings.Repeat(" ", 10-pct/10)
	return fmt.Sprintf("Predicting DataLoader 0: %3d%%|%s| %d/%d [00:00<00:00, 10.00it/s]", pct, bar, n, total)
}

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
	fmt.Printf("\r%s", tqdm(0, total))
	for _, name := range names {
		q := qs.Queries[name]
		for _, seed := range r.seeds {
			step++
			switch {
			case strings.HasPrefix(name, "crash"):
				fmt.Println()
				traceback("predict", "RuntimeError: CUDA error: an illegal memory access was encountered")
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
			fmt.Printf("\r%s", tqdm(step, total))
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
	f, err := os.OpenFile(filepath.Join(out, "logs", "predict_err_rank0.log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "==================================================\nTimestamp: 2026-01-01 00:00:00\nQuery ID(s): %s\n"+
		"Error Type: %s\nError Message: %s\n--------------------------------------------------\nTraceback:Traceback (most recent call last):\n"+
		"  File \"runner.py\", line 640, in predict_step\n%s: %s\n==================================================", name, typ, msg, typ, msg)
}

// slow is the prediction of a slow query: 30 s of progress lines, with a helper process
// that ignores SIGTERM (its pid in hang.pid in the working folder), so that a cancel must
// stop the whole process group.
func slow(name string) bool {
	helper, err := standin.StartSleeper()
	if err != nil {
		traceback("predict", "OSError: "+err.Error())
		return false
	}
	if err := os.WriteFile("hang.pid", []byte(strconv.Itoa(helper.Process.Pid)), 0o644); err != nil {
		traceback("predict", "OSError: "+err.Error())
		return false
	}
	for i := range 300 {
		fmt.Printf("[run_openfold stand-in] %s: diffusion step %d of 300\n", name, i+1)
		time.Sleep(100 * time.Millisecond)
	}
	_ = helper.Process.Kill()
	_ = helper.Wait()
	return true
}
