package boltz

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/chaperone-bio/chaperone/job"
)

// Phases of a boltz predict run, in order: input processing, the structure loop, and the
// affinity loop.
const (
	phaseProcessing = iota
	phaseStructure
	phaseAffinity
	numPhases
)

// What Boltz prints (src/boltz/main.py, data/write/writer.py, model/models/boltz2.py), and
// the progress bars of tqdm (input processing) and Lightning (the prediction loops).
var (
	failedInput = regexp.MustCompile(`^Failed to process (.+)\. Skipping\. Error: (.*?)\.?$`)
	// Boltz's data loader prints one of these when it cannot turn a processed target into
	// the model's input (boltz/data/module/inferencev2.py:230-299 in 2.2.1), and gives the
	// model the loop's first target in its place.
	unprepared = regexp.MustCompile(`((?:Tokenizer|Cropper|Featurizer) failed on|Molecule loading failed for) (\S+) with error (.*?)(?:\. Skipping\.)?$`)
	loopBar    = regexp.MustCompile(`^Predicting DataLoader \d+:.*\|\s*(\d+)/(\d+) \[`)
	plainBar   = regexp.MustCompile(`^\s*\d+%\|.*\|\s*(\d+)/(\d+) \[`)
)

// Boltz's own messages for a target it gave up on.
const (
	oomWarning   = "| WARNING: ran out of memory, skipping batch"
	failedCount  = "Number of failed examples:"
	affinityHead = "Predicting property: affinity"
)

// monitor follows Boltz's output: it reports the stage and progress of the job, and
// remembers what the results need (skipped inputs, out-of-memory batches, when each
// prediction loop started). OnLine runs on the streaming goroutine and Exec returns only
// after it, so the engine reads the fields once Exec has returned.
type monitor struct {
	report   func(job.Progress)
	total    int
	weights  [numPhases]float64 // each phase's share of the progress bar
	phase    int
	stage    string
	done     int
	fraction float64

	skipped map[string]string // target → Boltz's error, from "Failed to process"
	// unprepared is, per prediction loop, target → Boltz's message that it could not
	// prepare the target for the model ("Featurizer failed on …").
	unprepared [numPhases]map[string]string
	// recursing is the target Boltz could not prepare as the first of a loop: Boltz then
	// prepares the first target again in its place, without end (until Python's recursion
	// limit, after about a thousand tracebacks). The second message on the same target in
	// one loop shows it, and stop ends the run there.
	recursing string
	stop      func()
	oom       [numPhases]int // out-of-memory batches seen per phase
	loopStart [numPhases]time.Time
}

func newMonitor(report func(job.Progress), total int, affinity bool) *monitor {
	m := &monitor{report: report, total: total, stage: job.StageStarting, skipped: map[string]string{}}
	for i := range m.unprepared {
		m.unprepared[i] = map[string]string{}
	}
	// Shares of the bar: input processing is quick (Boltz never searches alignments here),
	// and the affinity loop runs five samples per target.
	m.weights[phaseProcessing] = 0.05
	if affinity {
		m.weights[phaseAffinity] = 0.2
	}
	m.weights[phaseStructure] = 1 - m.weights[phaseProcessing] - m.weights[phaseAffinity]
	return m
}

// line reads one line of Boltz's output.
func (m *monitor) line(line string) {
	t := strings.TrimSpace(line)
	switch {
	case strings.HasPrefix(t, "Running structure prediction for"):
		m.set(phaseStructure, job.StageInference, m.start(phaseStructure))
	case t == affinityHead:
		m.set(phaseAffinity, job.StageAffinity, m.start(phaseAffinity))
	// Boltz prints these to stdout while a progress bar on stderr is drawn; tqdm starts
	// each redraw with a carriage return and ends it with nothing, so in the merged output
	// the message can follow a bar on the same line.
	case strings.Contains(t, "Failed to process "):
		if g := failedInput.FindStringSubmatch(t[strings.Index(t, "Failed to process "):]); g != nil {
			name := strings.TrimSuffix(filepath.Base(g[1]), filepath.Ext(g[1]))
			m.skipped[name] = g[2]
		}
	case unprepared.MatchString(t):
		g := unprepared.FindStringSubmatch(t)
		name, msg := g[2], fmt.Sprintf("%s %s with error %s", g[1], g[2], g[3])
		if _, again := m.unprepared[m.phase][name]; again && m.recursing == "" {
			m.recursing = name
			if m.stop != nil {
				m.stop()
			}
		}
		m.unprepared[m.phase][name] = msg
	case strings.Contains(t, oomWarning):
		m.oom[m.phase]++
	case loopBar.MatchString(t):
		if m.loopStart[m.phase].IsZero() {
			m.loopStart[m.phase] = time.Now()
		}
		n, of := bar(loopBar, t)
		if m.phase == phaseStructure {
			m.done = n
		}
		m.set(m.phase, m.stage, m.start(m.phase)+m.weights[m.phase]*float64(n)/float64(of))
	case m.phase == phaseProcessing && plainBar.MatchString(t):
		n, of := bar(plainBar, t)
		m.set(phaseProcessing, m.stage, m.weights[phaseProcessing]*float64(n)/float64(of))
	}
}

// start is where a phase begins on the progress bar.
func (m *monitor) start(phase int) float64 {
	f := 0.0
	for p := range phase {
		f += m.weights[p]
	}
	return f
}

// set moves to a phase and stage and reports; progress never goes back.
func (m *monitor) set(phase int, stage string, fraction float64) {
	m.phase, m.stage = phase, stage
	m.fraction = min(max(m.fraction, fraction), 1)
	f := m.fraction
	m.report(job.Progress{Stage: m.stage, Done: m.done, Total: m.total, Fraction: &f})
}

// bar reads the n/total counter of a progress bar line; total is at least 1.
func bar(re *regexp.Regexp, line string) (int, int) {
	g := re.FindStringSubmatch(line)
	n, _ := strconv.Atoi(g[1])
	of, _ := strconv.Atoi(g[2])
	return min(n, max(of, 1)), max(of, 1)
}

// attempt readies the monitor for another run of boltz over the targets left: stop ends
// that run.
func (m *monitor) attempt(stop func()) {
	m.stop, m.recursing, m.phase = stop, "", phaseProcessing
}
