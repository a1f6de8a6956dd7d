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

func main() { standin.Main(run) }

// The options of `protenix pred` (Protenix 2.0.0) and `opendde pred` (OpenDDE 1.2.0), with
// their defaults; a test of the real-package tier (TestUpstreamStandInOptions) checks them
// against the real tools' --help. Both end with the same options, lastOptions.
var (
	protenixOptions = append([]standin.Option{
		{Short: "-i", Name: "--input", Kind: standin.Text},
		{Short: "-o", Name: "--out_dir", Kind: standin.Text, Default: "./output"},
		{Short: "-s", Name: "--seeds", Kind: standin.Text, Default: "101"},
		{Short: "-c", Name: "--cycle", Kind: standin.Int, Default: "10"},
		{Short: "-p", Name: "--step", Kind: standin.Int, Default: "200"},
		{Short: "-e", Name: "--sample", Kind: standin.Int, Default: "5"},
		{Short: "-d", Name: "--dtype", Kind: standin.Text, Default: "bf16"},
		{Short: "-n", Name: "--model_name", Kind: standin.Text, Default: "protenix_base_default_v1.0.0"},
		{Name: "--use_msa", Kind: standin.Bool, Default: "true"},
		{Name: "--use_default_params", Kind: standin.Bool, Default: "false"},
		{Name: "--trimul_kernel", Kind: standin.Text, Default: "cuequivariance"},
		{Name: "--triatt_kernel", Kind: standin.Text, Default: "cuequivariance"},
		{Name: "--enable_cache", Kind: standin.Bool, Default: "true"},
		{Name: "--enable_fusion", Kind: standin.Bool, Default: "true"},
		{Name: "--enable_tf32", Kind: standin.Bool, Default: "true"},
		{Name: "--msa_server_mode", Kind: standin.Text, Default: "protenix"},
		{Name: "--use_template", Kind: standin.Bool, Default: "false"},
		{Name: "--use_rna_msa", Kind: standin.Bool, Default: "false"},
		{Name: "--use_seeds_in_json", Kind: standin.Bool, Default: "false"},
		{Name: "--need_atom_confidence", Kind: standin.Bool, Default: "false"},
	}, lastOptions...)
	openDDEOptions = append([]standin.Option{
		{Short: "-i", Name: "--input", Kind: standin.Text},
		{Short: "-o", Name: "--out_dir", Kind: standin.Text, Default: "./output"},
		{Short: "-s", Name: "--seeds", Kind: standin.Text},
		{Short: "-c", Name: "--cycle", Kind: standin.Int, Default: "10"},
		{Short: "-p", Name: "--step", Kind: standin.Int, Default: "200"},
		{Short: "-e", Name: "--sample", Kind: standin.Int, Default: "5"},
		{Short: "-d", Name: "--dtype", Kind: standin.Choice, Choices: []string{"bf16", "fp32"}, Default: "bf16"},
		{Name: "--device", Kind: standin.Choice, Choices: []string{"auto", "cpu", "cuda", "mps"}, Default: "auto"},
		{Short: "-n", Name: "--model_name", Kind: standin.Choice, Choices: []string{"opendde_v1"}, Default: "opendde_v1"},
		{Name: "--load_checkpoint_path", Kind: standin.Text},
		{Name: "--use_msa", Kind: standin.Bool, Default: "true"},
		{Name: "--use_default_params", Kind: standin.Bool, Default: "false"},
		{Name: "--trimul_kernel", Kind: standin.Choice, Choices: []string{"auto", "cuequivariance", "torch"}, Default: "auto"},
		{Name: "--triatt_kernel", Kind: standin.Choice, Choices: []string{"auto", "cuequivariance", "torch"}, Default: "auto"},
		{Name: "--enable_cache", Kind: standin.Bool, Default: "true"},
		{Name: "--enable_fusion", Kind: standin.Bool, Default: "true"},
		{Name: "--enable_tf32", Kind: standin.Bool, Default: "false"},
		{Name: "--deterministic", Kind: standin.Bool, Default: "false"},
		{Name: "--use_template", Kind: standin.Bool, Default: "false"},
		{Name: "--use_rna_msa", Kind: standin.Bool, Default: "false"},
		{Name: "--msa_server_mode", Kind: standin.Text, Hidden: true},
		{Name: "--need_atom_confidence", Kind: standin.Bool, Default: "true"},
		{Name: "--foldcp_mode", Kind: standin.Choice, Choices: []string{"single", "distributed"}, Default: "single"},
		{Name: "--foldcp_size_dp", Kind: standin.Int, Default: "1"},
		{Name: "--foldcp_size_cp", Kind: standin.Int, Default: "1"},
		{Name: "--foldcp_devices", Kind: standin.Text},
		{Name: "--foldcp_metrics_jsonl", Kind: standin.Text},
	}, lastOptions...)
	lastOptions = []standin.Option{
		{Name: "--kalign_binary_path", Kind: standin.Text},
		{Name: "--use_tfg_guidance", Kind: standin.Bool, Default: "false"},
		{Name: "--hmmsearch_binary_path", Kind: standin.Text},
		{Name: "--hmmbuild_binary_path", Kind: standin.Text},
		{Name: "--seqres_database_path", Kind: standin.Text},
		{Name: "--nhmmer_binary_path", Kind: standin.Text},
		{Name: "--hmmalign_binary_path", Kind: standin.Text},
		{Name: "--hmmbuild_rna_binary_path", Kind: standin.Text},
		{Name: "--ntrna_database_path", Kind: standin.Text},
		{Name: "--rfam_database_path", Kind: standin.Text},
		{Name: "--rna_central_database_path", Kind: standin.Text},
		{Name: "--nhmmer_n_cpu", Kind: standin.Int},
	}
)

// tool is the flavor the stand-in runs as.
type tool struct {
	name    string // protenix or opendde
	title   string
	options []standin.Option
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

// pred is the tool's `pred` command.
func (tl tool) pred() *standin.Command {
	return &standin.Command{
		Usage:          tl.name + " pred [OPTIONS]",
		Try:            tl.name + " pred -h",
		Summary:        "Run predictions with " + tl.title + " using various input formats.",
		Help:           "-h, --help",
		Options:        tl.options,
		ShowDefaults:   true,
		ChoicesAnyCase: true,
	}
}

func run(args []string) int {
	tl := pick()
	if len(args) == 0 || args[0] == "--help" || args[0] == "-h" {
		fmt.Printf("Usage: %s [OPTIONS] COMMAND [ARGS]...\n\n  %s.\n\nOptions:\n  --version   Show the version and exit.\n"+
			"  -h, --help  Show this message and exit.\n\nCommands:\n  json\n  msa\n  pred\n  prep\n", tl.name, tl.title)
		return 0
	}
	if args[0] != "pred" {
		return standin.UsageError(tl.name+" [OPTIONS] COMMAND [ARGS]...", tl.name+" -h", fmt.Sprintf("No such command '%s'.", args[0]))
	}
	pred := tl.pred()
	opts, _, code := pred.Parse(args[1:])
	if opts == nil {
		return code
	}
	if opts["--input"] == "" { // -i is required; the stand-in's help does not mark it
		return pred.Fail("Missing option '-i' / '--input'.")
	}
	fmt.Printf("[%s stand-in] %s\n", tl.name, strings.Join(args, " "))
	r := &runner{tool: tl, opts: opts}
	return r.predict()
}

// logf prints a log line in the tools' format (init_logging) to stderr.
func logf(level, where, format string, args ...any) {
	now := time.Now()
	fmt.Fprintf(os.Stderr, "%s,%-3d %-8s [%s] %s\n", now.Format("2006-01-02 15:04:05"), now.Nanosecond()/1e6, level, where, fmt.Sprintf(format, args...))
}

// inferencePy is where the tools' tracebacks point.
var inferencePy = standin.Frame{File: "/opt/tool/runner/inference.py", Line: 470, Code: "raise"}

// traceback is a Python traceback ending in err, as traceback.format_exc gives it.
func traceback(where, err string) string { return inferencePy.Traceback(where, err) }

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
				fmt.Fprint(os.Stderr, traceback("predict", standin.CUDACrash))
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

// appendFile adds to a file of ERR/, which the run cannot go on without.
func appendFile(path, text string) {
	if err := standin.AppendFile(path, text); err != nil {
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
	stop, err := standin.Stall("hang.pid", 300, 100*time.Millisecond, func(i int) {
		fmt.Fprintf(os.Stderr, "[stand-in] %s: step %d of 300\n", name, i+1)
	})
	if err != nil {
		fmt.Fprint(os.Stderr, traceback("predict", "OSError: "+err.Error()))
		return false
	}
	stop()
	return true
}
