// Command boltz is a stand-in for Boltz-2's command line, a test fixture of package
// boltztest (see there for the behaviours that target names choose). It follows
// src/boltz/main.py and src/boltz/data/write/writer.py of jwohlwend/boltz: the click
// options of `boltz predict` and click's errors, the messages that matter to a caller,
// the checks of process_input, and the output layout, file names and JSON keys. Its
// numbers are made up, deterministically from each target's name.
package main

import (
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

// boltzPredict is boltz predict (main.py), its options with their click defaults.
var boltzPredict = standin.Command{
	Usage:   "boltz predict [OPTIONS] DATA",
	Try:     "boltz predict --help",
	Summary: "Run predictions with Boltz.",
	Args:    []string{"DATA"},
	Options: []standin.Option{
		{Name: "--out_dir", Kind: standin.Path, Default: "./"},
		{Name: "--cache", Kind: standin.Path, Default: "~/.boltz"},
		{Name: "--checkpoint", Kind: standin.ExistingPath},
		{Name: "--devices", Kind: standin.Int, Default: "1"},
		{Name: "--accelerator", Kind: standin.Choice, Choices: []string{"gpu", "cpu", "tpu"}, Default: "gpu"},
		{Name: "--recycling_steps", Kind: standin.Int, Default: "3"},
		{Name: "--sampling_steps", Kind: standin.Int, Default: "200"},
		{Name: "--diffusion_samples", Kind: standin.Int, Default: "1"},
		{Name: "--max_parallel_samples", Kind: standin.Int, Default: "5"},
		{Name: "--step_scale", Kind: standin.Float},
		{Name: "--write_full_pae", Kind: standin.Flag},
		{Name: "--write_full_pde", Kind: standin.Flag},
		{Name: "--output_format", Kind: standin.Choice, Choices: []string{"pdb", "mmcif"}, Default: "mmcif"},
		{Name: "--num_workers", Kind: standin.Int, Default: "2"},
		{Name: "--override", Kind: standin.Flag},
		{Name: "--seed", Kind: standin.Int},
		{Name: "--use_msa_server", Kind: standin.Flag},
		{Name: "--msa_server_url", Kind: standin.Text, Default: "https://api.colabfold.com"},
		{Name: "--msa_pairing_strategy", Kind: standin.Text, Default: "greedy"},
		{Name: "--msa_server_username", Kind: standin.Text},
		{Name: "--msa_server_password", Kind: standin.Text},
		{Name: "--api_key_header", Kind: standin.Text},
		{Name: "--api_key_value", Kind: standin.Text},
		{Name: "--use_potentials", Kind: standin.Flag},
		{Name: "--model", Kind: standin.Choice, Choices: []string{"boltz1", "boltz2"}, Default: "boltz2"},
		{Name: "--method", Kind: standin.Text},
		{Name: "--preprocessing-threads", Kind: standin.Int, Default: "2"},
		{Name: "--affinity_mw_correction", Kind: standin.Flag},
		{Name: "--sampling_steps_affinity", Kind: standin.Int, Default: "200"},
		{Name: "--diffusion_samples_affinity", Kind: standin.Int, Default: "5"},
		{Name: "--affinity_checkpoint", Kind: standin.ExistingPath},
		{Name: "--max_msa_seqs", Kind: standin.Int, Default: "8192"},
		{Name: "--subsample_msa", Kind: standin.Flag},
		{Name: "--num_subsampled_msa", Kind: standin.Int, Default: "1024"},
		{Name: "--no_kernels", Kind: standin.Flag},
		{Name: "--write_embeddings", Kind: standin.Flag},
	},
}

func run(args []string) int {
	if len(args) == 0 || args[0] == "--help" {
		fmt.Print("Usage: boltz [OPTIONS] COMMAND [ARGS]...\n\n  Boltz.\n\nOptions:\n  --help  Show this message and exit.\n\nCommands:\n  predict  Run predictions with Boltz.\n")
		return 0
	}
	if args[0] != "predict" {
		return standin.UsageError("boltz [OPTIONS] COMMAND [ARGS]...", "boltz --help", fmt.Sprintf("No such command '%s'.", args[0]))
	}
	opts, data, code := boltzPredict.Parse(args[1:])
	if opts == nil {
		return code
	}
	if _, err := os.Stat(data[0]); err != nil {
		return boltzPredict.Fail(fmt.Sprintf("Invalid value for 'DATA': Path '%s' does not exist.", data[0]))
	}
	if opts["--use_msa_server"] == "true" {
		fmt.Fprintln(os.Stderr, "[boltz stand-in] refused --use_msa_server: the engine must hand Boltz the alignments searched ahead of the run, never let it search")
		return 2
	}
	fmt.Printf("[boltz stand-in] %s\n", strings.Join(args, " "))
	p := &predictor{opts: opts, data: data[0]}
	return p.predict()
}

// mainPy is where Boltz's tracebacks point.
var mainPy = standin.Frame{File: "/opt/boltz/src/boltz/main.py", Line: 460, Code: "raise"}

// traceback prints a Python traceback ending in err, as traceback.print_exc does.
func traceback(where, err string) { fmt.Fprint(os.Stderr, mainPy.Traceback(where, err)) }

// chain is one chain of a processed input, in Boltz's order: grouped by entity. MSA is
// the name of its processed alignment (processed/msa/<MSA>.json), or -1 for none.
type chain struct {
	Name     string `json:"chain_name"`
	Type     string `json:"mol_type"`
	Entity   int    `json:"entity_id"`
	Residues int    `json:"num_residues"`
	MSA      any    `json:"msa_id"`
}

// record is a processed input (processed/records/<id>.json).
type record struct {
	ID       string  `json:"id"`
	Chains   []chain `json:"chains"`
	Affinity bool    `json:"affinity"`
}

// group is an entity of an input: the entries of one type and sequence.
type group struct {
	typ, seq string
	ids      []string
	msa      any // nil: auto, "empty", or a path
	residues int
}

type predictor struct {
	opts map[string]string
	data string
	out  string
}

func (p *predictor) flag(name string) bool { return p.opts[name] == "true" }

func (p *predictor) int(name string) int {
	n, _ := strconv.Atoi(p.opts[name])
	return n
}

func (p *predictor) predict() int {
	if p.opts["--accelerator"] == "cpu" {
		fmt.Println("Running on CPU, this will be slow. Consider using a GPU.")
	}
	data := strings.TrimSuffix(p.data, "/")
	p.out = filepath.Join(p.opts["--out_dir"], "boltz_results_"+strings.TrimSuffix(filepath.Base(data), filepath.Ext(data)))
	fmt.Println("Checking input data.")
	inputs := []string{data}
	if st, err := os.Stat(data); err == nil && st.IsDir() {
		entries, _ := os.ReadDir(data)
		inputs = nil
		for _, e := range entries {
			path := filepath.Join(data, e.Name())
			ext := strings.ToLower(filepath.Ext(e.Name()))
			if e.IsDir() {
				traceback("check_inputs", fmt.Sprintf("RuntimeError: Found directory %s instead of .fasta or .yaml.", path))
				return 1
			}
			if !slices.Contains([]string{".fa", ".fas", ".fasta", ".yml", ".yaml"}, ext) {
				traceback("check_inputs", fmt.Sprintf("RuntimeError: Unable to parse filetype %s, please provide a .fasta or .yaml file.", ext))
				return 1
			}
			inputs = append(inputs, path)
		}
	}
	for _, d := range []string{"msa", "processed/records", "processed/structures", "processed/msa", "predictions"} {
		if err := os.MkdirAll(filepath.Join(p.out, d), 0o755); err != nil {
			traceback("process_inputs", "OSError: "+err.Error())
			return 1
		}
	}
	fmt.Printf("Processing %d inputs with %d threads.\n", len(inputs), min(p.int("--preprocessing-threads"), len(inputs)))
	var records []record
	for i, path := range inputs {
		rec, err := p.process(path)
		if err != nil {
			traceback("process_input", "RuntimeError: "+err.Error())
			fmt.Printf("Failed to process %s. Skipping. Error: %s.\n", path, err)
		} else {
			records = append(records, *rec)
			writeJSON(filepath.Join(p.out, "processed", "records", rec.ID+".json"), rec)
		}
		fmt.Fprintf(os.Stderr, "\r%s", standin.ProgressBar("", i+1, len(inputs)))
	}
	fmt.Fprintln(os.Stderr)
	writeJSON(filepath.Join(p.out, "processed", "manifest.json"), map[string]any{"records": records})
	sort.Slice(records, func(i, j int) bool { return records[i].ID < records[j].ID })

	// Without --override, targets predicted before are skipped (filter_inputs_structure).
	all := records
	if !p.flag("--override") {
		records = slices.DeleteFunc(slices.Clone(records), func(r record) bool {
			_, err := os.Stat(filepath.Join(p.out, "predictions", r.ID))
			return err == nil
		})
		if len(records) < len(all) {
			fmt.Printf("Found some existing predictions (%d), skipping and running only the missing ones, if any.\n", len(all)-len(records))
		}
	}
	if len(records) > 0 {
		fmt.Printf("Running structure prediction for %d input%s\n", len(records), plural(len(records)))
	}
	failed := 0
	fmt.Printf("\r%s", standin.ProgressBar("Predicting DataLoader 0: ", 0, len(records)))
	for i, rec := range records {
		switch {
		case strings.HasPrefix(rec.ID, "unprep"):
			// inferencev2.py: the data loader prints this and returns the first target.
			const msg = "Featurizer failed on %s with error a cannot be empty unless no samples are taken. Skipping.\n"
			fmt.Printf(msg, rec.ID)
			if i == 0 {
				for range 1000 {
					time.Sleep(20 * time.Millisecond) // each time Boltz prepares the target anew
					fmt.Printf(msg, rec.ID)
				}
				traceback("predict", "RecursionError: maximum recursion depth exceeded in comparison")
				return 1
			}
			p.write(records[0])
		case strings.HasPrefix(rec.ID, "crash"):
			fmt.Println()
			traceback("predict", standin.CUDACrash)
			return 1
		case strings.HasPrefix(rec.ID, "oom"):
			fmt.Println("\n| WARNING: ran out of memory, skipping batch")
			failed++
		case strings.HasPrefix(rec.ID, "slow"):
			if !p.slow(rec.ID) {
				return 1
			}
			p.write(rec)
		default:
			p.write(rec)
		}
		fmt.Printf("\r%s", standin.ProgressBar("Predicting DataLoader 0: ", i+1, len(records)))
	}
	fmt.Printf("\nNumber of failed examples: %d\n", failed)

	var affinity []record
	for _, r := range all {
		_, err := os.Stat(filepath.Join(p.out, "predictions", r.ID, "affinity_"+r.ID+".json"))
		if r.Affinity && (p.flag("--override") || err != nil) {
			affinity = append(affinity, r)
		}
	}
	if len(affinity) == 0 {
		return 0
	}
	fmt.Print("\nPredicting property: affinity\n\nChecking input data for affinity.\n")
	fmt.Printf("Running affinity prediction for %d input%s\n", len(affinity), plural(len(affinity)))
	failed = 0
	fmt.Printf("\r%s", standin.ProgressBar("Predicting DataLoader 0: ", 0, len(affinity)))
	for i, rec := range affinity {
		time.Sleep(20 * time.Millisecond)
		dir := filepath.Join(p.out, "predictions", rec.ID)
		if _, err := os.Stat(filepath.Join(dir, "pre_affinity_"+rec.ID+".npz")); err != nil {
			traceback("predict", fmt.Sprintf("FileNotFoundError: [Errno 2] No such file or directory: '%s'", filepath.Join(dir, "pre_affinity_"+rec.ID+".npz")))
			return 1
		}
		if strings.HasPrefix(rec.ID, "affoom") {
			fmt.Println("\n| WARNING: ran out of memory, skipping batch")
			failed++
		} else {
			s := standin.Random(rec.ID + "/affinity")
			writeOrdered(filepath.Join(dir, "affinity_"+rec.ID+".json"), []kv{
				{"affinity_pred_value", standin.Round(-1 + 3*s(0))}, {"affinity_probability_binary", standin.Round(s(1))},
				{"affinity_pred_value1", standin.Round(-1 + 3*s(2))}, {"affinity_probability_binary1", standin.Round(s(3))},
				{"affinity_pred_value2", standin.Round(-1 + 3*s(4))}, {"affinity_probability_binary2", standin.Round(s(5))},
			})
		}
		fmt.Printf("\r%s", standin.ProgressBar("Predicting DataLoader 0: ", i+1, len(affinity)))
	}
	fmt.Printf("\nNumber of failed examples: %d\n", failed)
	return 0
}

func plural(n int) string {
	if n > 1 {
		return "s."
	}
	return "."
}

// slow is the structure loop on a slow target: 30 s of progress lines, with a helper
// process that ignores SIGTERM, so that a cancel must stop the whole process group.
func (p *predictor) slow(id string) bool {
	stop, err := standin.Stall("hang.pid", 300, 100*time.Millisecond, func(i int) {
		fmt.Printf("[boltz stand-in] %s: step %d of 300\n", id, i+1)
	})
	if err != nil {
		traceback("predict", "OSError: "+err.Error())
		return false
	}
	stop()
	return true
}

// process checks one input as process_input and parse_boltz_schema do and returns its
// record; alignments the input needs are written to msa/ as compute_msa does.
func (p *predictor) process(path string) (*record, error) {
	id := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	if ext := strings.ToLower(filepath.Ext(path)); ext != ".yaml" && ext != ".yml" {
		return nil, fmt.Errorf("the stand-in reads only YAML inputs, not %s", ext)
	}
	if strings.HasPrefix(id, "skip") {
		return nil, fmt.Errorf("Invalid SMILES for ligand: simulated parse failure")
	}
	doc, err := standin.ReadYAML(path)
	if err != nil {
		return nil, err
	}
	if v, ok := doc["version"]; ok && fmt.Sprint(v) != "1" {
		return nil, fmt.Errorf("Invalid version %v in input!", v)
	}
	items, _ := doc["sequences"].([]any)
	var groups []*group
	for _, it := range items {
		m, _ := it.(map[string]any)
		if len(m) != 1 {
			return nil, fmt.Errorf("an entry of sequences has %d keys", len(m))
		}
		var typ string
		var body map[string]any
		for k, v := range m {
			typ, body = strings.ToLower(k), asMap(v)
		}
		if !slices.Contains([]string{"protein", "dna", "rna", "ligand"}, typ) {
			return nil, fmt.Errorf("Invalid entity type: %s", typ)
		}
		var seq string
		residues := 1
		switch {
		case typ != "ligand":
			seq = fmt.Sprint(body["sequence"])
			residues = len(seq)
		case body["smiles"] != nil:
			seq = fmt.Sprint(body["smiles"])
		default:
			seq = fmt.Sprint(body["ccd"])
			if l, ok := body["ccd"].([]any); ok {
				residues = len(l)
			}
		}
		var ids []string
		switch v := body["id"].(type) {
		case string:
			ids = []string{v}
		case []any:
			for _, x := range v {
				s, ok := x.(string)
				if !ok {
					return nil, fmt.Errorf("chain id %v is not a string", x)
				}
				ids = append(ids, s)
			}
		default:
			return nil, fmt.Errorf("chain id %v is not a string", body["id"])
		}
		msa := body["msa"]
		if msa == "" {
			msa = nil
		}
		i := slices.IndexFunc(groups, func(g *group) bool { return g.typ == typ && g.seq == seq })
		if i < 0 {
			groups = append(groups, &group{typ: typ, seq: seq, msa: msa, residues: residues})
			i = len(groups) - 1
		} else if typ == "protein" && fmt.Sprint(groups[i].msa) != fmt.Sprint(msa) {
			return nil, fmt.Errorf("All proteins with the same sequence must share the same MSA!")
		}
		groups[i].ids = append(groups[i].ids, ids...)
	}
	rec := &record{ID: id}
	custom, auto := false, false
	seen := map[string]bool{}
	for e, g := range groups {
		msa := any(-1)
		if g.typ == "protein" {
			switch g.msa {
			case nil:
				auto = true
			case "empty":
			default:
				custom, msa = true, fmt.Sprint(g.msa)
			}
		}
		for _, name := range g.ids {
			if seen[name] {
				return nil, fmt.Errorf("chain %s is given twice", name)
			}
			seen[name] = true
			rec.Chains = append(rec.Chains, chain{Name: name, Type: g.typ, Entity: e, Residues: g.residues, MSA: msa})
		}
	}
	if custom && auto {
		return nil, fmt.Errorf("Cannot mix custom and auto-generated MSAs in the same input!")
	}
	for _, pr := range asList(doc["properties"]) {
		aff := asMap(asMap(pr)["affinity"])
		binder, ok := aff["binder"].(string)
		if !ok {
			return nil, fmt.Errorf("Binder must be a single chain.")
		}
		i := slices.IndexFunc(rec.Chains, func(c chain) bool { return c.Name == binder })
		if i < 0 {
			return nil, fmt.Errorf("Could not find binder with name %s in the input!", binder)
		}
		if rec.Chains[i].Type != "ligand" {
			return nil, fmt.Errorf("Chain %s is not a ligand! Affinity is currently only supported for ligands.", binder)
		}
		if len(groups[rec.Chains[i].Entity].ids) > 1 {
			return nil, fmt.Errorf("Cannot compute affinity for a ligand that has multiple copies!")
		}
		rec.Affinity = true
	}
	for _, tm := range asList(doc["templates"]) {
		m := asMap(tm)
		path := fmt.Sprint(m["cif"])
		if m["cif"] == nil {
			path = fmt.Sprint(m["pdb"])
		}
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("[Errno 2] No such file or directory: '%s'", path)
		}
	}
	if auto {
		return nil, fmt.Errorf("Missing MSA's in input and --use_msa_server flag not set.")
	}
	if err := p.readMSAs(rec, groups); err != nil {
		return nil, err
	}
	return rec, nil
}

// readMSAs reads the alignment files the record's chains name, as process_input does: one
// processed alignment per distinct file, numbered in the order of the sorted paths, which
// each chain then names instead of the file. The stand-in keeps what it read as JSON
// (processed/msa/<target>_<n>.json) where Boltz keeps an .npz, and warns as Boltz's
// featurizer does when an alignment's first row is not the chain.
func (p *predictor) readMSAs(rec *record, groups []*group) error {
	var paths []string
	for _, c := range rec.Chains {
		if path, ok := c.MSA.(string); ok && !slices.Contains(paths, path) {
			paths = append(paths, path)
		}
	}
	slices.Sort(paths)
	for i, path := range paths {
		if _, err := os.Stat(path); err != nil {
			return fmt.Errorf("MSA file %s not found.", path)
		}
		rows, err := readMSA(path, p.int("--max_msa_seqs"))
		if err != nil {
			return err
		}
		name := fmt.Sprintf("%s_%d", rec.ID, i)
		writeJSON(filepath.Join(p.out, "processed", "msa", name+".json"), rows)
		fmt.Printf("[boltz stand-in] %s: read %d alignment rows from %s\n", name, len(rows), path)
		for k := range rec.Chains {
			c := &rec.Chains[k]
			if c.MSA != path {
				continue
			}
			c.MSA = name
			if seq := groups[c.Entity].seq; len(rows) == 0 || rows[0].Sequence != seq {
				fmt.Println("Warning: MSA does not match input sequence, creating dummy.", rec.ID)
			}
		}
	}
	return nil
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}
