package protenix

import (
	"os"
	"os/exec"
	"path/filepath"
)

// layerNormVar is the variable Protenix reads to choose its layer norm
// (protenix/model/triangular/layers.py:33): "fast_layernorm", its default, compiles a CUDA
// extension with nvcc and ninja when the model code is first imported
// (model/layer_norm/layer_norm.py:53-66, torch_ext_compile.py), which fails without that
// toolchain with "CUDA_HOME environment variable is not set", before even --help prints.
const layerNormVar = "LAYERNORM_TYPE"

// layerNormEnv is what the engine adds to the tool's environment for its layer norm: the
// fused CUDA one only on a GPU with the toolchain to compile it, PyTorch's everywhere else
// (on the CPU the fused kernel could not run even if it compiled). An operator who set
// LAYERNORM_TYPE for the worker keeps their choice. nil for a tool without the extension.
func (e *Engine) layerNormEnv() []string {
	if !e.flavor.fusedLayerNorm || os.Getenv(layerNormVar) != "" {
		return nil
	}
	if e.cfg.GPU && cudaToolchain() {
		return nil
	}
	return []string{layerNormVar + "=torch"}
}

// checkEnv is the self-check's: --help never needs the fused layer norm, and compiling it
// there would take minutes of the check's time, so the check always takes PyTorch's
// unless the operator chose.
func (e *Engine) checkEnv() []string {
	if !e.flavor.fusedLayerNorm || os.Getenv(layerNormVar) != "" {
		return nil
	}
	return []string{layerNormVar + "=torch"}
}

// cudaToolchain reports whether PyTorch would find what it compiles an extension with:
// nvcc where torch.utils.cpp_extension._find_cuda_home looks ($CUDA_HOME, $CUDA_PATH, on
// PATH, /usr/local/cuda) and ninja on PATH (verify_ninja_availability).
func cudaToolchain() bool {
	if _, err := exec.LookPath("ninja"); err != nil {
		return false
	}
	if _, err := exec.LookPath("nvcc"); err == nil {
		return true
	}
	for _, home := range []string{os.Getenv("CUDA_HOME"), os.Getenv("CUDA_PATH"), "/usr/local/cuda"} {
		if home == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(home, "bin", "nvcc")); err == nil {
			return true
		}
	}
	return false
}
