package e2e

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/engine/boltz/boltztest"
	"github.com/chaperone-bio/chaperone/engine/pydriver/pydrivertest"
	"github.com/chaperone-bio/chaperone/internal/realtools"
)

// TestUpstreamREADMEOnACPU runs the README's blocks marked "tier" (the section "A real model
// on a CPU") as written, with the pinned esm and Boltz on the CPU: the binary they call is
// the chaperone binary, ~/chaperone-esm and ~/chaperone-boltz are the tier's environments of
// those pins, and their weights are the tier's models of random weights (an ESM C of
// esmc-300m's width named with CHAPERONE_TOOL_ESMC_300M; the tier's Boltz cache as
// BOLTZ_CACHE), since the tier downloads nothing. The embedding job succeeds, and the
// prediction saves its structure. localhost:8080 becomes a free port of the test's.
func TestUpstreamREADMEOnACPU(t *testing.T) {
	esm := realtools.Require(t, "esm")
	boltzEnv := realtools.Require(t, "boltz")
	esmc := pydrivertest.TinyModel(t, esm, "esmc", pydrivertest.ESMC300M)
	cache := boltztest.Cache(t, boltzEnv, true)
	bin := chaperoneBinary(t)
	home := realtools.Isolate(t)
	for name, env := range map[string]realtools.Env{"chaperone-esm": esm, "chaperone-boltz": boltzEnv} {
		if err := os.Symlink(env.Dir, filepath.Join(home, name)); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	if err := os.Symlink(bin, filepath.Join(dir, "chaperone")); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CHAPERONE_") {
			env = append(env, kv)
		}
	}
	env = append(env, "CHAPERONE_ADDR="+addr, "CHAPERONE_URL=http://"+addr, "CHAPERONE_DATA="+filepath.Join(dir, "data"),
		"CHAPERONE_TOOL_ESMC_300M="+esmc, "BOLTZ_CACHE="+cache, "HF_HUB_OFFLINE=1")

	var blocks []readmeBlock
	for _, b := range readmeBlocks(t) {
		if b.shell() && strings.HasPrefix(b.marker, "tier: TestUpstreamREADMEOnACPU ") {
			blocks = append(blocks, b)
		}
	}
	mustf(t, len(blocks) == 2, "the README has %d blocks for this test, want the ESM C one and the Boltz-2 one", len(blocks))
	checks := []func(out string) bool{
		func(out string) bool {
			return strings.Contains(out, `"status": "succeeded"`) && strings.Contains(out, `"error": null`)
		},
		func(string) bool {
			_, err := os.Stat(filepath.Join(dir, "short-protein", "target_1.cif"))
			return err == nil
		},
	}
	for i, b := range blocks {
		start := time.Now()
		out, err := runBlock(t, dir, env, strings.NewReplacer("localhost:8080", addr).Replace(b.text))
		mustf(t, err == nil && checks[i](out), "README.md:%d: %v\n%s\noutput:\n%s", b.line, err, b.text, realtools.LastLines(out, 40))
		t.Logf("README.md:%d ran in %.0f s", b.line, time.Since(start).Seconds())
	}
}
