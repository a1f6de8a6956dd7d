package remote_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chaperone-bio/chaperone/artifact/artifacttest"
	"github.com/chaperone-bio/chaperone/worker/remote"
)

// dyingServer is the first of two servers behind one address: it dies in the middle of
// the first log append it gets, before it answers, having appended or not; the load
// balancer sends everything after that to the second.
type dyingServer struct {
	first, second http.Handler
	landFirst     bool
	died          atomic.Bool
}

func (d *dyingServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if d.died.Load() || !strings.HasSuffix(r.URL.Path, "/log") {
		d.second.ServeHTTP(w, r)
		return
	}
	d.died.Store(true)
	if d.landFirst {
		d.first.ServeHTTP(httptest.NewRecorder(), r) // the answer dies with the server
	}
	panic(http.ErrAbortHandler) // the connection drops, unanswered
}

// TestALogAppendOutlivesItsServer: an append whose server dies before it answers goes
// again, through the other server behind the same address, and the log holds it once,
// whether the dead server had appended it or not.
func TestALogAppendOutlivesItsServer(t *testing.T) {
	t.Parallel()
	for _, landed := range []bool{false, true} {
		ws := newWorkerServer(t, remote.HandlerConfig{})
		second, err := remote.NewHandler(remote.HandlerConfig{Queue: ws.queue, Keys: ws.keys, Leases: ws.queue, Staging: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(second.Close)
		lb := httptest.NewServer(&dyingServer{first: ws.handler, second: second, landFirst: landed})
		t.Cleanup(lb.Close)
		c := client(t, lb.URL, ws.token)
		lines := []string{"== attempt 1 ==\n", "$ boltz predict in.yaml\n", "done\n"}
		var offset int64
		for _, line := range lines {
			if err := c.AppendLog(t.Context(), ws.lease.Fence, offset, []byte(line)); err != nil {
				t.Fatalf("appended %v: %v", landed, err)
			}
			offset += int64(len(line))
		}
		if got, want := artifacttest.MustReadLog(t, ws.arts, ws.lease.JobID), strings.Join(lines, ""); got != want {
			t.Errorf("appended by the dying server %v: the log is %q, want %q", landed, got, want)
		}
	}
}
