package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/chaperone-bio/chaperone/client"
)

// terminal reports whether w is a terminal that can redraw a line in place, and its width.
// TERM=dumb opts out.
func terminal(w io.Writer) (bool, int) {
	f, ok := w.(*os.File)
	if !ok || os.Getenv("TERM") == "dumb" {
		return false, 0
	}
	fd := int(f.Fd())
	if _, err := unix.IoctlGetTermios(fd, unix.TCGETS); err != nil {
		return false, 0
	}
	cols := 80
	if ws, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ); err == nil && ws.Col > 0 {
		cols = int(ws.Col)
	}
	return true, cols
}

// progress shows a waiting job. On a terminal it is one line, redrawn in place at every
// change and every second (the elapsed time moves); elsewhere (a log file, a pipe) it is
// a plain line per change of status, stage or done/total, without control characters.
// With --json it shows nothing: the output is for a program.
type progress struct {
	w       io.Writer
	tty     bool
	off     bool
	columns int
	start   time.Time

	mu      sync.Mutex
	job     *client.Job
	printed string // the non-terminal display's last line
	stop    chan struct{}
	done    sync.WaitGroup
}

func (cl *cli) newProgress() *progress {
	p := &progress{w: cl.stderr, tty: cl.isTTY, off: cl.json, columns: cl.columns, start: time.Now(), stop: make(chan struct{})}
	if p.tty && !p.off {
		p.done.Go(p.tick)
	}
	return p
}

// update is the callback of client.Wait.
func (p *progress) update(j *client.Job) {
	if p.off {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.job = j
	if p.tty {
		p.redraw()
		return
	}
	key := fmt.Sprintf("%s %s %d/%d", j.Status, j.Stage, j.Done, j.Total)
	if key != p.printed {
		p.printed = key
		fmt.Fprintln(p.w, p.line(j))
	}
}

func (p *progress) tick() {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.mu.Lock()
			p.redraw()
			p.mu.Unlock()
		}
	}
}

// finish leaves the last state on screen and moves to the next line.
func (p *progress) finish() {
	close(p.stop)
	p.done.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.off || !p.tty || p.job == nil {
		return
	}
	p.redraw()
	fmt.Fprintln(p.w)
}

// redraw rewrites the terminal line: carriage return, the line, erase to its end.
func (p *progress) redraw() {
	if p.job == nil {
		return
	}
	line := p.line(p.job)
	if r := []rune(line); p.columns > 1 && len(r) > p.columns-1 {
		line = string(r[:p.columns-1]) // a wrapped line could not be redrawn in place
	}
	fmt.Fprintf(p.w, "\r%s\x1b[K", line)
}

// line is "job 3f2a1b2c  running  inference  [#######             ]  35%  7/20  0:42".
func (p *progress) line(j *client.Job) string {
	parts := []string{"job " + j.ID[:min(8, len(j.ID))], string(j.Status)}
	if j.Stage != "" {
		parts = append(parts, j.Stage)
	}
	if j.Progress != nil {
		const width = 20
		filled := int(*j.Progress*width + 0.5)
		parts = append(parts, "["+strings.Repeat("#", filled)+strings.Repeat(" ", width-filled)+"]", pct(*j.Progress))
	}
	if j.Total > 0 {
		parts = append(parts, fmt.Sprintf("%d/%d", j.Done, j.Total))
	}
	return strings.Join(append(parts, elapsed(j, p.start)), "  ")
}

// elapsed is how long the job has existed by the server's clock, or, when the clocks
// disagree, how long this command has waited.
func elapsed(j *client.Job, waitStart time.Time) string {
	end := time.Now()
	if !j.FinishedAt.IsZero() {
		end = j.FinishedAt
	}
	d := end.Sub(j.CreatedAt)
	if j.CreatedAt.IsZero() || d < 0 {
		d = time.Since(waitStart)
	}
	d = d.Round(time.Second)
	if d >= time.Hour {
		return fmt.Sprintf("%d:%02d:%02d", int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60)
	}
	return fmt.Sprintf("%d:%02d", int(d.Minutes()), int(d.Seconds())%60)
}
