package slurm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/worker"
)

// forward sends what a queued or running batch job wrote since the last tick, with a
// heartbeat. While Slurm holds the job pending, its stage is scheduler and the log says
// why it waits.
func (e *Executor) forward(ctx context.Context, t *tracked, q QueueEntry) {
	hb := worker.Heartbeat{Fence: t.lease.Fence}
	// Once the batch job reported progress it runs, whatever squeue said last.
	if q.State == "PENDING" && t.progress == nil {
		if q.Reason != t.reason {
			t.reason = q.Reason
			e.appendLog(ctx, t, fmt.Sprintf("== chaperone: Slurm job %s pending in partition %s (%s) ==\n", t.slurmID, q.Partition, q.Reason))
		}
		if t.stage != job.StageScheduler {
			t.stage = job.StageScheduler
			hb.Progress = &job.Progress{Stage: job.StageScheduler, Total: t.lease.Total}
		}
	} else if q.State != "" && t.stage == job.StageScheduler {
		// Running on a node, before the batch job's first progress arrives.
		t.stage = job.StageStarting
		hb.Progress, hb.Activity = &job.Progress{Stage: job.StageStarting, Total: t.lease.Total}, true
	}
	if e.forwardLog(ctx, t) {
		hb.Activity = true
	}
	if p, ok := e.newProgress(t); ok {
		hb.Progress, hb.Activity = p, true
	}
	e.heartbeat(ctx, t, hb)
}

// The run log of a job that Slurm runs is the executor's own lines and what the batch job
// writes to its folder's log, which the executor forwards at every tick. Both go to the
// server as the attempt's output, each append at its offset in it, so that what the server
// did not take is sent again at the next tick and kept once (worker.Queue.AppendLog).

// logChunk is the most of a job log that one append carries.
const logChunk = 1 << 20

// appendTimeout bounds the tries of one append: what it leaves goes with the next tick.
const appendTimeout = 10 * time.Second

// forwardLog appends the executor's own lines and what the batch job added to its log
// since the last call, in that order, and reports whether it appended any of the batch
// job's log. What the server does not take is sent again at the next call, at the same
// offset of the attempt's output, so that the server keeps it once.
func (e *Executor) forwardLog(ctx context.Context, t *tracked) bool {
	if !e.sendOwnLines(ctx, t) {
		return false
	}
	f, err := os.Open(filepath.Join(t.dir, fileLog))
	if err != nil {
		return false
	}
	defer f.Close()
	sent := false
	for {
		p, err := io.ReadAll(io.NewSectionReader(f, t.sentLog, logChunk))
		if err != nil || len(p) == 0 {
			return sent
		}
		if err := e.appendOutput(ctx, t, p); err != nil {
			if !errors.Is(err, job.ErrLeaseLost) {
				e.log.Warn("forwarding the job log", "job", t.lease.JobID, "error", err.Error())
			}
			return sent
		}
		sent = true
		t.sentLog += int64(len(p))
		e.recordSent(t)
	}
}

// appendOutput sends p as the attempt's output from t.streamed on.
func (e *Executor) appendOutput(ctx context.Context, t *tracked, p []byte) error {
	ctx, cancel := context.WithTimeout(ctx, appendTimeout)
	defer cancel()
	if err := e.cfg.Queue.AppendLog(ctx, t.lease.Fence, t.streamed, p); err != nil {
		return err
	}
	t.streamed += int64(len(p))
	return nil
}

// recordSent records how much the server took, so that a restarted executor goes on from
// there instead of sending the log twice. (An executor killed between an append and this
// record sends that append again, which the offset makes harmless, unless it was of its
// own lines, which die with it.)
func (e *Executor) recordSent(t *tracked) {
	b := fmt.Appendf(nil, "%d %d\n", t.sentLog, t.streamed)
	if err := os.WriteFile(filepath.Join(t.dir, fileLogSent), b, 0o644); err != nil {
		e.log.Warn("recording the log forwarded", "job", t.lease.JobID, "error", err.Error())
	}
}

// appendLog adds the executor's own line to the job's run log, now or, when the server
// does not take it, at the next tick, before the batch job's log that follows it.
func (e *Executor) appendLog(ctx context.Context, t *tracked, line string) {
	t.ownLines = append(t.ownLines, line...)
	e.sendOwnLines(ctx, t)
}

// sendOwnLines appends the executor's own lines that the server has not taken, and
// reports whether none is left.
func (e *Executor) sendOwnLines(ctx context.Context, t *tracked) bool {
	if len(t.ownLines) == 0 {
		return true
	}
	err := e.appendOutput(ctx, t, t.ownLines)
	switch {
	case err == nil:
		t.ownLines = nil
		e.recordSent(t)
		return true
	case errors.Is(err, job.ErrLeaseLost):
		t.ownLines = nil // the attempt's log takes nothing more
	default:
		e.log.Warn("appending to a job log", "job", t.lease.JobID, "error", err.Error())
	}
	return false
}

// readSent reads what recordSent wrote: the batch job's log forwarded, and the attempt's
// output the server took. An executor before the second number counted only the first.
func readSent(b []byte) (sentLog, streamed int64) {
	f := strings.Fields(string(b))
	if len(f) > 0 {
		sentLog, _ = strconv.ParseInt(f[0], 10, 64)
		streamed = sentLog
	}
	if len(f) > 1 {
		streamed, _ = strconv.ParseInt(f[1], 10, 64)
	}
	return sentLog, streamed
}

// newProgress is the batch job's progress when it changed since it was last forwarded.
func (e *Executor) newProgress(t *tracked) (*job.Progress, bool) {
	b, err := os.ReadFile(filepath.Join(t.dir, fileProgress))
	if err != nil || slices.Equal(b, t.progress) {
		return nil, false
	}
	var p job.Progress
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, false
	}
	t.progress, t.stage = b, p.Stage
	return &p, true
}
