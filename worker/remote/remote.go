// Package remote carries the worker protocol (worker.Queue) over HTTP, so that a worker on
// a GPU node reaches the server the way the in-process worker calls worker/backend: Handler
// serves a Queue under /v1/worker/, Client is a Queue that calls it. Requests carry a
// worker token (chaperone keys create --worker), which nothing else accepts; the handler
// accepts nothing else.
//
// The wire is plain JSON of the protocol's own types, one POST per call, except for the
// two calls that carry bytes, each at an explicit offset: a log append is the bytes
// themselves, at their offset in the attempt's output, so that one sent again after a lost
// answer lands once (see Client.AppendLog); and an artifact goes up in chunks, so that an
// upload cut off by a dropped connection resumes where the server's copy ends instead of
// starting over (see Client.PutArtifact). Every error is a problem detail of the public
// API's types (package problem).
//
// It imports worker, job, store (for the key record), artifact (its log offset error),
// apikey and api/problem of chaperone's packages.
package remote

import (
	"fmt"
	"strconv"

	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/worker"
)

// Prefix is where the worker endpoints live.
const Prefix = "/v1/worker/"

// Paths of the endpoints, below the server's base URL.
const (
	pathAnnounce  = Prefix + "announce"
	pathLease     = Prefix + "lease"
	pathHeartbeat = Prefix + "heartbeat"
	pathComplete  = Prefix + "complete"
	pathRelease   = Prefix + "release"
	pathHandBack  = Prefix + "hand-back"
	pathRemove    = Prefix + "remove"
	// pathToken answers who a token is and changes nothing, for `chaperone doctor`, which
	// asks it with a request of its own (doctor stands below the worker's packages).
	pathToken = Prefix + "token"
)

// attemptPath is the base of the endpoints about one attempt: its log and its artifacts.
func attemptPath(f worker.Fence) string {
	return fmt.Sprintf("%sjobs/%s/attempts/%d/", Prefix, f.JobID, f.Attempt)
}

// Upload headers: the offset a chunk starts at (on a request) or the bytes the server
// holds (on an answer), and the mark of the last chunk.
const (
	headerOffset   = "Upload-Offset"
	headerComplete = "Upload-Complete"
)

// workerRef names a worker in release and remove.
type workerRef struct {
	WorkerID string `json:"worker_id"`
}

// TokenInfo is what the server knows of a worker token.
type TokenInfo struct {
	// Name is the token's name, under which the server records the workers that use it.
	Name string `json:"name"`
}

// ErrUnauthorized is the answer to a missing, unknown, revoked or non-worker token.
var ErrUnauthorized = fmt.Errorf("remote: %w (unknown, revoked, or not a worker token)", worker.ErrRefused)

func parseFence(id, attempt string) (worker.Fence, error) {
	if !job.ValidID(id) {
		return worker.Fence{}, badRequest{fmt.Sprintf("%q is not a job id: job ids are 32 lowercase hexadecimal characters.", id)}
	}
	n, err := strconv.Atoi(attempt)
	if err != nil || n < 1 {
		return worker.Fence{}, badRequest{fmt.Sprintf("%q is not an attempt: attempts are numbered from 1.", attempt)}
	}
	return worker.Fence{JobID: id, Attempt: n}, nil
}
