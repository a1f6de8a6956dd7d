package rfd3

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/chaperone-bio/chaperone/job"
)

// What RFdiffusion3 logs (rfd3/engine.py, model/inference_sampler.py): a line per design
// written, each diffusion step of a batch in low-memory mode, and the last lines of a
// Python traceback when it stops.
var (
	written   = regexp.MustCompile(`Outputs for \S+ written to `)
	step      = regexp.MustCompile(`\[chunked\] step (\d+):`)
	errorLine = regexp.MustCompile(`^[A-Za-z_.]*(Error|Exception)\b:?`)
)

// monitor follows rfd3's output: designs written, and its last error. OnLine runs on the
// streaming goroutine and Exec returns only after it.
type monitor struct {
	report    func(job.Progress)
	total     int
	batch     int // designs per batch
	steps     int // diffusion steps per batch
	done      int
	stage     string
	fraction  float64
	lastError string
}

func newMonitor(report func(job.Progress), total, batch, steps int) *monitor {
	m := &monitor{report: report, total: total, batch: batch, steps: max(steps, 1)}
	m.set(job.StageDesigning)
	return m
}

func (m *monitor) line(line string) {
	t := strings.TrimSpace(line)
	switch {
	case written.MatchString(t):
		m.done = min(m.done+1, m.total)
		m.fraction = float64(m.done) / float64(m.total)
		m.set(job.StageDesigning)
	case step.MatchString(t):
		n, _ := strconv.Atoi(step.FindStringSubmatch(t)[1])
		within := float64(m.batch) * min(float64(n)/float64(m.steps), 1)
		m.fraction = max(m.fraction, min((float64(m.done)+within)/float64(m.total), 1))
		m.set(job.StageDesigning)
	case errorLine.MatchString(t):
		m.lastError = t
	}
}

func (m *monitor) set(stage string) {
	m.stage = stage
	f := m.fraction
	m.report(job.Progress{Stage: stage, Done: m.done, Total: m.total, Fraction: &f})
}

// finish reports every design read.
func (m *monitor) finish() {
	m.done, m.fraction = m.total, 1
	m.set(job.StageWriting)
}

func (m *monitor) failure() string { return m.lastError }
