package store

import (
	"fmt"
	"slices"
	"time"
)

// Retry-After for the quotas that wait on a running job to end (an owner's active jobs, the
// service-wide queue). Nobody knows when a job will end, so every Store estimates it the
// same way, from history: see EstimateRetryAfter.
const (
	MinRetryAfter     = time.Second
	MaxRetryAfter     = 300 * time.Second
	DefaultRetryAfter = 30 * time.Second // no finished job of that model to learn from
	// JobRetryFloor is the shortest wait on a running job: jobs take minutes, and a
	// client told less would only ask again in vain.
	JobRetryFloor = 5 * time.Second
	// RuntimeSamples is how many of a run model's most recently finished succeeded jobs
	// feed its median runtime. Failed jobs are left out: they often fail in seconds on bad
	// input, which says nothing about how long a real run takes.
	RuntimeSamples = 20
)

// EstimateRetryAfter guesses how long until a job that has been running for elapsed ends:
// the median of recent runtimes of its model, less elapsed, within [MinRetryAfter,
// MaxRetryAfter]. With no history it is DefaultRetryAfter.
//
// The job a Store asks about is the one that will most likely end first: for the
// active-jobs quota the owner's longest-running job (or, with nothing running, the owner's
// oldest queued job with elapsed 0), for the service-wide queue the longest-running job of
// all. The median resists the odd job that ran for hours; the upper clamp keeps a client
// from giving up on a guess that may be far off, and the lower one keeps the promise that
// Retry-After is at least a second.
//
// A job already past the median is overdue: nothing says when it ends, and telling the
// client "1 s" made it poll every second for minutes. Its wait is a tenth of the median,
// and a wait on a job is never below JobRetryFloor.
func EstimateRetryAfter(runtimes []time.Duration, elapsed time.Duration) time.Duration {
	if len(runtimes) == 0 {
		return DefaultRetryAfter
	}
	m := median(runtimes)
	return ClampRetryAfter(max(m-elapsed, m/10, JobRetryFloor))
}

// ClampRetryAfter bounds d to [MinRetryAfter, MaxRetryAfter].
func ClampRetryAfter(d time.Duration) time.Duration {
	return min(max(d, MinRetryAfter), MaxRetryAfter)
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return s[n/2-1] + (s[n/2]-s[n/2-1])/2
}

// CreateWindow is the rolling window of Limits.CreatesPerMinute.
const CreateWindow = time.Minute

// WorkerLostError is the error of a job failed because the worker running it was lost on
// each of its attempts (RecoverExpired, ReleaseWorker).
func WorkerLostError(attempts int) string {
	times := fmt.Sprintf("%d times", attempts)
	if attempts == 1 {
		times = "once"
	}
	return "the worker running this job was lost " + times + "; giving up"
}
