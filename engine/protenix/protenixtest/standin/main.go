// Command standin is a stand-in for the command lines of Protenix (`protenix pred`) and
// OpenDDE (`opendde pred`), a test fixture of package protenixtest (see there for the
// behaviours that target names choose). The name it runs under picks the tool. It follows
// runner/batch_inference.py, runner/msa_search.py, runner/inference.py and
// runner/dumper.py of bytedance/Protenix and aurekaresearch/OpenDDE: the click options of
// `pred` with their types and choices, click's errors, the log lines that matter to a
// caller, the input JSON checks of json_to_feature.py and json_parser.py, the check of
// alignment files that precedes a search (which it refuses) and the reading of them
// (msa.go), ERR/ and the output layout, file names and JSON keys.
// Its numbers are made up, deterministically from each target's name, seed and sample.
package main

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/chaperone-bio/chaperone/internal/standin"
)

func main() { os.Exit(run(os.Args[1:])) }

// option is one click option of `pred`.
type option struct {
	short, name string
	kind        string // str, int, bool, choice
	choices     []string
	def         string
	hidden      bool
}

// The options of `protenix pred` (Protenix 2.0.0) and `opendde pred` (OpenDDE 1.2.0), with
// their defaults; a test of the real-package tier (TestUpstreamStandInOptions) checks them
// against the real tools' --help.
var (
	protenixOptions = []option{
		{short: "-i", name: "--input", kind: "str"},
		{short: "-o", name: "--out_dir", kind: "str", def: "./output"},
		{short: "-s", name: "--seeds", kind: "str", def: "101"},
		{short: "-c", name: "--cycle", kind: "int", def: "10"},
		{short: "-p", name: "--step", kind: "int", def: "200"},
		{short: "-e", name: "--sample", kind: "int", def: "5"},
		{short: "-d", name: "--dtype", kind: "str", def: "bf16"},
		{short: "-n", name: "--model_name", kind: "str", def: "protenix_base_default_v1.0.0"},
		{name: "--use_msa", kind: "bool", def: "true"},
		{name: "--use_default_params", kind: "bool", def: "false"},
		{name: "--trimul_kernel", kind: "str", def: "cuequivariance"},
		{name: "--triatt_kernel", kind: "str", def: "cuequivariance"},
		{name: "--enable_cache", kind: "bool", def: "true"},
		{name: "--enable_fusion", kind: "bool", def: "true"},
		{name: "--enable_tf32", kind: "bool", def: "true"},
		{name: "--msa_server_mode", kind: "str", def: "protenix"},
		{name: "--use_template", kind: "bool", def: "false"},
		{name: "--use_rna_msa", kind: "bool", def: "false"},
		{name: "--use_seeds_in_json", kind: "bool", def: "false"},
		{name: "--need_atom_confidence", kind: "bool", def: "false"},
		{name: "--kalign_binary_path", kind: "str"},
		{name: "--use_tfg_guidance", kind: "bool", def: "false"},
		{name: "--hmmsearch_binary_path", kind: "str"},
		{name: "--hmmbuild_binary_path", kind: "str"},
		{name: "--seqres_database_path", kind: "str"},
		{name: "--nhmmer_binary_path", kind: "str"},
		{name: "--hmmalign_binary_path", kind: "str"},
		{name: "--hmmbuild_rna_binary_path", kind: "str"},
		{name: "--ntrna_database_path", kind: "str"},
		{name: "--rfam_database_path", kind: "str"},
		{name: "--rna_central_database_path", kind: "str"},
		{name: "--nhmmer_n_cpu", kind: "int"},
	}
	openDDEOptions = []option{
		{short: "-i", name: "--input", kind: "str"},
		{short: "-o", name: "--out_dir", kind: "str", def: "./output"},
		{short: "-s", name: "--seeds", kind: "str"},
		{short: "-c", name: "--cycle", kind: "int", def: "10"},
		{short: "-p", name: "--step", kind: "int", def: "200"},
		{short: "-e", name: "--sample", kind: "int", def: "5"},
		{short: "-d", name: "--dtype", kind: "choice", choices: []string{"bf16", "fp32"}, def: "bf16"},
		{name: "--device", kind: "choice", choices: []string{"auto", "cpu", "cuda", "mps"}, def: "auto"},
		{short: "-n", name: "--model_name", kind: "choice", choices: []string{"opendde_v1"}, def: "opendde_v1"},
		{name: "--load_checkpoint_path", kind: "str", def: ""},
		{name: "--use_msa", kind: "bool", def: "true"},
		{name: "--use_default_params", kind: "bool", def: "false"},
		{name: "--trimul_kernel", kind: "choice", choices: []string{"auto", "cuequivariance", "torch"}, def: "auto"},
		{name: "--triatt_kernel", kind: "choice", choices: []string{"auto", "cuequivariance", "torch"}, def: "auto"},
		{name: "--enable_cache", kind: "bool", def: "true"},
		{name: "--enable_fusion", kind: "bool", def: "true"},
		{name: "--enable_tf32", kind: "bool", def: "false"},
		{name: "--deterministic", kind: "bool", def: "false"},
		{name: "--use_template", kind: "bool", def: "false"},
		{name: "--use_rna_msa", kind: "bool", def: "false"},
		{name: "--msa_server_mode", kind: "str", hidden: true},
		{name: "--need_atom_confidence", kind: "bool", def: "true"},
		{name: "--foldcp_mode", kind: "choice", choices: []string{"single", "distributed"}, def: "single"},
		{name: "--foldcp_size_dp", kind: "int", def: "1"},
		{name: "--foldcp_size_cp", kind: "int", def: "1"},
		{name: "--foldcp_devices", kind: "str", def: ""},
		{name: "--foldcp_metrics_jsonl", kind: "str", def: ""},
		{name: "--kalign_binary_path", kind: "str"},
		{name: "--use_tfg_guidance", kind: "bool", def: "false"},
		{name: "--hmmsearch_binary_path", kind: "str"},
		{name: "--hmmbuild_binary_path", kind: "str"},
		{name: "--seqres_database_path", kind: "str"},
		{name: "--nhmmer_binary_path", kind: "str"},
		{name: "--hmmalign_binary_path", kind: "str"},
		{name: "--hmmbuild_rna_binary_path", kind: "str"},
		{name: "--ntrna_database_path", kind: "str"},
		{name: "--rfam_database_path", kind: "str"},
		{name: "--rna_central_database_path", kind: "str"},
		{name: "--nhmmer_n_cpu", kind: "int"},
	}
)

// tool is the flavor the stand-in runs as.
type tool struct {
	name    string // protenix or opendde
	title   string
	options []option
	kernels []string // what --trimul_kernel and --triatt_kernel accept
	models  []string
}

func pick() tool {
	if filepath.Base(os.Args[0]) == "opendde" {
		return tool{name: "opendde", title: "OpenDDE", options: openDDEOptions, kernels: []string{"auto", "cuequivariance", "torch"},
			models: []string{"opendde_v1"}}
	}
	return tool{name: "protenix", title: "Protenix", options: protenixOptions, kernels: []string{"cuequivariance", "torch"},
		models: []string{"protenix_base_default_v1.0.0", "protenix-v2", "protenix_mini_default_v0.5.0"}}
}

func run(args []string) int {
	standin.ServeSleeper(args)
	tl := pick()
	if len(args) == 0 || args[0] == "--help" || args[0] == "-h" {
		fmt.Printf("Usage: %s [OPTIONS] COMMAND [ARGS]...\n\n  %s.\n\nOptions:\n  --version   Show the version and exit.\n"+
			"  -h, --help  Show this message and exit.\n\nCommands:\n  json\n  msa\n  pred\n  prep\n", tl.name, tl.title)
		return 0
	}
	if args[0] != "pred" {
		return usageError(tl.name+" [OPTIONS] COMMAND [ARGS]...", tl.name+" -h", fmt.Sprintf("No such command '%s'.", args[0]))
	}
	opts, code := tl.parse(args[1:])
	if opts == nil {
		return code
	}
	fmt.Printf("[%s stand-in] %s\n", tl.name, strings.Join(args, " "))
	r := &runner{tool: tl, opts: opts}
	return r.predict()
}

// parse reads the arguments of pred as click does; on an error it prints click's
// message and returns the exit status.
func (tl tool) parse(args []string) (map[string]string, int) {
	usage, try := tl.name+" pred [OPTIONS]", tl.name+" pred -h"
	opts := map[string]string{}
	for _, o := range tl.options {
		if o.def != "" {
			opts[o.name] = o.def
		}
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--help" || a == "-h" {
			tl.printHelp()
			return nil, 0
		}
		if !strings.HasPrefix(a, "-") {
			return nil, usageError(usage, try, fmt.Sprintf("Got unexpected extra argument (%s)", a))
		}
		name, value, hasValue := strings.Cut(a, "=")
		k := slices.IndexFunc(tl.options, func(o option) bool { return o.name == name || o.short != "" && o.short == name })
		if k < 0 {
			return nil, usageError(usage, try, "No such option: "+name)
		}
		o := tl.options[k]
		if !hasValue {
			if i+1 >= len(args) {
				return nil, usageError(usage, try, fmt.Sprintf("Option '%s' requires an argument.", name))
			}
			i++
			value = args[i]
		}
		bad := ""
		switch o.kind {
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
		case "choice":
			if !slices.Contains(o.choices, strings.ToLower(value)) {
				bad = fmt.Sprintf("'%s' is not one of '%s'.", value, strings.Join(o.choices, "', '"))
			}
		}
		if bad != "" {
			return nil, usageError(usage, try, fmt.Sprintf("Invalid value for '%s': %s", o.display(), bad))
		}
		opts[o.name] = value
	}
	if opts["--input"] == "" {
		return nil, usageError(usage, try, "Missing option '-i' / '--input'.")
	}
	return opts, 0
}

func (o option) display() string {
	if o.short != "" {
		return o.short + "' / '" + o.name
	}
	return o.name
}

func usageError(usage, try, msg string) int {
	fmt.Fprintf(os.Stderr, "Usage: %s\nTry '%s' for help.\n\nError: %s\n", usage, try, msg)
	return 2
}

func (tl tool) printHelp() {
	fmt.Printf("Usage: %s pred [OPTIONS]\n\n  Run predictions with %s using various input formats.\n\nOptions:\n", tl.name, tl.title)
	for _, o := range tl.options {
		if o.hidden {
			continue
		}
		meta := map[string]string{"int": "INTEGER", "bool": "BOOLEAN", "str": "TEXT"}[o.kind]
		if o.kind == "choice" {
			meta = "[" + strings.Join(o.choices, "|") + "]"
		}
		names := o.name
		if o.short != "" {
			names = o.short + ", " + o.name
		}
		def := ""
		if o.def != "" {
			def = "  [default: " + o.def + "]"
		}
		fmt.Printf("  %s %s%s\n", names, meta, def)
	}
	fmt.Print("  -h, --help  Show this message and exit.\n")
}

// logf prints a log line in the tools' format (init_logging) to stderr.
func logf(level, where, format string, args ...any) {
	now := time.Now()
	fmt.Fprintf(os.Stderr, "%s,%-3d %-8s [%s] %s\n", now.Format("2006-01-02 15:04:05"), now.Nanosecond()/1e6, level, where, fmt.Sprintf(format, args...))
}

// traceback prints a Python traceback ending in err, as traceback.format_exc does.
func traceback(where, err string) string {
	return fmt.Sprintf("Traceback (most recent call last):\n  File \"/opt/tool/runner/inference.py\", line 470, in %s\n    raise\n%s\n", where, err)
}

type runner struct {
	tool tool
	opts map[string]string
	out  string
	err  string // ERR/
}

func (r *runner) flag(name string) bool { return r.opts[name] == "true" }

func (r *runner) int(name string) int {
	n, _ := strconv.Atoi(r.opts[name])
	return n
}

func (r *runner) predict() int {
	logf("INFO", "batch_inference.py:834 predict", "Run infer with input=%s, out_dir=%s, sample=%s", r.opts["--input"], r.opts["--out_dir"], r.opts["--sample"])
	for _, k := range []string{"--trimul_kernel", "--triatt_kernel"} {
		if !slices.Contains(r.tool.kernels, r.opts[k]) {
			fmt.Fprint(os.Stderr, traceback("predict", fmt.Sprintf("AssertionError: Invalid %s. Options: '%s'.", k[2:], strings.Join(r.tool.kernels, "', '"))))
			return 1
		}
	}
	if !slices.Contains(r.tool.models, r.opts["--model_name"]) {
		fmt.Fprint(os.Stderr, traceback("get_default_runner", fmt.Sprintf("KeyError: '%s'", r.opts["--model_name"])))
		return 1
	}
	var seeds []int
	for _, s := range strings.Split(r.opts["--seeds"], ",") {
		n, err := strconv.Atoi(s)
		if err != nil {
			fmt.Fprint(os.Stderr, traceback("predict", fmt.Sprintf("ValueError: invalid literal for int() with base 10: '%s'", s)))
			return 1
		}
		seeds = append(seeds, n)
	}
	input := r.opts["--input"]
	var inputs []string
	if st, err := os.Stat(input); err == nil && st.IsDir() {
		_ = filepath.Walk(input, func(p string, info os.FileInfo, err error) error {
			if err == nil && !info.IsDir() && strings.HasSuffix(p, ".json") {
				inputs = append(inputs, p)
			}
			return nil
		})
	} else if err == nil {
		inputs = []string{input}
	} else {
		fmt.Fprint(os.Stderr, traceback("inference_jsons", "RuntimeError: Can not read a special file: "+input))
		return 1
	}
	logf("INFO", "batch_inference.py:478 inference_jsons", "Will infer with %d jsons", len(inputs))
	// The runner: weights, then the output folders (InferenceRunner.init_basics).
	if ckpt := r.opts["--load_checkpoint_path"]; ckpt != "" {
		if _, err := os.Stat(ckpt); err != nil {
			fmt.Fprint(os.Stderr, traceback("load_checkpoint", fmt.Sprintf("FileNotFoundError: Given checkpoint path does not exist [%s]", ckpt)))
			return 1
		}
	}
	r.out = r.opts["--out_dir"]
	r.err = filepath.Join(r.out, "ERR")
	if err := os.MkdirAll(r.err, 0o755); err != nil {
		fmt.Fprint(os.Stderr, traceback("init_basics", "OSError: "+err.Error()))
		return 1
	}
	logf("INFO", "inference.py:130 init_env", "Finished environment initialization.")
	errors := map[string]string{}
	for _, in := range inputs {
		updated, err := r.preprocess(in)
		if err == nil {
			err = r.infer(updated, seeds)
		}
		if err != nil {
			if c, ok := err.(crashed); ok {
				return int(c)
			}
			errors[in] = err.Error()
		}
	}
	if len(errors) > 0 {
		var parts []string
		for k, v := range errors {
			parts = append(parts, fmt.Sprintf("'%s': '%s'", k, v))
		}
		sort.Strings(parts)
		logf("WARNING", "batch_inference.py:545 inference_jsons", "Run inference failed: {%s}", strings.Join(parts, ", "))
	}
	return 0
}

// crashed is a run that died: the process exits with it.
type crashed int

func (c crashed) Error() string { return "crashed" }

// entity is one element of a job's sequences.
type entity map[string]map[string]any

// task is one element of the input JSON list.
type task struct {
	Name      string   `json:"name"`
	Sequences []entity `json:"sequences"`
}

// preprocess checks the alignment files of each task as update_infer_json does
// (runner/msa_search.py, need_msa_search): a task with a protein entity that names neither
// pairedMsaPath nor unpairedMsaPath, or names one that is missing, would be searched on a
// server with --use_msa. The stand-in refuses that search, failing the input file: an
// engine must hand the tool every alignment. It returns the input the inference reads.
func (r *runner) preprocess(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	var tasks []map[string]any
	if err := json.Unmarshal(b, &tasks); err != nil {
		return "", fmt.Errorf("%v", err)
	}
	for i, t := range tasks {
		seqs, _ := t["sequences"].([]any)
		need := false
		for _, s := range seqs {
			pc, ok := s.(map[string]any)["proteinChain"].(map[string]any)
			if !ok {
				continue
			}
			paired, hasP := pc["pairedMsaPath"].(string)
			unpaired, hasU := pc["unpairedMsaPath"].(string)
			if !hasP && !hasU {
				need = true
			}
			for _, p := range []string{paired, unpaired} {
				if p != "" {
					if _, err := os.Stat(p); err != nil {
						logf("WARNING", "msa_search.py:50 need_msa_search", "MSA path %s does not exist, will re-search MSA.", p)
						need = true
					}
				}
			}
		}
		if need && r.flag("--use_msa") {
			logf("INFO", "msa_search.py:212 update_infer_json", "starting to update msa result for task %d in %s", i, path)
			return "", fmt.Errorf("the %s stand-in refuses to search alignments: task %v has a protein chain without its alignment files", r.tool.name, t["name"])
		}
	}
	return path, nil
}

// chain is one chain of a featurised task.
type chain struct {
	id       string
	polymer  bool
	residues int
	resNames []string
	msa      *alignment // a protein's alignment with --use_msa, else nil
}

// infer runs infer_predict over one input file.
func (r *runner) infer(path string, seeds []int) error {
	logf("INFO", "inference.py:428 infer_predict", "Loading data from %s", path)
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var tasks []task
	if err := json.Unmarshal(b, &tasks); err != nil || len(tasks) == 0 {
		msg := fmt.Sprintf("Dataloader initialization failed: Input JSON must be a non-empty top-level list\n%s", traceback("infer_predict", "ValueError"))
		logf("ERROR", "inference.py:451 infer_predict", "%s", msg)
		appendFile(filepath.Join(r.err, "error.txt"), msg)
		return nil
	}
	start := time.Now()
	for _, seed := range seeds {
		for i, t := range tasks {
			logf("INFO", "infer_dataloader.py:283 __getitem__", "Featurizing %s...", t.Name)
			chains, err := r.featurize(t)
			if err == nil && strings.HasPrefix(t.Name, "fail") {
				err = fmt.Errorf("Could not parse ligand SMILES: simulated featurisation failure")
			}
			if err != nil {
				msg := fmt.Sprintf("%v:\n%s", err, traceback("__getitem__", "ValueError: "+err.Error()))
				logf("ERROR", "inference.py:469 infer_predict", "Data error for %s: %s", t.Name, msg)
				appendFile(filepath.Join(r.err, t.Name+".txt"), msg)
				continue
			}
			tokens := 0
			for _, c := range chains {
				tokens += c.residues
			}
			t0 := time.Now()
			logf("INFO", "inference.py:478 infer_predict", "[Rank 0 (%d/%d)] %s [seed:%d]: N_asym %d, N_token %d, N_atom %d, N_msa %d",
				i+1, len(tasks), t.Name, seed, len(chains), tokens, tokens*8, msaRows(chains))
			switch {
			case strings.HasPrefix(t.Name, "crash"):
				fmt.Fprint(os.Stderr, traceback("predict", "RuntimeError: CUDA error: an illegal memory access was encountered"))
				return crashed(1)
			case strings.HasPrefix(t.Name, "oom"):
				msg := fmt.Sprintf("[Rank 0] %s failed: CUDA out of memory. Tried to allocate 20.00 GiB\n%s", t.Name,
					traceback("predict", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB"))
				logf("ERROR", "inference.py:511 infer_predict", "%s", msg)
				appendFile(filepath.Join(r.err, t.Name+".txt"), msg)
				continue
			case strings.HasPrefix(t.Name, "slow"):
				if !slow(t.Name) {
					return crashed(1)
				}
			}
			time.Sleep(20 * time.Millisecond) // a target takes time, which the engine measures
			if err := r.dump(t.Name, seed, chains); err != nil {
				return err
			}
			logf("INFO", "inference.py:500 infer_predict", "[Rank 0] %s [seed:%d] succeeded. Model forward time: %.2fs. Results saved to %s",
				t.Name, seed, time.Since(t0).Seconds(), r.out)
		}
		logf("INFO", "inference.py:520 infer_predict", "[Rank 0] Seed %d completed in %.2fs.", seed, time.Since(start).Seconds())
	}
	if entries, err := os.ReadDir(r.err); err == nil && len(entries) == 0 {
		_ = os.Remove(r.err)
	}
	logf("INFO", "inference.py:532 infer_predict", "[Rank 0] Job completed in %.2fs.", time.Since(start).Seconds())
	return nil
}

func appendFile(path, text string) {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		panic(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		panic(err)
	}
}

// Residue letters per polymer (json_parser.py: PROTEIN_1to3, DNA_1to3, RNA_1to3).
var letters = map[string]string{"proteinChain": "ARNDCQEGHILKMFPSTWYVX", "dnaSequence": "AGCTXINU", "rnaSequence": "AGCUXIN"}

// featurize checks a task as json_to_feature.py and json_parser.py do, and returns its
// chains in the order the tool writes them.
func (r *runner) featurize(t task) ([]chain, error) {
	var chains []chain
	used := map[string]bool{}
	next := 0
	for idx, e := range t.Sequences {
		if len(e) != 1 {
			return nil, fmt.Errorf("Only one entity type is allowed.")
		}
		for typ, body := range e {
			count, ok := body["count"].(float64)
			if !ok || count < 1 || count != math.Trunc(count) {
				return nil, fmt.Errorf("sequences[%d]: count must be a positive integer", idx)
			}
			var ids []string
			if raw, ok := body["id"]; ok {
				list, ok := raw.([]any)
				if !ok {
					return nil, fmt.Errorf(`Invalid "id" field in sequences[%d]: expecting list[str].`, idx)
				}
				for _, x := range list {
					s, ok := x.(string)
					if !ok {
						return nil, fmt.Errorf(`Invalid "id" field in sequences[%d]: expecting list[str].`, idx)
					}
					if used[s] {
						return nil, fmt.Errorf(`Invalid "id" field in sequences[%d]: duplicated chain IDs across entities: ['%s'].`, idx, s)
					}
					used[s] = true
					ids = append(ids, s)
				}
				if len(ids) != int(count) {
					return nil, fmt.Errorf(`Invalid "id" field in sequences[%d]: len(id)(%d) != count(%d).`, idx, len(ids), int(count))
				}
			}
			c := chain{}
			switch typ {
			case "proteinChain", "dnaSequence", "rnaSequence":
				seq, _ := body["sequence"].(string)
				names := make([]string, len(seq))
				for i, l := range seq {
					if !strings.ContainsRune(letters[typ], l) {
						return nil, fmt.Errorf("'%c'", l)
					}
					names[i] = string(l)
				}
				mods, _ := body["modifications"].([]any)
				for _, m := range mods {
					mm, _ := m.(map[string]any)
					posKey, typeKey := "ptmPosition", "ptmType"
					if typ != "proteinChain" {
						posKey, typeKey = "basePosition", "modificationType"
					}
					pos, ok := mm[posKey].(float64)
					code, _ := mm[typeKey].(string)
					if !ok {
						return nil, fmt.Errorf("'%s'", posKey)
					}
					if !strings.HasPrefix(code, "CCD_") {
						return nil, fmt.Errorf("unknown modification type: %s", code)
					}
					if int(pos) < 1 || int(pos) > len(names) {
						return nil, fmt.Errorf("list assignment index out of range")
					}
					names[int(pos)-1] = code[4:]
				}
				c = chain{polymer: true, residues: len(seq), resNames: names}
				if typ == "proteinChain" && r.flag("--use_msa") {
					a, err := readAlignment(body, seq)
					if err != nil {
						return nil, err
					}
					c.msa = a
				}
			case "ligand":
				lig, _ := body["ligand"].(string)
				switch {
				case strings.HasPrefix(lig, "CCD_"):
					c.resNames = strings.Split(lig[4:], "_")
				case lig == "":
					return nil, fmt.Errorf("'ligand'")
				default:
					c.resNames = []string{"l01"}
				}
				c.residues = len(c.resNames)
			case "ion":
				ion, _ := body["ion"].(string)
				if ion == "" || strings.HasPrefix(ion, "CCD_") {
					return nil, fmt.Errorf("unknown ion: %s", ion)
				}
				c = chain{residues: 1, resNames: []string{ion}}
			default:
				return nil, fmt.Errorf(`The "sequences" field accepts only these entity types: ["proteinChain", "dnaSequence", "rnaSequence", "ligand", "ion"].`)
			}
			for k := range int(count) {
				cc := c
				if ids != nil {
					cc.id = ids[k]
				} else {
					for {
						next++
						if id := letterID(next); !used[id] {
							cc.id = id
							used[id] = true
							break
						}
					}
				}
				chains = append(chains, cc)
			}
		}
	}
	return chains, nil
}

// letterID is int_to_letters: 1 → A, 26 → Z, 27 → AA.
func letterID(n int) string {
	s := ""
	for n > 0 {
		n--
		s = string(rune('A'+n%26)) + s
		n /= 26
	}
	return s
}

// slow is the model on a slow target: 30 s of progress lines, with a helper process
// that ignores SIGTERM, so that a cancel must stop the whole process group.
func slow(name string) bool {
	helper, err := standin.StartSleeper()
	if err != nil {
		fmt.Fprint(os.Stderr, traceback("predict", "OSError: "+err.Error()))
		return false
	}
	if err := os.WriteFile("hang.pid", []byte(strconv.Itoa(helper.Process.Pid)), 0o644); err != nil {
		fmt.Fprint(os.Stderr, traceback("predict", "OSError: "+err.Error()))
		return false
	}
	for i := range 300 {
		fmt.Fprintf(os.Stderr, "[stand-in] %s: step %d of 300\n", name, i+1)
		time.Sleep(100 * time.Millisecond)
	}
	_ = helper.Process.Kill()
	_ = helper.Wait()
	return true
}

// summaryConfidence is <name>_summary_confidence_sample_<rank>.json, in the order of
// sample_confidence.py.
type summaryConfidence struct {
	PLDDT               float64     `json:"plddt"`
	GPDE                float64     `json:"gpde"`
	PTM                 float64     `json:"ptm"`
	IPTM                float64     `json:"iptm"`
	ChainGPDE           []float64   `json:"chain_gpde"`
	ChainPairGPDE       [][]float64 `json:"chain_pair_gpde"`
	ChainPTM            []float64   `json:"chain_ptm"`
	ChainIPTM           []float64   `json:"chain_iptm"`
	ChainPairIPTM       [][]float64 `json:"chain_pair_iptm"`
	ChainPairIPTMGlobal [][]float64 `json:"chain_pair_iptm_global"`
	ChainPLDDT          []float64   `json:"chain_plddt"`
	ChainPairPLDDT      [][]float64 `json:"chain_pair_plddt"`
	HasClash            float64     `json:"has_clash"`
	Disorder            float64     `json:"disorder"`
	RankingScore        float64     `json:"ranking_score"`
	NumRecycles         int         `json:"num_recycles"`
}

// fullData is <name>_full_data_sample_<rank>.json (get_clean_full_confidence).
type fullData struct {
	AtomPLDDT      []float64   `json:"atom_plddt"`
	TokenPairPDE   [][]float64 `json:"token_pair_pde"`
	ContactProbs   [][]float64 `json:"contact_probs"`
	TokenPairPAE   [][]float64 `json:"token_pair_pae"`
	TokenHasFrame  []bool      `json:"token_has_frame"`
	TokenAsymID    []int       `json:"token_asym_id"`
	AtomToTokenIdx []int       `json:"atom_to_token_idx"`
}

// dump writes a task's samples of one seed as DataDumper does: ranked by ranking_score
// within the seed, best first.
func (r *runner) dump(name string, seed int, chains []chain) error {
	dir := filepath.Join(r.out, name, fmt.Sprintf("seed_%d", seed), "predictions")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	n := r.int("--sample")
	samples := make([]summaryConfidence, n)
	tokens := 0
	for _, c := range chains {
		tokens += c.residues
	}
	for k := range samples {
		s := random(fmt.Sprintf("%s/%d/%d", name, seed, k))
		sc := summaryConfidence{PLDDT: round(55 + 40*s(0)), GPDE: round(1 + s(1)), PTM: round(0.5 + 0.45*s(2)),
			NumRecycles: r.int("--cycle")}
		if len(chains) > 1 {
			sc.IPTM = round(0.3 + 0.6*s(3))
		}
		sc.RankingScore = round(0.8*sc.IPTM + 0.2*sc.PTM)
		for range chains {
			sc.ChainGPDE = append(sc.ChainGPDE, sc.GPDE)
			sc.ChainPTM = append(sc.ChainPTM, sc.PTM)
			sc.ChainIPTM = append(sc.ChainIPTM, sc.IPTM)
			sc.ChainPLDDT = append(sc.ChainPLDDT, sc.PLDDT)
			row := make([]float64, len(chains))
			for j := range row {
				row[j] = sc.IPTM
			}
			sc.ChainPairGPDE = append(sc.ChainPairGPDE, row)
			sc.ChainPairIPTM = append(sc.ChainPairIPTM, row)
			sc.ChainPairIPTMGlobal = append(sc.ChainPairIPTMGlobal, row)
			sc.ChainPairPLDDT = append(sc.ChainPairPLDDT, row)
		}
		samples[k] = sc
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return samples[order[a]].RankingScore > samples[order[b]].RankingScore })
	for rank, k := range order {
		sc := samples[k]
		if err := writeJSON(filepath.Join(dir, fmt.Sprintf("%s_summary_confidence_sample_%d.json", name, rank)), sc, true); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s_sample_%d.cif", name, rank)), []byte(mmcif(name, chains, sc.PLDDT)), 0o644); err != nil {
			return err
		}
		if !r.flag("--need_atom_confidence") {
			continue
		}
		fd := fullData{}
		for ci, c := range chains {
			for range c.residues {
				fd.AtomPLDDT = append(fd.AtomPLDDT, sc.PLDDT)
				fd.TokenHasFrame = append(fd.TokenHasFrame, c.polymer)
				fd.TokenAsymID = append(fd.TokenAsymID, ci)
				fd.AtomToTokenIdx = append(fd.AtomToTokenIdx, len(fd.AtomToTokenIdx))
			}
		}
		for range tokens {
			row := make([]float64, tokens)
			for j := range row {
				row[j] = 4.25
			}
			fd.TokenPairPAE = append(fd.TokenPairPAE, row)
			fd.TokenPairPDE = append(fd.TokenPairPDE, row)
			fd.ContactProbs = append(fd.ContactProbs, row)
		}
		if err := writeJSON(filepath.Join(dir, fmt.Sprintf("%s_full_data_sample_%d.json", name, rank)), fd, false); err != nil {
			return err
		}
	}
	return nil
}

func writeJSON(path string, v any, indent bool) error {
	var b []byte
	var err error
	if indent {
		b, err = json.MarshalIndent(v, "", "    ")
	} else {
		b, err = json.Marshal(v)
	}
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// mmcif writes a structure as biotite does for the tools: one atom per residue, label
// and author ids alike, no label_seq_id for a ligand, pLDDT as the B-factor.
func mmcif(name string, chains []chain, plddt float64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "data_%s\n#\nloop_\n_atom_site.group_PDB\n_atom_site.id\n_atom_site.type_symbol\n_atom_site.label_atom_id\n"+
		"_atom_site.label_alt_id\n_atom_site.label_comp_id\n_atom_site.label_asym_id\n_atom_site.label_entity_id\n"+
		"_atom_site.label_seq_id\n_atom_site.pdbx_PDB_ins_code\n_atom_site.Cartn_x\n_atom_site.Cartn_y\n_atom_site.Cartn_z\n"+
		"_atom_site.occupancy\n_atom_site.B_iso_or_equiv\n_atom_site.auth_seq_id\n_atom_site.auth_asym_id\n_atom_site.pdbx_PDB_model_num\n", name)
	atom := 0
	for ci, c := range chains {
		for i, res := range c.resNames {
			atom++
			group, seq, atomName, el := "HETATM", ".", "C1", "C"
			if c.polymer {
				group, seq, atomName = "ATOM", strconv.Itoa(i+1), "CA"
			}
			fmt.Fprintf(&b, "%s %d %s %s . %s %s %d %s ? %.3f %.3f %.3f 1.0 %.2f %d %s 1\n", group, atom, el, atomName,
				res, c.id, ci+1, seq, 3.8*float64(atom), 0.0, 0.0, plddt, i+1, c.id)
		}
	}
	b.WriteString("#\n")
	return b.String()
}

// random gives deterministic numbers in [0, 1) for a name.
func random(name string) func(i int) float64 {
	h := sha256.Sum256([]byte(name))
	return func(i int) float64 { return float64(h[i%32]) / 256 }
}

func round(f float64) float64 { return math.Round(f*10000) / 10000 }
