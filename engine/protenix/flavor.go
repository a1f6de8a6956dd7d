package protenix

import "github.com/chaperone-bio/chaperone/engine"

// flavor is what one model's run differs in between Protenix and OpenDDE.
type flavor struct {
	model   string // the catalog model
	command string // the upstream command, also the engine's name and its key in Tools
	install string
	needs   string
	// memory is what its model needs on the GPU. The release the engine is tested against
	// is the tool's pin (engine/pins), the same one the real-package tier installs.
	memory engine.Memory
	// modelName is the tool's --model_name.
	modelName string
	// options are every option the engine passes to `<command> pred`.
	options []string
	// kernels is what --trimul_kernel and --triatt_kernel take for fast and for plain
	// numerics; dtype the same for --dtype.
	fastKernels, plainKernels string
	fastDtype, plainDtype     string
	// fusedLayerNorm: the tool's layer norm defaults to a CUDA extension that it compiles
	// when first imported, even for --help (Protenix 2.0.0,
	// protenix/model/triangular/layers.py:33-35 and model/layer_norm/layer_norm.py:53-66).
	// LAYERNORM_TYPE=torch, read at layers.py:33, takes PyTorch's instead.
	fusedLayerNorm bool
	// device says the run's accelerator with --device (OpenDDE); Protenix has no such
	// option and uses CUDA whenever PyTorch sees a GPU.
	device bool
	// checkpoint is the file under the data folder's checkpoint/ this model runs, passed as
	// --load_checkpoint_path; empty for the tool's own default.
	checkpoint        string
	missingCheckpoint string
}

// Options that both tools' `pred` take (runner/batch_inference.py of each).
var commonOptions = []string{"--input", "--out_dir", "--seeds", "--cycle", "--step", "--sample", "--dtype",
	"--model_name", "--use_msa", "--trimul_kernel", "--triatt_kernel", "--need_atom_confidence"}

var protenixFlavor = &flavor{
	model: "protenix-v2", command: "protenix",
	install: `Protenix (pip install protenix)`,
	needs:   "Protenix 2 (pip install -U protenix)",
	// Protenix's cost table (docs/training_inference_instructions.md): 18.2 GB at 1,000
	// tokens in BF16, 66.6 GB at 2,000.
	memory:    engine.Memory{GB: 19, Basis: "about 19 GB at the catalog's 1,024 tokens: 18.2 GB at 1,000 tokens in Protenix's cost table"},
	modelName: "protenix-v2",
	options:   commonOptions,
	// upstream's defaults: bf16 with cuEquivariance; off: fp32 and plain PyTorch.
	fastKernels: "cuequivariance", plainKernels: "torch",
	fastDtype: "bf16", plainDtype: "fp32",
	fusedLayerNorm: true,
}

var openDDEFlavor = &flavor{
	model: "opendde", command: "opendde",
	install: `OpenDDE (uv pip install --torch-backend cu126 "opendde[gpu]")`,
	needs:   `OpenDDE 1.2.0 or newer (pip install -U "opendde[gpu]")`,
	// OpenDDE's docs/foldcp_e2e_baseline.md: single-GPU peak 66.9 GiB at 1,001 tokens
	// (BF16, A800 80 GB).
	memory:    engine.Memory{GB: 72, Basis: "about 72 GB at the catalog's 1,024 tokens: a peak of 66.9 GiB at 1,001 tokens in OpenDDE's benchmark"},
	modelName: "opendde_v1",
	options:   append(commonOptions[:len(commonOptions):len(commonOptions)], "--device"),
	// bf16 either way: upstream's fp32 default needs about twice the memory (catalog).
	// Fast asks for auto, which takes cuEquivariance's kernels where they load and
	// PyTorch's otherwise: asking for cuequivariance where they do not load fails the run
	// (OpenDDE 1.2.0, opendde/config/inference.py:162-196, validate_triangle_kernel_runtime).
	fastKernels: "auto", plainKernels: "torch",
	fastDtype: "bf16", plainDtype: "bf16",
	device: true,
}

// openDDEAbAgFlavor is OpenDDE's with the checkpoint tuned on antibody-antigen complexes.
var openDDEAbAgFlavor = func() *flavor {
	f := *openDDEFlavor
	f.model = "opendde-abag"
	f.options = append(f.options[:len(f.options):len(f.options)], "--load_checkpoint_path")
	f.checkpoint = "opendde_abag.pt"
	f.missingCheckpoint = "weights missing: OpenDDE's antibody-antigen checkpoint opendde_abag.pt is not in the checkpoint folder of " +
		"OpenDDE's data root ($OPENDDE_ROOT_DIR, default ~/.cache/opendde); download it from " +
		"https://huggingface.co/aurekaresearch/OpenDDE into that folder"
	return &f
}()
