package protenix

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chaperone-bio/chaperone/bio"
	"github.com/chaperone-bio/chaperone/catalog"
	"github.com/chaperone-bio/chaperone/internal/realtools"
	"github.com/chaperone-bio/chaperone/job"
)

// TestUpstreamInputsAccepted writes the tools' input JSON and alignment files for every
// input of the corpus that the engine takes (bio/testdata/inputs and testdata/json: inline
// and empty alignments, ligands by SMILES and CCD code, ions, DNA and RNA, modified
// residues) and runs each tool's own input steps on them: the preprocessing of `pred`,
// which must search nothing since every alignment file is there, and the inference
// loader and featurizer, with a CCD of the components the inputs name
// (testdata/upstream/loaders.py and ccd.py). Every target must be featurised without an
// error, and a target folded with an alignment must have more than the query's row.
func TestUpstreamInputsAccepted(t *testing.T) {
	envs := map[string]realtools.Env{}
	for _, tool := range []string{"protenix", "opendde"} {
		envs[tool] = realtools.Require(t, tool)
	}
	isolate(t)
	work := t.TempDir()
	engines := map[string]*Engine{"protenix": New(Config{}), "opendde": NewOpenDDE(Config{})}
	inputs, targets := map[string]string{}, map[string]map[string]*target{}
	for tool, e := range engines {
		inputs[tool] = filepath.Join(work, tool, "input", "targets.json")
		targets[tool] = writeCorpus(t, e, inputs[tool], filepath.Join(work, tool, "msa"))
	}

	// The CCD files both tools read under <root>/common; OpenDDE's are Protenix's.
	root := filepath.Join(work, "root")
	runPython(t, envs["protenix"], work, nil, filepath.Join("testdata", "upstream", "ccd.py"), filepath.Join(root, "common"),
		inputs["protenix"], inputs["opendde"])

	for _, tool := range []string{"protenix", "opendde"} {
		t.Run(tool, func(t *testing.T) {
			input, targets := inputs[tool], targets[tool]
			accepted := 0
			seen := map[string]bool{}
			for _, r := range featurise(t, envs[tool], tool, input, root) {
				seen[r.Name] = true
				if r.Prepared != input {
					t.Errorf("%s searched alignments (its prepared input is %s)", tool, r.Prepared)
				}
				switch tg, ok := targets[r.Name]; {
				case !ok:
					t.Errorf("%s featurised %s, which the engine did not write", tool, r.Name)
				case r.Error != "":
					t.Errorf("%s: %s: %s", tool, r.Name, lastLines(r.Error, 3))
				case r.Tokens == 0 || r.Atoms == 0:
					t.Errorf("%s: %s: %d tokens, %d atoms", tool, r.Name, r.Tokens, r.Atoms)
				case tg.msa && r.MSARows < 2:
					t.Errorf("%s: %s has alignments but %d rows were featurised", tool, r.Name, r.MSARows)
				default:
					accepted++
				}
			}
			for name := range targets {
				if !seen[name] {
					t.Errorf("%s gave no result for %s", tool, name)
				}
			}
			t.Logf("%s %s: %d/%d inputs accepted by its loader and featurizer", tool, envs[tool].Pin.Version, accepted, len(targets))
		})
	}
}

// writeCorpus writes e's input JSON at path for every input of the corpus that its model
// accepts at submit (the catalog's checks and the engine's CheckInput), with alignments as
// sent or single-sequence (use_msa_server off), and the alignment files under files; it
// returns the targets by name. Inputs refused at submit are logged, not written.
func writeCorpus(t *testing.T, e *Engine, path, files string) map[string]*target {
	t.Helper()
	var inputs []string
	for _, pattern := range []string{filepath.Join("..", "..", "bio", "testdata", "inputs", "*"), filepath.Join("testdata", "json", "*.in")} {
		m, err := filepath.Glob(pattern)
		if err != nil || len(m) == 0 {
			t.Fatalf("no inputs match %s: %v", pattern, err)
		}
		inputs = append(inputs, m...)
	}
	model := e.Models()[0]
	targets := map[string]*target{}
	var entries []inputJob
	for _, in := range inputs {
		name := filepath.Base(filepath.Dir(filepath.Dir(in))) + "_" + strings.ReplaceAll(filepath.Base(in), ".", "_")
		text, err := os.ReadFile(in)
		if err != nil {
			t.Fatal(err)
		}
		j, err := catalog.Default().NewPredict(&catalog.PredictRequest{Model: model, Targets: []job.Target{{Name: name, Content: string(text)}},
			Params: map[string]json.RawMessage{"use_msa_server": json.RawMessage("false")}})
		var complexes []*bio.Complex
		if err == nil {
			complexes, err = bio.Complexes(j.Input)
		}
		if err == nil {
			err = e.CheckInput(model, complexes[0], j.Params)
		}
		if err != nil {
			t.Logf("%s: %s refuses it at submit: %v", in, model, err)
			continue
		}
		tg, err := planTarget(complexes[0], false, nil, files)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		targets[tg.cx.Name] = tg
		entries = append(entries, tg.entry)
	}
	b, err := json.MarshalIndent(entries, "", "    ")
	if err == nil {
		err = os.MkdirAll(filepath.Dir(path), 0o755)
	}
	if err == nil {
		err = os.WriteFile(path, b, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
	return targets
}

// featured is what a tool's own input steps made of one target (testdata/upstream/loaders.py).
type featured struct {
	Name, Error string
	// Prepared is the input file after the tool's preprocessing: the input itself unless
	// the tool searched alignments.
	Prepared      string
	Tokens, Atoms int
	MSARows       int `json:"msa_rows"`
	PairedRows    int `json:"paired_rows"`
	// MSA is the featurised alignment by chain id: rows in one-letter code, paired first.
	MSA map[string][]string
}

// featurise runs the tool's preprocessing, loader and featurizer on every target of the
// input JSON at input, with the CCD files under root/common, and returns what each made.
// Nothing may be searched: a search would fail at once on the unreachable server.
func featurise(t *testing.T, env realtools.Env, tool, input, root string) []featured {
	t.Helper()
	work := filepath.Dir(input)
	out := runPython(t, env, work,
		[]string{"PROTENIX_ROOT_DIR=" + root, "OPENDDE_ROOT_DIR=" + root, "LAYERNORM_TYPE=torch", "MMSEQS_SERVICE_HOST_URL=http://127.0.0.1:9"},
		filepath.Join("testdata", "upstream", "loaders.py"), tool, input, filepath.Join(work, "out"))
	var results []featured
	for line := range strings.Lines(out) {
		if rest, ok := strings.CutPrefix(line, "RESULT "); ok {
			var r featured
			if err := json.Unmarshal([]byte(rest), &r); err != nil {
				t.Fatal(err)
			}
			results = append(results, r)
		}
	}
	return results
}

// runPython runs one of our scripts with a tool's interpreter in dir and returns its
// standard output.
func runPython(t *testing.T, env realtools.Env, dir string, vars []string, script string, args ...string) string {
	t.Helper()
	abs, err := filepath.Abs(script)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(env.Python(), append([]string{abs}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), vars...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s\n%s", filepath.Base(script), strings.Join(args, " "), err, out, lastLines(stderr.String(), 30))
	}
	return string(out)
}

// lastLines is the end of a text, for a message.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
