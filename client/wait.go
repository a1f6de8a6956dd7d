package client

import (
	"context"
	"io"
	"time"
)

const (
	// quietHold is how long each poll of Wait holds when nobody watches progress: well
	// under the idle timeouts of common proxies (60 s), and still one request per half
	// minute.
	quietHold = 30 * time.Second
	// progressHold is the hold when a callback wants progress. The server answers a held
	// poll early only when the job ends, not when it moves, so progress is seen once per
	// hold.
	progressHold = time.Second
)

// Wait blocks until the job is terminal and returns it; a failed or canceled job is not
// an error (look at its Status and Error). It long-polls with Prefer: wait, so the answer
// comes the moment the job ends, not at the next tick of a timer. onProgress, if not nil,
// is called with the job when first seen and again whenever its status, stage, done/total
// or progress changes; the job is then polled every second. Cancel ctx to stop waiting:
// the job itself runs on.
func (c *Client) Wait(ctx context.Context, id string, onProgress func(*Job)) (*Job, error) {
	hold := quietHold
	if onProgress != nil {
		hold = progressHold
	}
	// The first look does not hold, so that a display shows the job at once.
	j, err := c.GetJob(ctx, id)
	var last *Job
	for {
		if err != nil {
			return nil, err
		}
		if onProgress != nil && (last == nil || moved(last, j)) {
			onProgress(j)
		}
		if j.Status.Terminal() {
			return j, nil
		}
		last = j
		j, err = c.pacedPoll(ctx, id, hold)
	}
}

// pacedPoll is PollJob that takes at least hold unless the job is terminal: a server or
// proxy that answers without holding would otherwise make a polling loop spin.
func (c *Client) pacedPoll(ctx context.Context, id string, hold time.Duration) (*Job, error) {
	start := c.now()
	j, err := c.PollJob(ctx, id, hold)
	if err != nil || j.Status.Terminal() {
		return j, err
	}
	return j, c.sleep(ctx, hold-c.now().Sub(start))
}

// moved reports whether anything a progress display shows has changed.
func moved(a, b *Job) bool {
	if a.Status != b.Status || a.Stage != b.Stage || a.Done != b.Done || a.Total != b.Total {
		return true
	}
	if (a.Progress == nil) != (b.Progress == nil) {
		return true
	}
	return a.Progress != nil && *a.Progress != *b.Progress
}

// FollowLogs copies the job's run log to w as it grows, until the job is terminal, and
// returns the job as it ended. Each round reads only the new bytes (a Range from the
// offset reached) and then long-polls the job for up to a second, so the log is read once
// a second while the job runs and once more, whole, after it ends.
func (c *Client) FollowLogs(ctx context.Context, id string, w io.Writer) (*Job, error) {
	j, err := c.GetJob(ctx, id)
	if err != nil {
		return nil, err
	}
	var offset int64
	for {
		b, err := c.LogsFrom(ctx, id, offset)
		if err != nil {
			return nil, err
		}
		if _, err := w.Write(b); err != nil {
			return nil, err
		}
		offset += int64(len(b))
		// The job was seen terminal before this read, and a worker writes the whole log
		// before it reports the end: nothing more will come.
		if j.Status.Terminal() {
			return j, nil
		}
		if j, err = c.pacedPoll(ctx, id, progressHold); err != nil {
			return nil, err
		}
	}
}
