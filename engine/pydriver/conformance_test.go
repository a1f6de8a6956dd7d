package pydriver

import (
	"strconv"
	"testing"

	"github.com/chaperone-bio/chaperone/catalog"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/conformance"
	"github.com/chaperone-bio/chaperone/engine/pydriver/pydrivertest"
	"github.com/chaperone-bio/chaperone/job"
)

// The suite runs Engine.Run, a driver of the job's own; the interpreter is the tool. The
// driver's command line has no options (its arguments are positional), so the suite's
// check of options listed by --help has none to check.
func TestConformance(t *testing.T) {
	// Not parallel: the suite empties PATH for one of its checks.
	python := pydrivertest.Interpreter(t, t.TempDir())
	hang := strconv.Quote(pydrivertest.Hang + "MKV")
	t.Run("esm", func(t *testing.T) {
		conformance.Run(t, conformance.Harness{
			Engine: ESM(),
			Tools:  engine.Tools{"esm": python},
			OK: catalogJob(t, job.PredictKind, `{"model": "esmfold2", "targets": [
				{"name": "mono", "content": ">A|protein\nMKTAYIAKQRQISFVKSHFSRQ\n"},
				{"name": "dimer", "content": ">A|protein\nMKTAYIAKQR\n>B|protein\nGSGSG\n"}],
				"params": {"recycling_steps": 4, "sampling_steps": 50, "diffusion_samples": 2, "fast": false}}`),
			Mixed: catalogJob(t, job.PredictKind, `{"model": "esmfold2-fast", "targets": [
				{"name": "good", "content": ">A|protein\nMKTAYIAK\n"},
				{"name": "oom", "content": ">A|protein\n`+pydrivertest.OOM+`K\n"},
				{"name": "refused", "content": ">A|protein\n`+pydrivertest.Fail+`K\n"}]}`),
			Failing: []string{"oom", "refused"},
			Hang:    catalogJob(t, job.PredictKind, `{"model": "esmfold2", "sequence": `+hang+`}`),
			Busy:    pydrivertest.Hanging,
		})
	})
	t.Run("transformers", func(t *testing.T) {
		conformance.Run(t, conformance.Harness{
			Engine: Transformers(),
			Tools:  engine.Tools{"transformers": python},
			OK:     catalogJob(t, job.EmbedKind, `{"model": "saprot-650m", "input": ">a\nMKTAYIAKQR\n>b\nMKV\n", "params": {"format": "parquet"}}`),
			Hang:   catalogJob(t, job.EmbedKind, `{"model": "saprot-1.3b", "sequence": `+hang+`}`),
			Busy:   pydrivertest.Hanging,
		})
	})
}

// catalogJob is the job the catalog makes of a prediction or embedding request body.
func catalogJob(t *testing.T, kind job.Kind, body string) *job.Job {
	t.Helper()
	var j *job.Job
	var err error
	if kind == job.PredictKind {
		var r catalog.PredictRequest
		if err = catalog.Decode([]byte(body), &r); err == nil {
			j, err = catalog.Default().NewPredict(&r)
		}
	} else {
		var r catalog.EmbedRequest
		if err = catalog.Decode([]byte(body), &r); err == nil {
			j, err = catalog.Default().NewEmbed(&r)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	return j
}
