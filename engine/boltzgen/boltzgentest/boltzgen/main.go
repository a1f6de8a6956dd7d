// Command boltzgen is a stand-in for BoltzGen's command line, a test fixture of package
// boltzgentest (see there for the behaviours a spec comment chooses). It follows
// src/boltzgen/cli/boltzgen.py of HannesStark/boltzgen: the argparse options of
// `boltzgen run` and argparse's errors, the pipeline banners and the steps run as
// subprocesses, and task/filter/filter.py's final_ranked_designs layout, file names and
// leading CSV columns. Its numbers are made up, deterministically from the spec.
package main

import (
	"crypto/sha256"
	"encoding/csv"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/chaperone-bio/chaperone/internal/standin"
)

func main() { standin.Main(run) }

// stepArg is the hidden first argument that makes the program a pipeline step, run as
// BoltzGen runs main.py <config>.
const stepArg = "__stand_in_step"

// option is one argparse option of boltzgen run.
type option struct {
	name    string
	kind    string // flag, int, float, text, many (nargs="+"), choice
	choices []string
	def     string
}

var protocols = []string{"protein-anything", "peptide-anything", "protein-small_molecule", "nanobody-anything",
	"antibody-anything", "protein-redesign"}

var stepNames = []string{"design", "inverse_folding", "design_folding", "folding", "affinity", "analysis", "filtering"}

// runOptions are the options of boltzgen run (add_configure_arguments,
// add_execute_core_arguments, add_models_download_options), with their defaults.
var runOptions = []option{
	{name: "--protocol", kind: "choice", choices: protocols, def: "protein-anything"},
	{name: "--output", kind: "text"},
	{name: "--config", kind: "many"},
	{name: "--devices", kind: "int"},
	{name: "--num_workers", kind: "int", def: "1"},
	{name: "--config_dir", kind: "text"},
	{name: "--use_kernels", kind: "choice", choices: []string{"auto", "true", "false"}, def: "auto"},
	{name: "--moldir", kind: "text"},
	{name: "--reuse", kind: "flag"},
	{name: "--num_designs", kind: "int", def: "10000"},
	{name: "--diffusion_batch_size", kind: "int"},
	{name: "--design_checkpoints", kind: "many"},
	{name: "--step_scale", kind: "text"},
	{name: "--noise_scale", kind: "text"},
	{name: "--skip_inverse_folding", kind: "flag"},
	{name: "--inverse_fold_num_sequences", kind: "int", def: "1"},
	{name: "--inverse_fold_checkpoint", kind: "text"},
	{name: "--inverse_fold_avoid", kind: "text"},
	{name: "--only_inverse_fold", kind: "flag"},
	{name: "--folding_checkpoint", kind: "text"},
	{name: "--affinity_checkpoint", kind: "text"},
	{name: "--budget", kind: "int", def: "30"},
	{name: "--alpha", kind: "float"},
	{name: "--filter_biased", kind: "choice", choices: []string{"true", "false"}, def: "true"},
	{name: "--metrics_override", kind: "many"},
	{name: "--additional_filters", kind: "many"},
	{name: "--size_buckets", kind: "many"},
	{name: "--refolding_rmsd_threshold", kind: "float"},
	{name: "--no_subprocess", kind: "flag"},
	{name: "--steps", kind: "many", choices: stepNames},
	{name: "--force_download", kind: "flag"},
	{name: "--models_token", kind: "text"},
	{name: "--cache", kind: "text"},
}

const usage = "usage: boltzgen run [-h] [--protocol PROTOCOL] [--output OUTPUT] ... design_spec [design_spec ...]"

func run(args []string) int {
	if len(args) > 0 && args[0] == stepArg {
		return step(args[1:])
	}
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, "usage: boltzgen [-h] {run,check,configure,execute,download,merge} ...\nboltzgen: error: the following arguments are required: command\n")
		return 2
	}
	if args[0] != "run" {
		fmt.Fprintf(os.Stderr, "usage: boltzgen [-h] {run,check,configure,execute,download,merge} ...\n"+
			"boltzgen: error: argument command: invalid choice: '%s' (choose from 'run', 'check', 'configure', 'execute', 'download', 'merge')\n", args[0])
		return 2
	}
	values, specs, code := parse(args[1:])
	if code >= 0 {
		return code
	}
	return pipeline(values, specs)
}

// parse reads the options of boltzgen run as argparse does: --name value or --name=value,
// any unambiguous prefix of a name, nargs="+" options taking every value up to the next
// option. It returns -1 as the code to go on.
func parse(args []string) (map[string][]string, []string, int) {
	values := map[string][]string{}
	var specs, unknown []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "-h" || a == "--help" {
			help()
			return nil, nil, 0
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			specs = append(specs, a)
			continue
		}
		name, inline, hasInline := strings.Cut(a, "=")
		opt, err := lookup(name)
		if err != "" {
			if err == "unknown" {
				unknown = append(unknown, a)
				continue
			}
			return nil, nil, argError(err)
		}
		switch opt.kind {
		case "flag":
			if hasInline {
				return nil, nil, argError(fmt.Sprintf("argument %s: ignored explicit argument '%s'", opt.name, inline))
			}
			values[opt.name] = []string{"true"}
			continue
		case "many":
			var vs []string
			if hasInline {
				vs = append(vs, inline)
			}
			for i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				i++
				vs = append(vs, args[i])
			}
			if len(vs) == 0 {
				return nil, nil, argError(fmt.Sprintf("argument %s: expected at least one argument", opt.name))
			}
			for _, v := range vs {
				if opt.choices != nil && !slices.Contains(opt.choices, v) {
					return nil, nil, argError(fmt.Sprintf("argument %s: invalid choice: '%s' (choose from %s)", opt.name, v, choiceList(opt.choices)))
				}
			}
			values[opt.name] = append(values[opt.name], vs...)
			continue
		}
		v := inline
		if !hasInline {
			if i+1 >= len(args) || strings.HasPrefix(args[i+1], "-") && len(args[i+1]) > 1 && !isNumber(args[i+1]) {
				return nil, nil, argError(fmt.Sprintf("argument %s: expected one argument", opt.name))
			}
			i++
			v = args[i]
		}
		switch opt.kind {
		case "int":
			if _, err := strconv.Atoi(v); err != nil {
				return nil, nil, argError(fmt.Sprintf("argument %s: invalid int value: '%s'", opt.name, v))
			}
		case "float":
			if !isNumber(v) {
				return nil, nil, argError(fmt.Sprintf("argument %s: invalid float value: '%s'", opt.name, v))
			}
		case "choice":
			if !slices.Contains(opt.choices, v) {
				return nil, nil, argError(fmt.Sprintf("argument %s: invalid choice: '%s' (choose from %s)", opt.name, v, choiceList(opt.choices)))
			}
		}
		values[opt.name] = []string{v}
	}
	if len(specs) == 0 {
		return nil, nil, argError("the following arguments are required: design_spec")
	}
	if len(unknown) > 0 {
		fmt.Fprintf(os.Stderr, "%s\nboltzgen: error: unrecognized arguments: %s\n", usage, strings.Join(unknown, " "))
		return nil, nil, 2
	}
	for _, o := range runOptions {
		if _, ok := values[o.name]; !ok && o.def != "" {
			values[o.name] = []string{o.def}
		}
	}
	return values, specs, -1
}

// lookup finds an option by its name or an unambiguous prefix of it.
func lookup(name string) (option, string) {
	var matches []option
	for _, o := range runOptions {
		if o.name == name {
			return o, ""
		}
		if strings.HasPrefix(o.name, name) && len(name) > 2 {
			matches = append(matches, o)
		}
	}
	switch len(matches) {
	case 0:
		return option{}, "unknown"
	case 1:
		return matches[0], ""
	}
	names := make([]string, len(matches))
	for i, m := range matches {
		names[i] = m.name
	}
	return option{}, fmt.Sprintf("ambiguous option: %s could match %s", name, strings.Join(names, ", "))
}

func isNumber(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

func choiceList(cs []string) string {
	q := make([]string, len(cs))
	for i, c := range cs {
		q[i] = "'" + c + "'"
	}
	return strings.Join(q, ", ")
}

func argError(msg string) int {
	fmt.Fprintf(os.Stderr, "%s\nboltzgen run: error: %s\n", usage, msg)
	return 2
}

func help() {
	var b strings.Builder
	b.WriteString(usage + "\n\nBoltzgen binder design pipeline\n\npositional arguments:\n  design_spec  Path(s) to design specification YAML file(s)\n\noptions:\n  -h, --help  show this help message and exit\n")
	for _, o := range runOptions {
		meta := ""
		switch o.kind {
		case "choice":
			meta = " {" + strings.Join(o.choices, ",") + "}"
		case "many":
			meta = " " + strings.ToUpper(strings.TrimPrefix(o.name, "--")) + " [...]"
		case "int", "float", "text":
			meta = " " + strings.ToUpper(strings.TrimPrefix(o.name, "--"))
		}
		fmt.Fprintf(&b, "  %s%s\n", o.name, meta)
	}
	fmt.Print(b.String())
}

// runState is one pipeline: what the spec asks for and where the results go.
type runState struct {
	spec      string // path of the spec
	text      string
	behaviour string
	output    string
	designs   int
	budget    int
	protocol  string
	binderLen int
}

// pipeline checks the spec as BoltzGen's configure step does, then runs the steps as
// subprocesses, each announced by BoltzGen's banner.
func pipeline(values map[string][]string, specs []string) int {
	if len(values["--output"]) == 0 {
		fmt.Println("No output directory specified. Exiting.")
		return 0
	}
	r := &runState{spec: specs[0], output: values["--output"][0], protocol: values["--protocol"][0]}
	r.designs, _ = strconv.Atoi(values["--num_designs"][0])
	r.budget, _ = strconv.Atoi(values["--budget"][0])
	b, err := os.ReadFile(r.spec)
	if err != nil {
		return traceback(fmt.Sprintf("FileNotFoundError: [Errno 2] No such file or directory: '%s'", r.spec))
	}
	r.text = string(b)
	r.behaviour = standin.Behaviour(r.text, "# boltzgentest: ")
	n, err := checkSpec(r.spec, r.text)
	if err != nil {
		return traceback(err.Error())
	}
	r.binderLen = n
	fmt.Println("\n=== Configuring pipeline ===")
	if err := os.MkdirAll(filepath.Join(r.output, "config"), 0o755); err != nil {
		return traceback("OSError: " + err.Error())
	}
	fmt.Printf("Using kernels: %s\nUsing diffusion batch size: 1\nNumber of diffusion batches: %d\n", values["--use_kernels"][0], r.designs)
	steps := []string{"design", "inverse_folding", "design_folding", "folding", "analysis", "filtering"}
	switch r.protocol {
	case "protein-small_molecule":
		steps = []string{"design", "inverse_folding", "design_folding", "folding", "affinity", "analysis", "filtering"}
	case "protein-redesign":
		steps = []string{"design", "inverse_folding", "folding", "analysis", "filtering"}
	}
	var manifest strings.Builder
	for _, s := range steps {
		cfg := filepath.Join(r.output, "config", s+".yaml")
		body := fmt.Sprintf("step: %s\nspec: %s\noutput: %s\nnum_designs: %d\nbudget: %d\nbehaviour: %q\nbinder_length: %d\nprotocol: %s\n",
			s, r.spec, r.output, r.designs, r.budget, r.behaviour, r.binderLen, r.protocol)
		if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
			return traceback("OSError: " + err.Error())
		}
		fmt.Fprintf(&manifest, "- name: %s\n  config: config/%s.yaml\n", s, s)
	}
	if err := os.WriteFile(filepath.Join(r.output, "steps.yaml"), []byte(manifest.String()), 0o644); err != nil {
		return traceback("OSError: " + err.Error())
	}
	fmt.Println("\n=== Executing pipeline ===")
	for i, s := range steps {
		fmt.Println("**************************************************")
		fmt.Printf("Pipeline step %d of %d: %s\n", i+1, len(steps), s)
		cfg := filepath.Join(r.output, "config", s+".yaml")
		fmt.Printf("Running command: python main.py %s\n", cfg)
		cmd := exec.Command(os.Args[0], stepArg, cfg)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		start := time.Now()
		if err := cmd.Run(); err != nil {
			code := 1
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
			return traceback(fmt.Sprintf("subprocess.CalledProcessError: Command '['python', 'main.py', '%s']' returned non-zero exit status %d.", cfg, code))
		}
		fmt.Printf("✓ Step %s completed successfully in %.1fs\n", s, time.Since(start).Seconds())
	}
	return 0
}

// checkSpec reads the spec as YAML and checks that the files it names exist beside it,
// returning the shortest length of its designed protein (20 when it has none).
func checkSpec(path, text string) (int, error) {
	var spec struct {
		Entities []map[string]map[string]any `yaml:"entities"`
	}
	if err := yaml.Unmarshal([]byte(text), &spec); err != nil {
		return 0, fmt.Errorf("yaml.scanner.ScannerError: %v", err)
	}
	if len(spec.Entities) == 0 {
		return 0, fmt.Errorf("ValueError: No entities found in design specification %s", path)
	}
	length := 0
	for _, e := range spec.Entities {
		for kind, body := range e {
			switch kind {
			case "file":
				p, _ := body["path"].(string)
				if _, err := os.Stat(filepath.Join(filepath.Dir(path), p)); err != nil {
					return 0, fmt.Errorf("FileNotFoundError: [Errno 2] No such file or directory: '%s'", filepath.Join(filepath.Dir(path), p))
				}
			case "protein":
				seq := fmt.Sprint(body["sequence"])
				if strings.ContainsAny(seq, "0123456789") && length == 0 {
					lo, _, _ := strings.Cut(seq, "..")
					length, _ = strconv.Atoi(strings.TrimLeft(lo, "ACDEFGHIKLMNPQRSTVWY"))
				}
			case "dna", "rna", "ligand":
			default:
				return 0, fmt.Errorf("ValueError: Invalid entity type: %s", kind)
			}
		}
	}
	if length <= 0 {
		length = 20
	}
	return length, nil
}

// boltzgenPy is where BoltzGen's tracebacks point.
var boltzgenPy = standin.Frame{File: "/usr/lib/python3/site-packages/boltzgen/cli/boltzgen.py", Line: 1}

// traceback prints a Python traceback ending in last and returns the exit status, 1.
func traceback(last string) int {
	fmt.Fprint(os.Stderr, boltzgenPy.Traceback("main", last))
	return 1
}

// step runs one pipeline step from its config, as main.py does.
func step(args []string) int {
	b, err := os.ReadFile(args[0])
	if err != nil {
		return traceback("FileNotFoundError: " + err.Error())
	}
	var cfg struct {
		Step         string `yaml:"step"`
		Spec         string `yaml:"spec"`
		Output       string `yaml:"output"`
		NumDesigns   int    `yaml:"num_designs"`
		Budget       int    `yaml:"budget"`
		Behaviour    string `yaml:"behaviour"`
		BinderLength int    `yaml:"binder_length"`
		Protocol     string `yaml:"protocol"`
	}
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		return traceback("omegaconf.errors.ConfigKeyError: " + err.Error())
	}
	stem := strings.TrimSuffix(filepath.Base(cfg.Spec), filepath.Ext(cfg.Spec))
	switch {
	case cfg.Step == "design" && cfg.Behaviour == "crash":
		return traceback(standin.CUDACrash)
	case cfg.Step == "folding" && cfg.Behaviour == "oom":
		return traceback("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 15.77 GiB")
	case cfg.Step == "filtering" && cfg.Behaviour == "nofinal":
		fmt.Println("Filtering: no aggregate metrics found; nothing to rank")
		return 0
	case cfg.Step == "design" && cfg.Behaviour == "hang":
		// The stuck helper is never ended: only stopping the process group ends it.
		_, err := standin.Stall("", 300, time.Second, func(i int) {
			fmt.Printf("Predicting DataLoader 0:   0%%|          | %d/%d [00:%02d<?, ?it/s] designing slowly\n", i%cfg.NumDesigns, cfg.NumDesigns, i%60)
		})
		if err != nil {
			return traceback("OSError: " + err.Error())
		}
	}
	dir := filepath.Join(cfg.Output, "intermediate_designs")
	switch cfg.Step {
	case "design":
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return traceback("OSError: " + err.Error())
		}
		for i := range cfg.NumDesigns {
			if cfg.Behaviour == "slow" {
				time.Sleep(200 * time.Millisecond)
			}
			name := fmt.Sprintf("%s_%d", stem, i)
			if err := os.WriteFile(filepath.Join(dir, name+".cif"), []byte(structure(name, designSequence(cfg.Spec, i, cfg.BinderLength))), 0o644); err != nil {
				return traceback("OSError: " + err.Error())
			}
			fmt.Printf("Predicting DataLoader 0: %3d%%|#####     | %d/%d [00:01<00:01, 1.00it/s]\n", 100*(i+1)/cfg.NumDesigns, i+1, cfg.NumDesigns)
		}
	case "inverse_folding", "folding", "design_folding", "affinity", "analysis":
		refold := filepath.Join(cfg.Output, "intermediate_designs_inverse_folded", "refold_cif")
		if err := os.MkdirAll(refold, 0o755); err != nil {
			return traceback("OSError: " + err.Error())
		}
		for i := range cfg.NumDesigns {
			name := fmt.Sprintf("%s_%d", stem, i)
			if err := os.WriteFile(filepath.Join(refold, name+".cif"), []byte(structure(name, designSequence(cfg.Spec, i, cfg.BinderLength))), 0o644); err != nil {
				return traceback("OSError: " + err.Error())
			}
			fmt.Printf("Predicting DataLoader 0: %3d%%|#####     | %d/%d [00:01<00:01, 1.00it/s]\n", 100*(i+1)/cfg.NumDesigns, i+1, cfg.NumDesigns)
		}
	case "filtering":
		return filter(cfg.Output, cfg.Spec, stem, cfg.NumDesigns, cfg.Budget, cfg.BinderLength, cfg.Protocol, cfg.Behaviour == "filtered")
	}
	return 0
}

// filter writes final_ranked_designs as task/filter/filter.py does: every design ranked by
// quality (final_rank 1 the best), the top ten, and a diverse final set of budget designs
// named by their quality rank, which need not be the budget best.
func filter(output, spec, stem string, n, budget, binderLen int, protocol string, failAll bool) int {
	type design struct {
		name    string
		quality float64
		rank    int
		seq     string
	}
	designs := make([]*design, n)
	for i := range n {
		h := sha256.Sum256([]byte(fmt.Sprintf("%s %d", spec, i)))
		designs[i] = &design{name: fmt.Sprintf("%s_%d", stem, i), quality: float64(h[0]) / 255, seq: designSequence(spec, i, binderLen)}
	}
	sort.SliceStable(designs, func(i, j int) bool { return designs[i].quality > designs[j].quality })
	for i, d := range designs {
		d.rank = i + 1
	}
	// The diverse selection passes over the second best when there is room to.
	selected := designs
	if n > budget && n > 1 {
		selected = append([]*design{designs[0]}, designs[2:]...)
	}
	selected = selected[:min(budget, len(selected))]
	// Filter ranks designs by the filters they pass before their metrics and keeps its
	// budget whatever they pass (filter.py:396-630): failing them shows in pass_filters.
	passed, pass := "7", "True"
	if failAll {
		passed, pass = "3", "False"
	}
	out := filepath.Join(output, "final_ranked_designs")
	finalDir := filepath.Join(out, fmt.Sprintf("final_%d_designs", budget))
	topDir := filepath.Join(out, "intermediate_ranked_10_designs")
	for _, d := range []string{filepath.Join(finalDir, "before_refolding"), filepath.Join(topDir, "before_refolding")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return traceback("OSError: " + err.Error())
		}
	}
	digits := len(strconv.Itoa(n))
	header := []string{"id", "final_rank", "designed_sequence", "designed_chain_sequence", "num_design"}
	if protocol == "protein-small_molecule" {
		header = append(header, "affinity_probability_binary1")
	}
	header = append(header, "design_to_target_iptm", "min_design_to_target_pae", "design_ptm", "filter_rmsd",
		"designfolding-filter_rmsd", "plip_saltbridge_refolded", "plip_hbonds_refolded", "delta_sasa_refolded", "loop", "helix", "sheet",
		"file_name", "num_filters_passed", "pass_filters", "max_rank", "secondary_rank", "quality_score", "iptm", "ptm", "liability_score")
	row := func(d *design) []string {
		q := d.quality
		r := []string{d.name, strconv.Itoa(d.rank), d.seq, d.seq, strings.TrimPrefix(d.name, stem+"_")}
		if protocol == "protein-small_molecule" {
			r = append(r, f(0.3+0.6*q))
		}
		return append(r, f(0.5+0.4*q), f(3+5*(1-q)), f(0.6+0.3*q), f(1.2*(1-q)), f(1.5*(1-q)), strconv.Itoa(int(4*q)), strconv.Itoa(int(9*q)),
			f(800+600*q), f(0.3), f(0.6), f(0.1), d.name+".cif", passed, pass, strconv.Itoa(d.rank), strconv.Itoa(d.rank),
			f(1-float64(d.rank-1)/float64(max(n-1, 1))), f(0.5+0.4*q), f(0.6+0.3*q), "")
	}
	write := func(path string, ds []*design) error {
		file, err := os.Create(path)
		if err != nil {
			return err
		}
		w := csv.NewWriter(file)
		_ = w.Write(header)
		for _, d := range ds {
			_ = w.Write(row(d))
		}
		w.Flush()
		if err := w.Error(); err != nil {
			file.Close()
			return err
		}
		return file.Close()
	}
	for i, d := range designs[:min(10, n)] {
		name := fmt.Sprintf("rank%0*d_%s.cif", digits, i, d.name)
		if err := os.WriteFile(filepath.Join(topDir, name), []byte(structure(d.name, d.seq)), 0o644); err != nil {
			return traceback("OSError: " + err.Error())
		}
	}
	for _, d := range selected {
		name := fmt.Sprintf("rank%0*d_%s.cif", digits, d.rank, d.name)
		for _, dir := range []string{finalDir, filepath.Join(finalDir, "before_refolding")} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(structure(d.name, d.seq)), 0o644); err != nil {
				return traceback("OSError: " + err.Error())
			}
		}
	}
	if err := write(filepath.Join(out, fmt.Sprintf("final_designs_metrics_%d.csv", budget)), selected); err != nil {
		return traceback("OSError: " + err.Error())
	}
	fmt.Println("Files + CSV saved to", out)
	if err := write(filepath.Join(out, "all_designs_metrics.csv"), designs); err != nil {
		return traceback("OSError: " + err.Error())
	}
	return 0
}

func f(v float64) string { return strconv.FormatFloat(v, 'f', 4, 64) }

// designSequence is design i's binder sequence, made up from the spec.
func designSequence(spec string, i, length int) string {
	const letters = "ACDEFGHIKLMNPQRSTVWY"
	b := make([]byte, length)
	h := sha256.Sum256([]byte(fmt.Sprintf("%s seq %d", spec, i)))
	for k := range b {
		b[k] = letters[int(h[k%len(h)]+byte(k))%len(letters)]
	}
	return string(b)
}

// structure is an mmCIF of a design's binder chain, one CA per residue.
func structure(name, seq string) string {
	var b strings.Builder
	b.WriteString(standin.AtomSiteLoop(name, "group_PDB", "id", "type_symbol", "label_atom_id", "label_comp_id",
		"label_asym_id", "label_seq_id", "Cartn_x", "Cartn_y", "Cartn_z", "auth_seq_id", "auth_asym_id", "pdbx_PDB_model_num"))
	for i := range len(seq) {
		fmt.Fprintf(&b, "ATOM %d C CA %s B %d %.3f 0.000 0.000 %d B 1\n", i+1, standin.ThreeLetter[seq[i]], i+1, 3.8*float64(i), i+1)
	}
	return b.String()
}
