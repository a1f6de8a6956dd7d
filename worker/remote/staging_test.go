package remote_test

import (
	"bytes"
	"io/fs"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/worker"
	"github.com/chaperone-bio/chaperone/worker/remote"
)

// staged is what the server's uploads folder holds, in bytes.
func (ws *workerServer) staged(t *testing.T) int64 {
	t.Helper()
	var n int64
	filepath.WalkDir(ws.staging, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			info, _ := d.Info()
			n += info.Size()
		}
		return nil
	})
	return n
}

// put sends one part of artifact path of attempt f, starting at offset, as token.
func (ws *workerServer) put(t *testing.T, token string, f worker.Fence, path string, offset, size int, last bool) (*http.Response, []byte) {
	t.Helper()
	headers := []string{"Authorization: Bearer " + token, "Upload-Offset: " + strconv.Itoa(offset)}
	if last {
		headers = append(headers, "Upload-Complete: 1")
	}
	return ws.do(t, http.MethodPut, "/v1/worker/jobs/"+f.JobID+"/attempts/"+strconv.Itoa(f.Attempt)+"/artifacts/"+path,
		string(bytes.Repeat([]byte{'x'}, size)), headers...)
}

// TestAPartIsStagedOnlyForTheLeaseHolder: a worker token stages nothing for a job it does
// not hold: any id, a stale attempt, a job nobody leased, another token's lease. The part
// is refused before it is read: the 20 MB of the probe leave 0 bytes behind.
func TestAPartIsStagedOnlyForTheLeaseHolder(t *testing.T) {
	t.Parallel()
	ws := newWorkerServer(t, remote.HandlerConfig{})
	other := ws.keys.add("gpu-node-2", true)
	queued := ws.queueAndLease(t)
	if _, err := ws.store.CancelJob(t.Context(), queued.JobID, owner, time.Now()); err != nil {
		t.Fatal(err)
	}
	const big = 20 << 20
	for _, tc := range []struct {
		name  string
		token string
		fence worker.Fence
	}{
		{"any job id", ws.token, worker.Fence{JobID: job.NewID(), Attempt: 1}},
		{"a stale attempt", ws.token, worker.Fence{JobID: ws.lease.JobID, Attempt: ws.lease.Attempt + 1}},
		{"a job whose lease ended", ws.token, queued.Fence},
		{"another token's lease", other, ws.lease.Fence},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, body := ws.put(t, tc.token, tc.fence, "big.bin", 0, big, false)
			if p := mustProblem(t, res, body); p.Slug() != "lease-lost" {
				t.Errorf("%d %s: %s; want 409 lease-lost", res.StatusCode, p.Slug(), p.Detail)
			}
			if n := ws.staged(t); n != 0 {
				t.Errorf("the server staged %d bytes", n)
			}
		})
	}
	// The holder's own part is staged.
	if res, body := ws.put(t, ws.token, ws.lease.Fence, "big.bin", 0, big, false); res.StatusCode != http.StatusNoContent {
		t.Fatalf("the holder's part: %d %s", res.StatusCode, body)
	}
	if n := ws.staged(t); n != big {
		t.Errorf("the holder's part staged %d bytes, want %d", n, big)
	}
}

// TestStagingIsCapped: parts that would take a job's uploads, or a token's, over the
// operator's caps are refused before they are read, and nothing of them stays; a finished
// upload frees what it held.
func TestStagingIsCapped(t *testing.T) {
	t.Parallel()
	ws := newWorkerServer(t, remote.HandlerConfig{StagingPerJob: 1000, StagingPerWorker: 1500})
	one, two, three := ws.lease.Fence, ws.queueAndLease(t).Fence, ws.queueAndLease(t).Fence
	steps := []struct {
		name         string
		fence        worker.Fence
		path         string
		offset, size int
		last         bool
		status       int
		says         string
		staged       int64
	}{
		{"a part within both caps", one, "a.bin", 0, 600, false, 204, "", 600},
		{"a part over the job's cap", one, "a.bin", 600, 600, false, 413, "--upload-staging-per-job", 600},
		{"another file over the job's cap", one, "b.bin", 0, 401, false, 413, "--upload-staging-per-job", 600},
		{"another job within both caps", two, "a.bin", 0, 800, false, 204, "", 1400},
		{"a third job over the token's cap", three, "a.bin", 0, 200, false, 413, "--upload-staging-per-worker", 1400},
		{"the first upload finished", one, "a.bin", 600, 0, true, 204, "", 800},
		{"the third job within the caps now", three, "a.bin", 0, 200, false, 204, "", 1000},
	}
	for _, st := range steps {
		res, body := ws.put(t, ws.token, st.fence, st.path, st.offset, st.size, st.last)
		if res.StatusCode != st.status {
			t.Fatalf("%s: %d %s, want %d", st.name, res.StatusCode, body, st.status)
		}
		if st.says != "" {
			if p := mustProblem(t, res, body); p.Slug() != "payload-too-large" || !strings.Contains(p.Detail, st.says) {
				t.Errorf("%s: %s %q, want payload-too-large naming %s", st.name, p.Slug(), p.Detail, st.says)
			}
		}
		if n := ws.staged(t); n != st.staged {
			t.Fatalf("after %s the server stages %d bytes, want %d", st.name, n, st.staged)
		}
	}
}

// TestStagedPartsGoWhenTheLeaseEnds: what an attempt staged is removed when its lease
// ends: at once when its worker learns of it or completes, and otherwise (a worker that
// is gone) at the next sweep.
func TestStagedPartsGoWhenTheLeaseEnds(t *testing.T) {
	t.Parallel()
	// stage stages a part for a new lease of ws and returns the lease.
	stage := func(t *testing.T, ws *workerServer) worker.Fence {
		t.Helper()
		f := ws.queueAndLease(t).Fence
		if res, body := ws.put(t, ws.token, f, "t1.cif", 0, 600, false); res.StatusCode != http.StatusNoContent {
			t.Fatalf("staging: %d %s", res.StatusCode, body)
		}
		if n := ws.staged(t); n != 600 {
			t.Fatalf("%d bytes staged, want 600", n)
		}
		return f
	}
	cancel := func(t *testing.T, ws *workerServer, f worker.Fence) {
		t.Helper()
		if _, err := ws.store.CancelJob(t.Context(), f.JobID, owner, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	fence := func(f worker.Fence, extra string) string {
		return `{"job_id":"` + f.JobID + `","attempt":` + strconv.Itoa(f.Attempt) + extra + `}`
	}

	// Without a sweep in the test's time, only the handler's own notice removes anything.
	t.Run("the worker learns of the end", func(t *testing.T) {
		ws := newWorkerServer(t, remote.HandlerConfig{SweepEvery: time.Hour})
		f := stage(t, ws)
		cancel(t, ws, f)
		if res, _ := ws.do(t, "POST", "/v1/worker/heartbeat", fence(f, "")); res.StatusCode != http.StatusConflict {
			t.Fatalf("the heartbeat of a canceled job: %d", res.StatusCode)
		}
		if n := ws.staged(t); n != 0 {
			t.Errorf("%d bytes stay staged after the worker was told its lease ended", n)
		}
	})
	t.Run("the worker completes with an upload unfinished", func(t *testing.T) {
		ws := newWorkerServer(t, remote.HandlerConfig{SweepEvery: time.Hour})
		f := stage(t, ws)
		if res, body := ws.do(t, "POST", "/v1/worker/complete", fence(f, `,"status":"failed","error":"boom"`)); res.StatusCode != http.StatusOK {
			t.Fatalf("complete: %d %s", res.StatusCode, body)
		}
		if n := ws.staged(t); n != 0 {
			t.Errorf("%d bytes stay staged after the attempt completed", n)
		}
	})
	t.Run("the worker is gone", func(t *testing.T) {
		ws := newWorkerServer(t, remote.HandlerConfig{SweepEvery: 10 * time.Millisecond})
		f := stage(t, ws)
		cancel(t, ws, f)
		for deadline := time.Now().Add(5 * time.Second); ws.staged(t) != 0; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d bytes stay staged 5 s after the lease ended", ws.staged(t))
			}
		}
	})
}
