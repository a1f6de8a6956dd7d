package engine

import (
	"context"
	"io"
)

// Warm is an Engine whose tool stays resident between jobs: a process per worker slot that
// keeps the weights it loaded (the Python-API models, whose users run thousands of small
// jobs that a load per job would dwarf). A worker opens one Session per slot on first use
// and runs that slot's jobs of the engine through it rather than through Run; Run stays
// for one-off use (a check, the conformance suite) and may open, use and close a session.
type Warm interface {
	Engine
	// Open starts a session for one worker slot. ctx bounds the opening only: the session
	// lives until it is closed, however long that is.
	Open(ctx context.Context, slot Slot) (Session, error)
}

// Slot is what a session gets from the worker slot it serves.
type Slot struct {
	// GPU is the CUDA device id the slot runs on; empty for none. Start puts it in the
	// process's environment already.
	GPU   string
	Tools Tools
	// Dir is an empty folder owned by the session until it is closed, for its own files.
	Dir string
	// Start starts a long-lived process in Dir in its own process group, marked so that a
	// restarted worker finds it if the worker crashed, and killed with the worker. The
	// session must start its processes only through it. c.OnLine is ignored: stdout is the
	// session's to read, and stderr goes to the log set on the process.
	Start func(c Command) (Process, error)
}

// Process is a running process of a session.
type Process interface {
	// Stdin and Stdout are the process's standard streams, for the session's own protocol.
	// Closing Stdin is the polite way to ask the process to end.
	Stdin() io.WriteCloser
	Stdout() io.Reader
	// SetLog sends the process's standard error to w from now on (the log of the job it
	// works on); nil discards it.
	SetLog(w io.Writer)
	// Exited is closed when the process has exited; Err then says how (nil for status 0).
	Exited() <-chan struct{}
	Err() error
	// Stop ends the process and its whole group (SIGTERM, SIGKILL after a grace) and
	// returns once it has exited. Stopping an exited process does nothing.
	Stop()
}

// Session is one slot's resident instance of a Warm engine. The worker runs one job at a
// time through it.
type Session interface {
	// Run executes one job as Engine.Run does, with the same duties (trust files, not exit
	// codes). It must return soon after ctx ends (cancel, a cap): a session that cannot
	// stop the job any other way stops its process, and is dead then. When the session
	// dies during a job, Run's error says why (how its process ended, what it printed
	// last), since that is the job's error.
	Run(ctx context.Context, run *Run) (*Output, error)
	// Loaded lists the models the session holds loaded now, the facts that scheduling by
	// model affinity goes by. It may be called while Run runs.
	Loaded() []string
	// Err is nil while the session can take another job, and says why once it cannot
	// (its process exited or was stopped). The worker closes a dead session and opens a
	// fresh one for the next job.
	Err() error
	// Close stops the session and its processes and frees what they held.
	Close() error
}
