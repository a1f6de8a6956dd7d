package rfd3

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/pins"
	"github.com/chaperone-bio/chaperone/engine/rfd3/rfd3test"
	"github.com/chaperone-bio/chaperone/job"
)

// The real-package tier (make realtools): rc-foundry's own code judges what the engine
// writes and where it looks. testdata/upstream.py drives it.

func TestUpstreamSelfCheckAndDoctor(t *testing.T) {
	env, _ := rfd3test.Upstream(t)
	tools := engine.Tools{"rfd3": env.Bin("rfd3")}
	if err := New().Check(context.Background(), tools); err != nil {
		t.Fatalf("the self-check fails with the real rfd3: %v", err)
	}
	d := New().Diagnose(context.Background(), tools)
	if pin := pins.For("rfd3"); d.Version != pin.Version || !d.VersionTested() {
		t.Errorf("doctor: version %q (%s), tested %v; want the pinned %s, tested", d.Version, d.VersionUnknown, d.Tested, pin.Version)
	}
}

// TestUpstreamDoctorFindsTheCheckpointRfd3Loads puts checkpoint files where a worker may
// have them and asks foundry where rfd3 looks (checkpoint_registry.py:25-77): doctor must
// name the same file, and call it missing exactly when rfd3 would not find it.
func TestUpstreamDoctorFindsTheCheckpointRfd3Loads(t *testing.T) {
	tests := []struct {
		name   string
		files  []string          // under the temporary home
		envs   map[string]string // folders under the temporary home, ":"-separated
		wantAt string            // the folder of the checkpoint both find, "" for none
	}{
		{"only the nucleic-acid model's checkpoint", []string{".foundry/checkpoints/rfd3na_1190.ckpt"}, nil, ""},
		{"the default folder", []string{".foundry/checkpoints/rfd3_latest.ckpt"}, nil, ".foundry/checkpoints"},
		{"FOUNDRY_CHECKPOINT_DIRS before the default folder",
			[]string{".foundry/checkpoints/rfd3_latest.ckpt", "b/rfd3_latest.ckpt"},
			map[string]string{"FOUNDRY_CHECKPOINT_DIRS": "a:b"}, "b"},
		{"the older FOUNDRY_CHECKPOINTS_DIR", []string{"old/rfd3_latest.ckpt"},
			map[string]string{"FOUNDRY_CHECKPOINTS_DIR": "old"}, "old"},
		{"FOUNDRY_CHECKPOINTS_DIR only when FOUNDRY_CHECKPOINT_DIRS is empty",
			[]string{"old/rfd3_latest.ckpt", ".foundry/checkpoints/rfd3_latest.ckpt"},
			map[string]string{"FOUNDRY_CHECKPOINT_DIRS": "new", "FOUNDRY_CHECKPOINTS_DIR": "old"}, ".foundry/checkpoints"},
		{"a checkpoint of another name", []string{"c/rfd3_foundry_2025_12_01_remapped.ckpt"},
			map[string]string{"FOUNDRY_CHECKPOINT_DIRS": "c"}, ""},
	}
	env, _ := rfd3test.Upstream(t)
	// Every layout in a home of its own, all asked of foundry at once.
	homes := make([]string, len(tests))
	envs := make([]map[string]string, len(tests))
	for i, tt := range tests {
		homes[i] = t.TempDir()
		for _, f := range tt.files {
			p := filepath.Join(homes[i], f)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte("placeholder"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		envs[i] = map[string]string{"HOME": homes[i], "FOUNDRY_CHECKPOINT_DIRS": "", "FOUNDRY_CHECKPOINTS_DIR": ""}
		for k, v := range tt.envs {
			var dirs []string
			for _, d := range strings.Split(v, ":") {
				dirs = append(dirs, filepath.Join(homes[i], d))
			}
			envs[i][k] = strings.Join(dirs, ":")
		}
	}
	b, err := json.Marshal(envs)
	if err != nil {
		t.Fatal(err)
	}
	var loads []string
	rfd3test.Script(t, env, &loads, "checkpoint", string(b))
	if len(loads) != len(tests) {
		t.Fatalf("%d answers for %d layouts", len(loads), len(tests))
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range envs[i] {
				t.Setenv(k, v)
			}
			_, err := os.Stat(loads[i])
			rfd3Finds := err == nil
			w := New().Diagnose(context.Background(), engine.Tools{"rfd3": env.Bin("rfd3")}).Weights[0]
			doctorFinds := w.State == engine.WeightsPresent
			if rfd3Finds != doctorFinds || (rfd3Finds && w.Path != loads[i]) {
				t.Errorf("rfd3 loads %s (exists: %v); doctor says %s at %s", loads[i], rfd3Finds, w.State, w.Path)
			}
			if want := filepath.Join(homes[i], tt.wantAt, checkpointFile); (tt.wantAt == "") == rfd3Finds || (rfd3Finds && loads[i] != want) {
				t.Errorf("rfd3 loads %s (exists: %v); the test expected %q", loads[i], rfd3Finds, tt.wantAt)
			}
		})
	}
}

// inputCases are the structures and contigs of the design tests: this package's, the
// catalog's (its mmCIF of protein chain A 1-12 and DNA chain B 1-4), and contigs that leave
// a designed segment out, as rfd3's own examples do (0-40).
func inputCases() []struct{ name, protocol, structure, contig string } {
	return []struct{ name, protocol, structure, contig string }{
		{"binder", "rfd3-binder", targetPDB(""), " 30-50 , /0 , A5-A20 "},
		{"scaffold", "rfd3-scaffold", targetPDB(""), "A1-5,8-12,A30-33"},
		{"binder with a short target", "rfd3-binder", targetPDB(""), "20-40,/0,A1-10"},
		{"nucleic-acid binder", "rfd3-na-binder", targetPDB(""), "B1-10,/0,C1-10,/0,20"},
		{"conformance binder", "rfd3-binder", targetPDB(""), "20-30,/0,A1-12"},
		{"conformance scaffold", "rfd3-scaffold", targetPDB(""), "A1-5,10"},
		{"catalog binder", "rfd3-binder", catalogStructure(), "A1-10,/0,5-20"},
		{"catalog scaffold", "rfd3-scaffold", catalogStructure(), "A1-5,30"},
		{"catalog nucleic-acid binder", "rfd3-na-binder", catalogStructure(), "B1-B4,/0,25"},
		{"a designed segment that may be left out", "rfd3-scaffold", targetPDB(""), "0-10,A1-10,5-15,A20-30,0-5"},
		{"a binder whose segment may be left out", "rfd3-binder", targetPDB(""), "0-40,/0,A1-20"},
	}
}

// catalogStructure is catalog/validate_test.go's structureText (protein chain A 1-12, DNA
// chain B 1-4) as a whole mmCIF: that one has only the columns the catalog's parser reads,
// and atomworks refuses an mmCIF without the others (KeyError: 'pdbx_PDB_model_num',
// 'pdbx_PDB_ins_code').
func catalogStructure() string {
	var b strings.Builder
	b.WriteString("data_x\nloop_\n")
	for _, c := range strings.Fields(`group_PDB id type_symbol label_atom_id label_alt_id label_comp_id label_asym_id
		label_entity_id label_seq_id pdbx_PDB_ins_code Cartn_x Cartn_y Cartn_z occupancy B_iso_or_equiv
		auth_seq_id auth_comp_id auth_asym_id auth_atom_id pdbx_PDB_model_num`) {
		b.WriteString("_atom_site." + c + "\n")
	}
	atom := 0
	add := func(comp, chain, entity string, n int, name, el string) {
		atom++
		fmt.Fprintf(&b, "ATOM %d %s %s . %s %s %s %d ? %.3f 0.000 0.000 1.00 20.00 %d %s %s %s 1\n",
			atom, el, name, comp, chain, entity, n, 3.8*float64(n), n, comp, chain, name)
	}
	for i := 1; i <= 12; i++ {
		add("ALA", "A", "1", i, "CA", "C")
	}
	for i, n := range []string{"DA", "DC", "DG", "DT"} {
		add(n, "B", "2", i+1, "P", "P")
	}
	return b.String()
}

// writeInputs has the engine plan j and write its inputs into dir, as a run would.
func writeInputs(t *testing.T, j *job.Job, dir string) {
	t.Helper()
	steps, err := New().plan(&engine.Run{Job: j, Log: io.Discard, Report: func(job.Progress) {}}, dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := steps.WriteInputs(); err != nil {
		t.Fatal(err)
	}
}

// TestUpstreamEveryInputTheEngineWritesIsAccepted has the engine write its inputs for
// every case and rfd3 read them as `rfd3 design inputs=spec.json prevalidate_inputs=True`
// does, building each specification as the run would. A control with a residue the
// structure lacks shows the check can refuse.
func TestUpstreamEveryInputTheEngineWritesIsAccepted(t *testing.T) {
	env, _ := rfd3test.Upstream(t)
	var dirs []string
	names := map[string]string{}
	for i, c := range inputCases() {
		dir := filepath.Join(t.TempDir(), fmt.Sprint(i))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		writeInputs(t, newJob(t, c.protocol, c.structure, c.contig, "{}"), dir)
		dirs, names[dir] = append(dirs, dir), c.name+" "+c.contig
	}
	control := t.TempDir()
	writeInputs(t, newJob(t, "rfd3-scaffold", targetPDB(""), "A1-5,10", "{}"), control)
	spec := filepath.Join(control, "spec.json")
	b, err := os.ReadFile(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(spec, []byte(strings.Replace(string(b), "A1-5,10", "A1-5,10,A99", 1)), 0o644); err != nil {
		t.Fatal(err)
	}

	var results []struct {
		Dir      string   `json:"dir"`
		Examples []string `json:"examples"`
		Error    string   `json:"error"`
	}
	rfd3test.Script(t, env, &results, append([]string{"validate"}, append(dirs, control)...)...)
	if len(results) != len(dirs)+1 {
		t.Fatalf("%d results for %d folders", len(results), len(dirs)+1)
	}
	accepted := 0
	for _, r := range results[:len(dirs)] {
		if r.Error != "" || !reflect.DeepEqual(r.Examples, []string{"spec_" + specKey}) {
			t.Errorf("%s: rfd3 refuses the engine's inputs: %s (examples %v)", names[r.Dir], r.Error, r.Examples)
			continue
		}
		accepted++
	}
	t.Logf("rfd3 accepted %d of %d inputs", accepted, len(dirs))
	if r := results[len(dirs)]; r.Error == "" {
		t.Errorf("rfd3 accepted a contig keeping residue A99, which the structure lacks: the check cannot fail")
	}
}
