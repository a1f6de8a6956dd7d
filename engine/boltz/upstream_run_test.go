package boltz

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/boltz/boltztest"
	"github.com/chaperone-bio/chaperone/internal/enginerun"
	"github.com/chaperone-bio/chaperone/internal/realtools"
	"github.com/chaperone-bio/chaperone/job"
)

// The tier's predictions: a Boltz-2 of random weights (boltztest.Cache) on the CPU, with
// as few steps as the catalog allows, on targets of a dozen residues, with alignments
// searched ahead of the run (by the tests' alignment stage) where the input has none.
const (
	tierParams = `"params": {"use_msa_server": true, "recycling_steps": 1, "sampling_steps": 10, "diffusion_samples": 2, "write_pae": true}`
	// bad has a zinc ion whose molecule has no conformer (boltztest.Unpreparable): Boltz
	// processes it, then cannot prepare it for the model.
	badTarget = `{"name": "bad", "content": "sequences:\n  - protein: {id: A, sequence: GSHMKELL, msa: empty}\n  - ligand: {id: Z, ccd: ` +
		boltztest.Unpreparable + `}\n"}`
	// good is a heteromer whose chains' alignments were searched, paired and unpaired.
	goodTarget = `{"name": "good", "content": ">A|protein\nMKTAYIAKQRQI\n>B|protein\nGSHMLEDPVKW\n"}`
)

// TestUpstreamPrediction runs real Boltz on a target it predicts, with the alignments
// searched ahead of the run, and one it cannot prepare for the model: the first gets a row
// with Boltz's scores and its files, the second a failed row with Boltz's own message,
// whichever of the two Boltz's loop takes first (it takes them in the order of the file
// system). Boltz never calls an alignment server. The stand-in writes the same files for
// the same job.
func TestUpstreamPrediction(t *testing.T) {
	env := realtools.Require(t, "boltz")
	boltztest.Isolate(t, boltztest.Cache(t, env, true))
	j := enginerun.PredictJob(t, `{"model": "boltz2", "targets": [`+goodTarget+`, `+badTarget+`], `+tierParams+`}`)
	started := time.Now()
	r := enginerun.RunAligned(t, New(Config{}), j, engine.Tools{"boltz": env.Bin("boltz")}, stage(j))
	if r.Err != nil {
		t.Fatalf("run: %v\n%s", r.Err, r.Log.String())
	}
	t.Logf("boltz predict on the CPU: %.0f s", time.Since(started).Seconds())
	if log := r.Log.String(); strings.Contains(log, "Calling MSA server") || strings.Contains(log, "does not match input sequence") ||
		!strings.Contains(log, "[chaperone] good: alignments of chains A, B searched by chaperone's alignment stage") {
		t.Errorf("Boltz did not fold good with the alignments searched ahead:\n%s", log)
	}
	rows := map[string]job.PredictionRow{}
	for _, row := range r.Out.Rows {
		rows[row.ID] = row
	}
	good, bad := rows["good"], rows["bad"]
	if good.Status != job.RowOK || !good.MSA || good.Samples != 2 || good.Scores == nil || good.Scores.ConfidenceScore == nil ||
		good.Scores.ComplexPDE == nil || good.Scores.PLDDT <= 0 || good.Scores.PLDDT > 1 {
		t.Errorf("good row %+v (scores %+v)\n%s", good, good.Scores, r.Log.String())
	}
	const why = "Boltz could not prepare it for the model and skipped it: Featurizer failed on bad with error "
	if bad.Status != job.RowFailed || !strings.HasPrefix(bad.Error, why) {
		t.Errorf("bad row %+v, want failed with %q", bad, why)
	}
	if n := strings.Count(r.Log.String(), "Featurizer failed on bad"); n > 10 {
		t.Errorf("Boltz said %d times it could not prepare bad: it was left to recurse", n)
	}
	if strings.Contains(r.Log.String(), "running boltz again") {
		t.Log("Boltz's loop took bad first: the engine stopped it and ran good again")
	}
	real := predictionFiles(t, r.WorkDir, "good")
	for _, f := range []string{"good_model_1.cif", "pae_good_model_1.npz", "confidence_good_model_0.json"} {
		if !slices.Contains(real, f) {
			t.Errorf("Boltz wrote %v, without %s", real, f)
		}
	}
	// The stand-in, given the same job, writes the same files.
	s := enginerun.RunAligned(t, New(Config{}), enginerun.Leased(t, j), engine.Tools{"boltz": standIn}, stage(j))
	if s.Err != nil {
		t.Fatalf("stand-in run: %v\n%s", s.Err, s.Log.String())
	}
	if stand := predictionFiles(t, s.WorkDir, "good"); !slices.Equal(real, stand) {
		t.Errorf("files of a target:\nBoltz    %v\nstand-in %v", real, stand)
	}
}

// predictionFiles are the names of the files Boltz left in predictions/<target>.
func predictionFiles(t *testing.T, work, target string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(work, "out", "boltz_results_inputs", "predictions", target))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	return names
}

// TestUpstreamUnpreparedFirst: a job of one target Boltz cannot prepare, which is then the
// first of the loop. Boltz 2.2.1 prepares the first target in its place, again and again
// (inferencev2.py:230-299), printing a longer traceback each time, until Python's recursion
// limit ends the run minutes later (948 times in about 3.5 minutes on this machine, with
// millions of log lines). The engine stops it at the second time and the job fails with
// Boltz's message.
func TestUpstreamUnpreparedFirst(t *testing.T) {
	env := realtools.Require(t, "boltz")
	boltztest.Isolate(t, boltztest.Cache(t, env, true))
	j := enginerun.PredictJob(t, `{"model": "boltz2", "targets": [`+badTarget+`], `+tierParams+`}`)
	started := time.Now()
	r := enginerun.Run(t, New(Config{}), j, engine.Tools{"boltz": env.Bin("boltz")})
	t.Logf("boltz predict on the CPU: %.0f s", time.Since(started).Seconds())
	if n := strings.Count(r.Log.String(), "Featurizer failed on bad"); n < 2 || n > 10 {
		t.Errorf("Boltz said %d times it could not prepare bad; want the run stopped at the second", n)
	}
	const why = "bad: Boltz could not prepare it for the model and skipped it: Featurizer failed on bad with error "
	if r.Err == nil || !strings.Contains(r.Err.Error(), why) || !strings.Contains(r.Err.Error(), "retries without end") {
		t.Errorf("the job ended with %v, want an error with %q", r.Err, why)
	}
}
