package rfd3

import (
	"regexp"
	"strings"

	"github.com/chaperone-bio/chaperone/job"
)

// What RFdiffusion3 logs that the engine reads (rfd3/engine.py:136): a line per design
// written, after its batch; and the last line of a Python traceback when it stops. It logs
// nothing per diffusion step outside low-memory mode (model/inference_sampler.py:256,488),
// which the engine does not use, so progress moves a batch at a time.
var (
	written   = regexp.MustCompile(`Outputs for \S+ written to `)
	errorLine = regexp.MustCompile(`^[A-Za-z_.]*(Error|Exception)\b:?`)
)

// monitor follows rfd3's output: designs written, and its last error. OnLine runs on the
// streaming goroutine and Exec returns only after it.
type monitor struct {
	report    func(job.Progress)
	total     int
	done      int
	stage     string
	fraction  float64
	lastError string
}

func newMonitor(report func(job.Progress), total int) *monitor {
	m := &monitor{report: report, total: total}
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
