package protenix

import (
	"slices"
	"testing"
)

// TestLayerNormEnv: Protenix takes PyTorch's layer norm wherever it could not compile or
// run its fused CUDA one, OpenDDE is left alone, and an operator's own choice stands. (The
// real tool's --help failing without it is TestUpstreamSelfCheck.)
func TestLayerNormEnv(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // no nvcc, no ninja
	t.Setenv("CUDA_HOME", "")
	t.Setenv("CUDA_PATH", "")
	torch := []string{"LAYERNORM_TYPE=torch"}
	tests := []struct {
		name       string
		engine     *Engine
		operator   string
		run, check []string
	}{
		{"protenix on the CPU", New(Config{}), "", torch, torch},
		{"protenix on a GPU without nvcc", New(Config{GPU: true}), "", torch, torch},
		{"the operator's choice", New(Config{GPU: true}), "fast_layernorm", nil, nil},
		{"opendde", NewOpenDDE(Config{}), "", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(layerNormVar, tt.operator)
			if got := tt.engine.layerNormEnv(); !slices.Equal(got, tt.run) {
				t.Errorf("the run's environment adds %q, want %q", got, tt.run)
			}
			if got := tt.engine.checkEnv(); !slices.Equal(got, tt.check) {
				t.Errorf("the check's environment adds %q, want %q", got, tt.check)
			}
		})
	}
}
