package api

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/catalog"
	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/store"
	"github.com/chaperone-bio/chaperone/store/sqlite"
)

// holdServer is an API served over loopback through its Listener, as app serves it, with a
// running job of the loopback client's to hold on.
type holdServer struct {
	t        *testing.T
	srv      *Server
	st       *sqlite.Store
	url      string
	jobID    string
	hijacked atomic.Int64 // connections net/http handed over
}

func newHoldServer(t *testing.T) *holdServer { return newHoldServerOn(t, false) }

// newHoldServerOn serves the API; with opaque set, over connections that hide their file
// descriptor (as a listener of a proxy library may), so that a hold watches for the client
// hanging up by reading, not by epoll.
func newHoldServerOn(t *testing.T, opaque bool) *holdServer {
	return newHoldServerWith(t, opaque, func(*Config) {})
}

// newHoldServerWith is newHoldServerOn with the API's Config changed by configure before
// the server starts.
func newHoldServerWith(t *testing.T, opaque bool, configure func(*Config)) *holdServer {
	t.Helper()
	ctx := context.Background()
	st, arts := testStores(t)
	now := time.Now()
	j := &job.Job{ID: job.NewID(), Owner: job.Owner{Kind: job.OwnerIP, ID: "127.0.0.1"}, Kind: job.PredictKind,
		Model: "boltz2", RunModel: "boltz2", Status: job.Queued, CreatedAt: now, Total: 1}
	if _, err := st.CreateJob(ctx, j, store.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if l, err := st.LeaseJob(ctx, store.LeaseRequest{WorkerID: "w", Models: []string{"boltz2"}, Now: now, LeaseUntil: now.Add(time.Hour)}); err != nil || l == nil {
		t.Fatalf("lease: %v %v", l, err)
	}
	hs := &holdServer{t: t, st: st, jobID: j.ID}
	// Every hold of these tests comes from one client: lift the per-client bounds.
	limits := catalog.DefaultLimits()
	limits.ConnectionsPerClient, limits.HeldWaitsPerClient = 1<<12, 1<<12
	cfg := Config{Catalog: catalog.New(limits), Store: st, Artifacts: arts,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), WorkerTTL: time.Hour}
	configure(&cfg)
	hs.srv = New(cfg)
	ts := httptest.NewUnstartedServer(hs.srv)
	if opaque {
		ts.Listener = opaqueListener{ts.Listener}
	}
	ts.Listener = hs.srv.Listener(ts.Listener)
	ts.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateHijacked {
			hs.hijacked.Add(1)
		}
	}
	ts.Start()
	t.Cleanup(func() {
		hs.srv.EndHolds(context.Background())
		ts.Close()
	})
	hs.url = ts.URL
	return hs
}

// opaqueListener accepts connections that are not a syscall.Conn.
type opaqueListener struct{ net.Listener }

func (l opaqueListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return struct{ net.Conn }{c}, nil
}

// untilHeld waits until the server holds n requests.
func (hs *holdServer) untilHeld(n int64) {
	hs.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for hs.srv.holding.Load() != n {
		if time.Now().After(deadline) {
			hs.t.Fatalf("the server holds %d requests, want %d", hs.srv.holding.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func (hs *holdServer) succeed() {
	hs.t.Helper()
	if err := hs.st.CompleteJob(context.Background(), hs.jobID, 1, store.Outcome{Status: job.Succeeded, Results: &job.Results{}, Now: time.Now()}); err != nil {
		hs.t.Fatal(err)
	}
}

// response is what a held request got.
type response struct {
	res    *http.Response
	status string // the job's
	reused bool   // sent on a connection of an earlier request
	err    error
}

// get sends GET /v1/jobs/{id} with the given Prefer on client, in the background.
func (hs *holdServer) get(ctx context.Context, client *http.Client, prefer string) <-chan response {
	out := make(chan response, 1)
	go func() {
		var r response
		ctx := httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { r.reused = i.Reused }})
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, hs.url+"/v1/jobs/"+hs.jobID, nil)
		if prefer != "" {
			req.Header.Set("Prefer", prefer)
		}
		r.res, r.err = client.Do(req)
		if r.err == nil {
			var j struct{ Status string }
			r.err = json.NewDecoder(r.res.Body).Decode(&j)
			r.res.Body.Close()
			r.status = j.Status
		}
		out <- r
	}()
	return out
}

func receive(t *testing.T, ch <-chan response) response {
	t.Helper()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatal(r.err)
		}
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no response")
		return response{}
	}
}

func TestAHeldRequestLeavesNetHTTPAndItsConnectionServesTheNextRequest(t *testing.T) {
	t.Parallel()
	hs := newHoldServer(t)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	defer client.CloseIdleConnections()

	held := hs.get(t.Context(), client, "wait=30")
	hs.untilHeld(1)
	if n := hs.hijacked.Load(); n != 1 {
		t.Fatalf("%d connections left net/http while held, want 1", n)
	}
	hs.succeed()
	r := receive(t, held)
	if r.res.StatusCode != http.StatusOK || r.status != "succeeded" || r.res.Header.Get("Preference-Applied") != "wait" ||
		r.res.Header.Get("Content-Type") != "application/json" || r.res.Header.Get("X-Request-Id") == "" || r.res.Close {
		t.Fatalf("held answer: %d, job %s, header %v, close %v", r.res.StatusCode, r.status, r.res.Header, r.res.Close)
	}
	next := receive(t, hs.get(t.Context(), client, ""))
	if next.res.StatusCode != http.StatusOK || !next.reused {
		t.Fatalf("next request: %d, on the same connection %v", next.res.StatusCode, next.reused)
	}
	if n := hs.srv.holding.Load(); n != 0 {
		t.Fatalf("%d holds left", n)
	}
}

func TestADetachedHoldEnds(t *testing.T) {
	t.Parallel()
	t.Run("when its time is up, with the job as it stands", func(t *testing.T) {
		t.Parallel()
		hs := newHoldServer(t)
		start := time.Now()
		r := receive(t, hs.get(t.Context(), http.DefaultClient, "wait=1"))
		if r.res.StatusCode != http.StatusOK || r.status != "running" || r.res.Header.Get("Preference-Applied") != "wait" {
			t.Fatalf("%d, job %s, header %v", r.res.StatusCode, r.status, r.res.Header)
		}
		if took := time.Since(start); took < time.Second {
			t.Fatalf("a hold of 1 s ended after %v", took)
		}
	})
	for _, opaque := range []bool{false, true} {
		t.Run(fmt.Sprintf("when the client hangs up (opaque connection: %v)", opaque), func(t *testing.T) {
			t.Parallel()
			hs := newHoldServerOn(t, opaque)
			ctx, hangUp := context.WithCancel(t.Context())
			ch := hs.get(ctx, http.DefaultClient, "wait=60")
			hs.untilHeld(1)
			hangUp()
			<-ch
			hs.untilHeld(0)
		})
	}
	t.Run("at shutdown, closing the connection", func(t *testing.T) {
		t.Parallel()
		hs := newHoldServer(t)
		ch := hs.get(t.Context(), http.DefaultClient, "wait=60")
		hs.untilHeld(1)
		hs.srv.EndHolds(t.Context())
		r := receive(t, ch)
		if r.res.StatusCode != http.StatusOK || r.status != "running" || !r.res.Close {
			t.Fatalf("%d, job %s, close %v", r.res.StatusCode, r.status, r.res.Close)
		}
	})
}

// A client may send its next request before the held one is answered (pipelining): it is
// answered after, on the same connection.
func TestAPipelinedRequestIsAnsweredAfterTheHeldOne(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		opaque bool
		split  bool // the next request is sent once the first is held
	}{
		{"sent together", false, false},
		{"sent during the hold", false, true},
		{"sent during the hold, opaque connection", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			hs := newHoldServerOn(t, tc.opaque)
			conn, err := net.Dial("tcp", hs.url[len("http://"):])
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			path := "/v1/jobs/" + hs.jobID
			held := "GET " + path + " HTTP/1.1\r\nHost: x\r\nPrefer: wait=30\r\n\r\n"
			next := "GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n"
			if !tc.split {
				held, next = held+next, ""
			}
			if _, err := io.WriteString(conn, held); err != nil {
				t.Fatal(err)
			}
			hs.untilHeld(1)
			if _, err := io.WriteString(conn, next); err != nil {
				t.Fatal(err)
			}
			hs.succeed()
			expectAnswers(t, conn, "wait", "")
		})
	}
}

// expectAnswers reads one 200 per Preference-Applied given, each with the job succeeded.
func expectAnswers(t *testing.T, conn net.Conn, preferenceApplied ...string) {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(conn)
	for i, want := range preferenceApplied {
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		var j struct{ Status string }
		err = json.NewDecoder(res.Body).Decode(&j)
		res.Body.Close()
		if err != nil || res.StatusCode != http.StatusOK || j.Status != "succeeded" || res.Header.Get("Preference-Applied") != want {
			t.Fatalf("response %d: %d, job %q (%v), Preference-Applied %q", i, res.StatusCode, j.Status, err, res.Header.Get("Preference-Applied"))
		}
	}
}

// Heartbeats keep a running job's lease and change nothing a holder waits for: they wake
// no holder, and only the end of the job answers them.
func TestHeartbeatsWakeNoHolder(t *testing.T) {
	t.Parallel()
	hs := newHoldServer(t)
	const holders = 20
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: holders}}
	defer client.CloseIdleConnections()
	var answers []<-chan response
	for range holders {
		answers = append(answers, hs.get(t.Context(), client, "wait=30"))
	}
	hs.untilHeld(holders)
	ctx := context.Background()
	for range 20 {
		now := time.Now()
		if err := hs.st.Heartbeat(ctx, store.Heartbeat{ID: hs.jobID, Attempt: 1, Activity: true, Now: now, LeaseUntil: now.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	hs.succeed()
	for i, ch := range answers {
		if r := receive(t, ch); r.status != "succeeded" {
			t.Errorf("holder %d was answered with the job %s: a heartbeat woke it", i, r.status)
		}
	}
}
