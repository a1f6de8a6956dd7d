package protenix

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/chaperone-bio/chaperone/job"
)

// What both tools log (runner/inference.py, infer_predict; runner/batch_inference.py,
// inference_jsons), after the logging prefix of time, level and source line.
var (
	predStart = regexp.MustCompile(`\[Rank \d+ \((\d+)/(\d+)\)\] (.+) \[seed:\d+\]: N_asym`)
	succeeded = regexp.MustCompile(`\[Rank \d+\] (.+) \[seed:\d+\] succeeded\. Model forward time: ([0-9.]+)s`)
	predError = regexp.MustCompile(`\[Rank \d+\] (.+?) failed: `)
	dataError = regexp.MustCompile(`Data error for (.+?): `)
	jsonError = regexp.MustCompile(`Run inference failed: (.*)$`)
)

// monitor follows the tool's output: it reports the stage and progress of the job and
// remembers what the results need (each target's model time, an error of the whole input
// file). OnLine runs on the streaming goroutine and Exec returns only after it, so the
// engine reads the fields once Exec has returned.
type monitor struct {
	report   func(job.Progress)
	total    int
	stage    string
	done     int
	fraction float64

	forward   map[string]float64 // target → seconds of model time, over all seeds
	fileError string             // the tool's error for the whole input file
}

// prepShare is the share of the bar for what the tool does before its first target:
// loading the weights and reading the input.
const prepShare = 0.05

func newMonitor(report func(job.Progress), total int) *monitor {
	return &monitor{report: report, total: max(total, 1), stage: job.StageStarting, forward: map[string]float64{}}
}

// line reads one line of the tool's output.
func (m *monitor) line(line string) {
	t := strings.TrimSpace(line)
	switch {
	case predStart.MatchString(t):
		m.set(job.StageInference, prepShare+(1-prepShare)*float64(m.done)/float64(m.total))
	case succeeded.MatchString(t):
		g := succeeded.FindStringSubmatch(t)
		secs, _ := strconv.ParseFloat(g[2], 64)
		m.forward[g[1]] += secs
		m.finished()
	case jsonError.MatchString(t):
		m.fileError = jsonError.FindStringSubmatch(t)[1]
	case dataError.MatchString(t) || predError.MatchString(t):
		m.finished()
	}
}

// finished counts a target the tool is done with, either way.
func (m *monitor) finished() {
	m.done = min(m.done+1, m.total)
	m.set(job.StageInference, prepShare+(1-prepShare)*float64(m.done)/float64(m.total))
}

// set moves to a stage and reports; progress never goes back.
func (m *monitor) set(stage string, fraction float64) {
	m.stage = stage
	m.fraction = min(max(m.fraction, fraction), 1)
	f := m.fraction
	m.report(job.Progress{Stage: m.stage, Done: m.done, Total: m.total, Fraction: &f})
}
