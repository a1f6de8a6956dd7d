package openfold3

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/chaperone-bio/chaperone/job"
)

// TestMonitorReadsWhatOpenFold3Prints: the failures OpenFold3 reports only in its output,
// in the words of runner.py, inference.py and writer.py.
func TestMonitorReadsWhatOpenFold3Prints(t *testing.T) {
	t.Parallel()
	var reports []job.Progress
	m := newMonitor(func(p job.Progress) { reports = append(reports, p) }, 4)
	for _, line := range []string{
		"WARNING:openfold3.core.data.framework.single_datasets.inference:----------------------------------------",
		"Failed to process q1 with preferredException type: KeyError",
		"Traceback: Traceback (most recent call last):",
		`  File "inference.py", line 333, in __getitem__`,
		"    features = self.create_all_features(query)",
		"KeyError: 'ZZZ'",
		"----------------------------------------",
		"ERROR:openfold3.projects.of3_all_atom.runner:Failed for query_id(s) q2: shape mismatch. See out/logs/predict_err_rank0.log for details.",
		"ERROR:openfold3.projects.of3_all_atom.runner:OOM for query_id(s) q3. See out/logs/predict_err_rank0.log for details.",
		"ERROR:openfold3.core.runners.writer:Failed to write predictions for query_id(s) q4: disk full",
		"Predicting DataLoader 0:  50%|█████     | 2/4 [00:10<00:10,  0.20it/s]",
	} {
		m.line(line)
	}
	want := map[string]string{"q1": "KeyError: 'ZZZ'", "q2": "shape mismatch", "q4": "writing its results failed: disk full"}
	if !reflect.DeepEqual(m.errors, want) || !m.oom["q3"] || len(m.oom) != 1 {
		t.Errorf("errors %v, oom %v; want %v and q3", m.errors, m.oom, want)
	}
	last := reports[len(reports)-1]
	if last.Stage != job.StageInference || last.Done != 2 || *last.Fraction != 0.5 {
		t.Errorf("progress %+v (fraction %v)", last, *last.Fraction)
	}
}

func TestReadErrorLog(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "predict_err_rank0.log")
	entry := func(queries, typ, msg string) string {
		return "==================================================\nTimestamp: 2026-01-01 00:00:00\nQuery ID(s): " + queries +
			"\nError Type: " + typ + "\nError Message: " + msg + "\n--------------------------------------------------\n" +
			"Traceback:Traceback (most recent call last):\n  File \"runner.py\"\n" + typ + ": " + msg + "\n=================================================="
	}
	text := entry("a, b", "OutOfMemoryError", "CUDA out of memory.") + entry("c", "RuntimeError", "boom")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a": "OutOfMemoryError: CUDA out of memory.", "b": "OutOfMemoryError: CUDA out of memory.", "c": "RuntimeError: boom"}
	if got := readErrorLog(path); !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if got := readErrorLog(filepath.Join(t.TempDir(), "none.log")); len(got) != 0 {
		t.Errorf("no log: %v", got)
	}
}
