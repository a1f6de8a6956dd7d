// Command rfd3 is a stand-in for RFdiffusion3's command line, a test fixture of package
// rfd3test (see there for the behaviours a structure chooses). It follows foundry's
// models/rfd3: rfd3/cli.py (typer's `design` command composing Hydra's config from
// overrides), configs/inference_engine/{base,rfdiffusion3}.yaml (the keys, their types and
// defaults), and rfd3/engine.py (example ids <spec>_<key>_<batch>, outputs
// <example>_model_<n>.cif.gz and .json, and what it logs). Its designs are made up.
package main

import (
	"compress/gzip"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/chaperone-bio/chaperone/bio"
	"github.com/chaperone-bio/chaperone/internal/standin"
)

func main() { standin.Main(run) }

// keys are the keys of RFdiffusion3's inference config as rfd3/cli.py composes it
// (configs/inference.yaml, inference_engine/{base,rfdiffusion3}.yaml); specification is a
// dict open to any key. The config is plain YAML with no schema, so Hydra takes any value
// for a key that exists ("many" for diffusion_batch_size); only Python fails on it later.
var keys = map[string]bool{}

func init() {
	for _, k := range strings.Fields(`ckpt_path num_nodes devices_per_node verbose seed inputs out_dir
		_target_ json_keys_subset skip_existing diffusion_batch_size n_batches cleanup_guideposts
		cleanup_virtual_atoms read_sequence_from_sequence_head output_full_json global_prefix
		dump_prediction_metadata_json dump_trajectories align_trajectory_structures prevalidate_inputs
		low_memory_mode inference_engine inference_sampler.kind inference_sampler.cfg_features
		inference_sampler.use_classifier_free_guidance inference_sampler.cfg_t_max inference_sampler.cfg_scale
		inference_sampler.center_option inference_sampler.s_trans inference_sampler.inference_noise_scaling_factor
		inference_sampler.allow_realignment inference_sampler.n_recycle inference_sampler.num_timesteps
		inference_sampler.step_scale inference_sampler.noise_scale inference_sampler.p inference_sampler.gamma_0
		inference_sampler.gamma_min inference_sampler.s_jitter_origin`) {
		keys[k] = true
	}
}

var defaults = map[string]string{
	"diffusion_batch_size": "8", "n_batches": "1", "inference_sampler.num_timesteps": "200", "seed": "null", "skip_existing": "True",
}

func run(args []string) int {
	if len(args) == 0 || args[0] != "design" {
		fmt.Fprint(os.Stderr, "Usage: rfd3 [OPTIONS] COMMAND [ARGS]...\nTry 'rfd3 --help' for help.\n\nError: Missing command.\n")
		return 2
	}
	args = args[1:]
	for _, a := range args {
		if a == "--help" {
			fmt.Print("Usage: rfd3 [OPTIONS]\n\n  Run design using hydra config overrides and input files.\n\nOptions:\n  --help  Show this message and exit.\n")
			return 0
		}
	}
	cfg := map[string]string{}
	for k, v := range defaults {
		cfg[k] = v
	}
	for _, a := range args {
		key, value, ok := strings.Cut(a, "=")
		switch {
		case !ok:
			fmt.Fprintf(os.Stderr, "OverrideParseException: LexerNoViableAltException: %s\n%s^\n%s", a, strings.Repeat(" ", 27), hydraGrammar)
			return 1
		case strings.Contains(value, "="):
			fmt.Fprintf(os.Stderr, "OverrideParseException: mismatched input '=' expecting <EOF>\n%s", hydraGrammar)
			return 1
		case strings.Contains(value, ",") && !quoted(value):
			fmt.Fprintf(os.Stderr, "ConfigCompositionException: Ambiguous value for argument \n'%s'\n1. To use it as a list, use key=[value1,value2]\n"+
				"2. To use it as string, quote the value: key='value1,value2'\n3. To sweep over it, add --multirun to your command line\n", a)
			return 1
		}
		add := strings.HasPrefix(key, "+")
		key = strings.TrimLeft(key, "+")
		if !keys[key] && !add && !strings.HasPrefix(key, "specification.") {
			fmt.Fprintf(os.Stderr, "ConfigCompositionException: Could not override '%s'.\nTo append to your config use +%s=%s\n", key, key, value)
			return 1
		}
		cfg[key] = strings.Trim(value, "'")
	}
	for _, k := range []string{"inputs", "out_dir"} {
		if cfg[k] == "" {
			return traceback(fmt.Sprintf("omegaconf.errors.MissingMandatoryValue: Missing mandatory value: %s\n    full_key: %s\n    object_type=dict", k, k))
		}
	}
	return design(cfg)
}

const hydraGrammar = "See https://hydra.cc/docs/1.2/advanced/override_grammar/basic for details\n"

func quoted(v string) bool { return len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'' }

// runInferencePy is where RFdiffusion3's tracebacks point.
var runInferencePy = standin.Frame{File: "/usr/lib/python3/site-packages/rfd3/run_inference.py", Line: 1}

// traceback prints a Python traceback ending in last and returns the exit status, 1.
func traceback(last string) int {
	fmt.Fprint(os.Stderr, runInferencePy.Traceback("run_inference", last))
	return 1
}

// design runs every specification of the inputs JSON, n_batches batches of
// diffusion_batch_size designs each.
func design(cfg map[string]string) int {
	inputs := cfg["inputs"]
	b, err := os.ReadFile(inputs)
	if err != nil {
		return traceback(fmt.Sprintf("FileNotFoundError: [Errno 2] No such file or directory: '%s'", inputs))
	}
	var specs map[string]map[string]any
	if err := json.Unmarshal(b, &specs); err != nil {
		return traceback("json.decoder.JSONDecodeError: " + err.Error())
	}
	size, _ := strconv.Atoi(cfg["diffusion_batch_size"])
	n, _ := strconv.Atoi(cfg["n_batches"])
	steps, _ := strconv.Atoi(cfg["inference_sampler.num_timesteps"])
	seed := cfg["seed"]
	if seed == "null" {
		seed = strconv.FormatInt(time.Now().UnixNano(), 10)
	}
	if err := os.MkdirAll(cfg["out_dir"], 0o755); err != nil {
		return traceback("OSError: " + err.Error())
	}
	stem := strings.TrimSuffix(filepath.Base(inputs), filepath.Ext(inputs))
	fmt.Fprintf(os.Stderr, "[rank: 0] Seed set to %s\n", seed)
	for key, spec := range specs {
		for field := range spec {
			switch field {
			case "input", "contig", "length", "is_non_loopy", "ligand", "select_hotspots", "infer_ori_strategy", "ori_token", "unindex":
			default:
				return traceback(fmt.Sprintf("foundry.utils.components.ComponentValidationError: Unknown key in design specification: %s", field))
			}
		}
		input, _ := spec["input"].(string)
		text, err := os.ReadFile(input)
		if err != nil {
			return traceback(fmt.Sprintf("FileNotFoundError: [Errno 2] No such file or directory: '%s'", input))
		}
		behaviour := standin.Behaviour(string(text), "rfd3test: ")
		s, err := bio.ReadStructure(string(text))
		if err != nil {
			return traceback("ValueError: " + err.Error())
		}
		contigText, _ := spec["contig"].(string)
		contig, err := bio.ParseContig(contigText)
		if err != nil {
			return traceback("foundry.utils.components.ComponentValidationError: Invalid contig format: " + contigText)
		}
		if behaviour == "crash" {
			return traceback(standin.CUDACrash)
		}
		if behaviour == "hang" {
			// The stuck helper is never ended: only stopping the process group ends it.
			_, err := standin.Stall("", 300, time.Second, func(i int) {
				fmt.Fprintf(os.Stderr, "Sampling diffusion step %d of %d\n", i+1, steps)
			})
			if err != nil {
				return traceback("OSError: " + err.Error())
			}
		}
		for batch := range n {
			if behaviour == "oom" && batch == 1 {
				return traceback("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB")
			}
			if behaviour == "invalid" {
				return traceback("foundry.utils.components.ComponentValidationError: Residue A999 not found in atom array.")
			}
			// rfd3 logs the batch's end before it writes the batch's designs (engine.py:334,269).
			fmt.Fprintf(os.Stderr, "[INFO] Finished inference batch in %.2f seconds.\n", 0.0)
			for m := range size {
				example := fmt.Sprintf("%s_%s_%d_model_%d", stem, key, batch, m)
				base := filepath.Join(cfg["out_dir"], example)
				rng := rand.New(rand.NewPCG(hash(seed, contigText, strconv.Itoa(batch), strconv.Itoa(m)), uint64(steps)))
				cif, residues, err := build(example, contig, s, rng)
				if err != nil {
					return traceback("foundry.utils.components.ComponentValidationError: " + err.Error())
				}
				if err := writeGzip(base+".cif.gz", cif); err != nil {
					return traceback("OSError: " + err.Error())
				}
				meta := map[string]any{
					"metrics": map[string]any{
						"max_ca_deviation": 0.2 + rng.Float64(), "n_chainbreaks": rng.IntN(2),
						"n_clashing.interresidue_clashes_w_sidechain": rng.IntN(3), "n_clashing.interresidue_clashes_w_backbone": 0,
						"non_loop_fraction": 0.6 + 0.3*rng.Float64(), "loop_fraction": 0.1 + 0.3*rng.Float64(),
						"helix_fraction": 0.5 * rng.Float64(), "sheet_fraction": 0.3 * rng.Float64(), "num_ss_elements": 2 + rng.IntN(5),
						"radius_of_gyration": 10 + 5*rng.Float64(), "alanine_content": 0.1 * rng.Float64(), "glycine_content": 0.1 * rng.Float64(),
						"num_residues": residues,
					},
					"specification": spec, "diffused_index_map": map[string]string{}, "ckpt_path": cfg["ckpt_path"], "seed": seed,
				}
				mb, _ := json.MarshalIndent(meta, "", "    ")
				if err := os.WriteFile(base+".json", mb, 0o644); err != nil {
					return traceback("OSError: " + err.Error())
				}
				fmt.Fprintf(os.Stderr, "[INFO] Outputs for %s written to %s.\n", example, base)
			}
		}
	}
	return 0
}

func hash(parts ...string) uint64 {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	var v uint64
	for _, b := range h[:8] {
		v = v<<8 | uint64(b)
	}
	return v
}

var aminoAcids = []string{"ALA", "ARG", "ASN", "ASP", "GLU", "GLN", "GLY", "HIS", "ILE", "LEU", "LYS", "MET", "PHE", "PRO", "SER", "THR", "TRP", "TYR", "VAL"}

// build writes a design as mmCIF: the contig's segments in order, chains A, B, … from one
// /0 to the next, kept residues as the input has them, designed ones as the sequence head
// calls them (made up).
func build(name string, contig bio.Contig, s *bio.Structure, rng *rand.Rand) (string, int, error) {
	var b strings.Builder
	b.WriteString(standin.AtomSiteLoop(name, "group_PDB", "id", "type_symbol", "label_atom_id", "label_comp_id",
		"label_asym_id", "label_seq_id", "Cartn_x", "Cartn_y", "Cartn_z", "B_iso_or_equiv", "auth_seq_id", "auth_asym_id",
		"pdbx_PDB_model_num"))
	chain, res, atom := 'A', 0, 0
	put := func(comp string) {
		res++
		atom++
		fmt.Fprintf(&b, "ATOM %d C CA %s %c %d %.3f %.3f %.3f %.2f %d %c 1\n", atom, comp, chain, res,
			10*rng.Float64(), 10*rng.Float64(), 10*rng.Float64(), 0.5+0.5*rng.Float64(), res, chain)
	}
	total := 0
	for _, seg := range contig {
		switch {
		case seg.Break:
			chain++
			res = 0
		case seg.Chain != "":
			c, ok := s.Chain(seg.Chain)
			for n := seg.Min; n <= seg.Max; n++ {
				var rs []bio.Residue
				if ok {
					rs = c.Numbered(n)
				}
				if len(rs) == 0 {
					return "", 0, fmt.Errorf("Residue %s%d not found in atom array.", seg.Chain, n)
				}
				put(rs[0].Name)
				total++
			}
		default:
			length := seg.Min + rng.IntN(seg.Max-seg.Min+1)
			for range length {
				put(aminoAcids[rng.IntN(len(aminoAcids))])
				total++
			}
		}
	}
	return b.String(), total, nil
}

func writeGzip(path, text string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	z := gzip.NewWriter(f)
	if _, err := z.Write([]byte(text)); err != nil {
		f.Close()
		return err
	}
	if err := z.Close(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
