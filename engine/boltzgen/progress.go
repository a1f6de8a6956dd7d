package boltzgen

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/chaperone-bio/chaperone/job"
)

// What BoltzGen prints (cli/boltzgen.py, execute): a banner per pipeline step, and the
// progress bars of its steps (Lightning's prediction loop, tqdm elsewhere).
var (
	stepBanner = regexp.MustCompile(`^Pipeline step (\d+) of (\d+): (\w+)`)
	stepBar    = regexp.MustCompile(`\|\s*(\d+)/(\d+) \[`)
	errorLine  = regexp.MustCompile(`^[A-Za-z_.]*(Error|Exception|Interrupt)\b:?`)
)

// stages maps BoltzGen's pipeline steps to the stage vocabulary.
var stages = map[string]string{
	"design":           job.StageDesigning,
	"inverse_folding":  job.StageDesigning,
	"design_folding":   job.StageFolding,
	"folding":          job.StageFolding,
	"affinity":         job.StageFolding,
	"esmfold2_scoring": job.StageFolding,
	"analysis":         job.StageFiltering,
	"filtering":        job.StageFiltering,
}

// monitor follows BoltzGen's output: the step it is in, how far that step's bar is, and
// the last error BoltzGen or a step printed. OnLine runs on the streaming goroutine and
// Exec returns only after it, so the engine reads the fields once Exec has returned.
type monitor struct {
	report   func(job.Progress)
	designs  int
	step     int // 1-based, 0 before the first
	steps    int
	stage    string
	done     int // designs of the design step's bar
	fraction float64
	// lastError is the last line of a traceback's end (RuntimeError: ...); a step's own
	// error is kept over the CalledProcessError that the pipeline raises after it.
	lastError string
	tail      []string // the last lines, for a failure without a traceback
}

func newMonitor(report func(job.Progress), designs int) *monitor {
	m := &monitor{report: report, designs: designs, stage: job.StageStarting}
	m.set(job.StageStarting, 0)
	return m
}

const tailLines = 5

func (m *monitor) line(line string) {
	t := strings.TrimSpace(line)
	if t != "" {
		m.tail = append(m.tail, t)
		if len(m.tail) > tailLines {
			m.tail = m.tail[1:]
		}
	}
	if errorLine.MatchString(t) && !(strings.Contains(t, "CalledProcessError") && m.lastError != "") {
		m.lastError = t
	}
	if g := stepBanner.FindStringSubmatch(t); g != nil {
		m.step, _ = strconv.Atoi(g[1])
		m.steps, _ = strconv.Atoi(g[2])
		stage, ok := stages[g[3]]
		if !ok {
			stage = m.stage
		}
		m.set(stage, float64(m.step-1)/float64(max(m.steps, 1)))
		return
	}
	if m.steps == 0 {
		return
	}
	if g := stepBar.FindStringSubmatch(t); g != nil {
		n, _ := strconv.Atoi(g[1])
		of, _ := strconv.Atoi(g[2])
		if of <= 0 {
			return
		}
		within := min(float64(n)/float64(of), 1)
		if m.stage == job.StageDesigning && m.step == 1 {
			m.done = min(n*m.designs/of, m.designs) // the bar counts batches of designs
		}
		m.set(m.stage, (float64(m.step-1)+within)/float64(m.steps))
	}
}

// set reports a stage and a fraction; progress never goes back.
func (m *monitor) set(stage string, fraction float64) {
	m.stage = stage
	m.fraction = min(max(m.fraction, fraction), 1)
	f := m.fraction
	m.report(job.Progress{Stage: stage, Done: m.done, Total: m.designs, Fraction: &f})
}

// failure is BoltzGen's own word on why it stopped: its last error line, else its last
// lines.
func (m *monitor) failure() string {
	if m.lastError != "" {
		return m.lastError
	}
	return strings.Join(m.tail, " / ")
}
