package worker

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chaperone-bio/chaperone/job"
)

// jobLog buffers a job's output and appends it to the run log in chunks, at every
// heartbeat and whenever a chunk fills, so the log is readable while the job runs without
// one write per line. The tool's output never waits on the network: Write only takes mu,
// which nobody holds across a call to the queue; one send at a time (the send semaphore)
// keeps chunks in order. The log is the owner's to read, so the names of the job's work
// folder on this machine (hide) become relative names on the way out.
//
// No output is dropped while the lease lasts. An append that fails (a server gone, a load
// balancer answering for one) leaves its bytes first in line, and the next flush sends
// them again, with what came after, at the same offset in the attempt's output: the
// server keeps them once, whichever server they reach, and whether or not the failed
// append went through (Queue.AppendLog). The last flush of a job tries for half of what is
// left of the lease, leaving the rest to the completion that follows it.
type jobLog struct {
	q     Queue
	fence Fence
	log   *slog.Logger
	send  chan struct{} // one slot: held by whoever is appending to the queue
	hide  []string      // the work folder's names on this machine, each ending in "/"
	// leaseEnd is when the lease runs out as the last renewal left it, in unix nanoseconds.
	leaseEnd atomic.Int64

	mu     sync.Mutex
	buf    []byte // output not yet made ready to send
	active bool   // output arrived since the last takeActive

	// Only the holder of send touches these.
	pending []byte // output ready to send that the server has not taken, in order
	sent    int64  // bytes of the attempt's output the server holds: where pending starts
	failing bool   // the last append failed, which the worker's log has said
}

const (
	logChunk = 64 << 10
	// maxAppend bounds one append, well inside what a server takes in one request.
	maxAppend = 1 << 20
	// appendTimeout bounds the tries of a flush during the job: the heartbeat that makes
	// them waits for them, and the next flush tries again.
	appendTimeout = 5 * time.Second
)

func newJobLog(q Queue, f Fence, workDir string, log *slog.Logger, leaseEnd time.Time) *jobLog {
	l := &jobLog{q: q, fence: f, log: log, send: make(chan struct{}, 1), hide: workFolderNames(workDir)}
	l.renewed(leaseEnd)
	return l
}

// renewed records that the lease now lasts until end.
func (l *jobLog) renewed(end time.Time) { l.leaseEnd.Store(end.UnixNano()) }

func (l *jobLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	l.buf = append(l.buf, p...)
	l.active = true
	full := len(l.buf) >= logChunk
	l.mu.Unlock()
	if full {
		l.flush(false)
	}
	return len(p), nil
}

// takeActive reports whether output arrived since it was last asked.
func (l *jobLog) takeActive() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	a := l.active
	l.active = false
	return a
}

// flush appends what is buffered, and what earlier flushes could not append, to the run
// log. When another flush is sending, it returns at once (what it leaves is sent by the
// next flush), unless final is set: the last flush of a job waits its turn, so that
// nothing is left behind.
func (l *jobLog) flush(final bool) {
	if final {
		l.send <- struct{}{}
	} else {
		select {
		case l.send <- struct{}{}:
		default:
			return
		}
	}
	defer func() { <-l.send }()
	l.mu.Lock()
	var ready []byte
	ready, l.buf = relativeNames(l.buf, l.hide, final)
	l.mu.Unlock()
	l.pending = append(l.pending, ready...)
	timeout := appendTimeout
	if final {
		timeout = time.Until(time.Unix(0, l.leaseEnd.Load())) / 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for len(l.pending) > 0 {
		p := l.pending[:min(len(l.pending), maxAppend)]
		err := l.q.AppendLog(ctx, l.fence, l.sent, p)
		switch {
		case errors.Is(err, job.ErrLeaseLost):
			// The attempt's writes are refused from now on; the heartbeat reports the loss.
			l.pending = nil
			return
		case err != nil && final:
			l.log.Error("the end of the job's log could not be appended within the lease",
				"job", l.fence.JobID, "attempt", l.fence.Attempt, "bytes", len(l.pending), "error", err.Error())
			return
		case err != nil:
			if !l.failing {
				l.log.Warn("appending to the job's log failed; the output is kept and sent again",
					"job", l.fence.JobID, "attempt", l.fence.Attempt, "error", err.Error())
			}
			l.failing = true
			return
		case l.failing:
			l.log.Info("appending to the job's log works again", "job", l.fence.JobID, "attempt", l.fence.Attempt)
			l.failing = false
		}
		l.sent += int64(len(p))
		l.pending = l.pending[len(p):]
	}
}

var _ io.Writer = (*jobLog)(nil)

// workFolderNames are the names a tool may print for the work folder dir, each with a
// trailing slash: its absolute path first, then, when the worker's name for it is
// relative, that name, which the absolute one ends with.
func workFolderNames(dir string) []string {
	dir = filepath.Clean(dir)
	abs, err := filepath.Abs(dir)
	if err != nil || abs == dir {
		return []string{dir + "/"}
	}
	return []string{abs + "/", dir + "/"}
}

// relativeNames rewrites every name in hide within p to a path relative to the work folder
// ("/data/work/J-1/out/a.cif" becomes "./out/a.cif"). Unless final,
// it holds back an end of p that may be the start of a name the next output completes, and
// returns it as rest.
func relativeNames(p []byte, hide []string, final bool) (out, rest []byte) {
	if len(hide) == 0 || len(p) == 0 {
		return p, nil
	}
	if !final {
		keep := 0
		for _, h := range hide {
			for n := min(len(h)-1, len(p)); n > keep; n-- {
				if bytes.HasSuffix(p, []byte(h[:n])) {
					keep = n
					break
				}
			}
		}
		p, rest = p[:len(p)-keep], bytes.Clone(p[len(p)-keep:])
	}
	for _, h := range hide { // in order: a later name may be the end of an earlier one
		p = bytes.ReplaceAll(p, []byte(h), []byte("./"))
	}
	return p, rest
}

// firstLine is an error as the one closing line of a run log shows it: its first line. What
// follows it, the tool's last output, is in the log just above.
func firstLine(msg string) string {
	first, rest, more := strings.Cut(msg, "\n")
	if !more || strings.TrimSpace(rest) == "" {
		return first
	}
	return strings.TrimSuffix(first, "; last output:") + " (its output is above)"
}
