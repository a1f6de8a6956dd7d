package pydriver

import (
	"math"
	"strings"
	"testing"

	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/pydriver/pydrivertest"
	"github.com/chaperone-bio/chaperone/internal/realtools"
	"github.com/chaperone-bio/chaperone/job"
)

// The benchmarks run the real driver in Debian's Python on the stand-in esm package,
// whose loads take loadSeconds, as the README's measuring section reports:
//
//	go test ./engine/pydriver -run '^$' -bench . -benchtime 200x
const loadSeconds = "0.5"

// BenchmarkWarmJob is the per-job cost of a warm session: one short sequence through the
// driver and back, npz written. The load happens once, before the timer.
func BenchmarkWarmJob(b *testing.B) {
	sess, _ := open(b, ESM(), "STANDIN_LOAD_SECONDS="+loadSeconds)
	first := runBench(b, sess, embedJob("esmc-300m", nil, "MKV"))
	if !strings.Contains(first, "standin: loading") {
		b.Fatal("the first job did not load the model")
	}
	b.ResetTimer()
	for b.Loop() {
		if log := runBench(b, sess, embedJob("esmc-300m", nil, "MKV")); strings.Contains(log, "standin: loading") {
			b.Fatal("a warm job loaded the model again")
		}
	}
	b.ReportMetric(float64(sess.loadCount()), "loads")
}

// BenchmarkColdJob is the same job with a driver of its own (Engine.Run): interpreter
// start, import and load on every job, which a warm session saves.
func BenchmarkColdJob(b *testing.B) {
	eng := ESM()
	tools := engine.Tools{"esm": pydrivertest.Interpreter(b, b.TempDir(), "STANDIN_LOAD_SECONDS="+loadSeconds)}
	for b.Loop() {
		log := newLog("")
		run := newRun(b, embedJob("esmc-300m", nil, "MKV"), log)
		run.Tools = tools
		if _, err := eng.Run(b.Context(), run); err != nil {
			b.Fatalf("%v\n%s", err, log)
		}
	}
}

// BenchmarkFiftySequences is a proteome chunk: 50 sequences of three length classes
// (about 100, 300 and 600 residues) in one job, which must cost one forward pass per
// length bucket.
func BenchmarkFiftySequences(b *testing.B) {
	sess, _ := open(b, ESM(), "STANDIN_LOAD_SECONDS="+loadSeconds)
	var seqs []string
	for i := range 50 {
		n := []int{100, 300, 600}[i%3] + i
		seqs = append(seqs, strings.Repeat("MKTAYIAKQR", n/10+1)[:n])
	}
	j := embedJob("esmc-300m", nil, seqs...)
	want := len(buckets(j.Input.Sequences))
	runBench(b, sess, j)
	b.ResetTimer()
	for b.Loop() {
		log := runBench(b, sess, j)
		if passes := strings.Count(log, "standin: forward pass"); passes != want {
			b.Fatalf("%d forward passes for %d length buckets", passes, want)
		}
	}
	b.ReportMetric(float64(want), "passes/job")
}

func runBench(b *testing.B, sess *session, j *job.Job) string {
	b.Helper()
	log := newLog("")
	if _, err := sess.Run(b.Context(), newRun(b, j, log)); err != nil {
		b.Fatalf("%v\n%s", err, log)
	}
	return log.String()
}

// BenchmarkUpstreamESMCMemory measures the memory of one ESM C forward pass (8 sequences of
// 1,000 residues, 8,016 tokens, fp32 on the CPU) on a model of esmc-300m's width and 12 layers
// built with the pinned esm, the driver's way (EsmcModel, last hidden state only) beside the
// anchor of the old way (esm's ESMC wrapper, which keeps every layer's state, stacks them and
// concatenates a copy). Each runs in a fresh interpreter three times; the least rise of the
// peak resident set is reported, as allocator slack only ever adds. Run with `make realtools`'
// environments installed:
//
//	CHAPERONE_REALTOOLS=1 go test ./engine/pydriver -run '^$' -bench UpstreamESMCMemory -benchtime 1x
func BenchmarkUpstreamESMCMemory(b *testing.B) {
	env := realtools.Require(b, "esm")
	model := pydrivertest.TinyModel(b, env, "esmc", pydrivertest.Shape{Width: 960, Heads: 15, Layers: 12})
	for b.Loop() {
		for _, way := range []string{"native", "wrapper"} {
			least := math.MaxFloat64
			for range 3 {
				var got struct {
					Rise float64 `json:"rise_bytes"`
				}
				env.RunJSON(b, &got, pydrivertest.Upstream("memory.py"), way, model, "8", "1000")
				least = min(least, got.Rise)
			}
			b.ReportMetric(least/1e6, way+"-peak-rise-MB")
		}
	}
}
