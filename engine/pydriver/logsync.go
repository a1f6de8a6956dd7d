package pydriver

import (
	"bytes"
	"io"
	"sync"
)

// finished is the line driver.py prints on stderr at the end of every request, before the
// request's last event (its FINISHED).
const finished = "== chaperone driver: request finished =="

// logSync passes the driver's stderr to a job's log and counts the requests it has seen
// finish there, so that the job ends only once its log holds all the driver printed for
// it: stderr and stdout are separate pipes, and the last event can overtake a traceback.
type logSync struct {
	w io.Writer

	mu      sync.Mutex
	tail    []byte // the end of the last write, for a marker split across writes
	count   int
	changed chan struct{} // closed and replaced whenever count grows
}

func newLogSync(w io.Writer) *logSync { return &logSync{w: w, changed: make(chan struct{})} }

func (l *logSync) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	buf := append(l.tail, p...)
	if n := bytes.Count(buf, []byte(finished)); n > 0 {
		l.count += n
		close(l.changed)
		l.changed = make(chan struct{})
		buf = buf[bytes.LastIndex(buf, []byte(finished))+len(finished):]
	}
	l.tail = append(l.tail[:0], buf[max(0, len(buf)-len(finished)+1):]...)
	return l.w.Write(p)
}

// seen returns the count of finished requests and a channel closed when it next grows.
func (l *logSync) seen() (int, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.count, l.changed
}
