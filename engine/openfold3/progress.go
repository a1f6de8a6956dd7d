package openfold3

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/chaperone-bio/chaperone/job"
)

// What OpenFold3 prints about a query it gave up on, and Lightning's progress bar of the
// prediction loop (one step per query and seed).
var (
	// single_datasets/inference.py, __getitem__: featurising the query failed.
	failedProcessing = regexp.MustCompile(`Failed to process (\S+) with preferred`)
	// of3_all_atom/runner.py, predict_step: out of memory, or any other error.
	oomLine    = regexp.MustCompile(`OOM for query_id\(s\) (.+?)\. See `)
	failedLine = regexp.MustCompile(`Failed for query_id\(s\) (.+?): (.*)\. See `)
	// core/runners/writer.py: writing the results failed.
	failedWrite = regexp.MustCompile(`Failed to write predictions for query_id\(s\) (.+?): (.*)$`)
	loopBar     = regexp.MustCompile(`^Predicting DataLoader \d+:.*\|\s*(\d+)/(\d+) \[`)
)

// monitor follows the tool's output: it reports the stage and progress of the job, and
// remembers what OpenFold3 printed about queries it failed. OnLine runs on the streaming
// goroutine and Exec returns only after it, so the engine reads the fields once Exec has
// returned.
type monitor struct {
	report   func(job.Progress)
	total    int
	stage    string
	done     int
	fraction float64

	// errors holds, per query, what OpenFold3 printed when it failed it.
	errors map[string]string
	oom    map[string]bool
	// tracing is the query whose processing traceback is being printed.
	tracing string
}

func newMonitor(report func(job.Progress), total int) *monitor {
	return &monitor{report: report, total: total, stage: job.StageStarting, errors: map[string]string{}, oom: map[string]bool{}}
}

func (m *monitor) stageInference() { m.set(job.StageInference, 0) }

// line reads one line of the tool's output.
func (m *monitor) line(line string) {
	t := strings.TrimSpace(line)
	if m.tracing != "" {
		switch {
		case strings.HasPrefix(t, "-----"):
			m.tracing = ""
		case t != "" && line[0] != ' ' && !strings.HasPrefix(t, "Traceback") && !strings.HasPrefix(t, "Exception type:"):
			// The traceback's last unindented line is the exception and its message.
			m.errors[m.tracing] = t
		}
		return
	}
	switch {
	case failedProcessing.MatchString(t):
		q := failedProcessing.FindStringSubmatch(t)[1]
		m.tracing = q
		m.errors[q] = "OpenFold3 could not process the query"
	case oomLine.MatchString(t):
		for _, q := range strings.Split(oomLine.FindStringSubmatch(t)[1], ", ") {
			m.oom[q] = true
		}
	case failedLine.MatchString(t):
		g := failedLine.FindStringSubmatch(t)
		for _, q := range strings.Split(g[1], ", ") {
			m.errors[q] = g[2]
		}
	case failedWrite.MatchString(t):
		g := failedWrite.FindStringSubmatch(t)
		for _, q := range strings.Split(g[1], ", ") {
			m.errors[q] = "writing its results failed: " + g[2]
		}
	case loopBar.MatchString(t):
		g := loopBar.FindStringSubmatch(t)
		n, _ := strconv.Atoi(g[1])
		of, _ := strconv.Atoi(g[2])
		of = max(of, 1)
		m.done = min(n, m.total)
		m.set(job.StageInference, float64(min(n, of))/float64(of))
	}
}

// set moves to a stage and reports; progress never goes back.
func (m *monitor) set(stage string, fraction float64) {
	m.stage = stage
	m.fraction = min(max(m.fraction, fraction), 1)
	f := m.fraction
	m.report(job.Progress{Stage: m.stage, Done: m.done, Total: m.total, Fraction: &f})
}
