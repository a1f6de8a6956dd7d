package api

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/api/problem"
	"github.com/chaperone-bio/chaperone/apikey"
	"github.com/chaperone-bio/chaperone/job"
	"github.com/chaperone-bio/chaperone/store"
	"github.com/chaperone-bio/chaperone/worker"
	"github.com/chaperone-bio/chaperone/worker/backend"
	"github.com/chaperone-bio/chaperone/worker/remote"
)

// hostileRequests generates n malformed requests, each the raw bytes of one HTTP/1.1
// request, drawn from what an outside test of a public server throws at it: broken request
// lines and versions, control characters in headers, oversized headers, unknown transfer
// codings and expectations, paths that are not clean, query strings that do not parse,
// creates with the wrong media type, duplicate keys or broken JSON, made-up methods,
// bodies announced and never sent (a Content-Length not reached, a chunked body left
// open), and creates announcing more than the body cap.
func hostileRequests(n int, seed uint64, jobID string) []string {
	rng := rand.New(rand.NewPCG(seed, 0))
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	paths := []string{"/v1/health", "/v1/models", "/v1/jobs", "/v1/jobs/" + jobID, "/v1/jobs/" + jobID + "/results",
		"/v1/jobs/" + jobID + "/logs", "/v1/jobs/" + jobID + "/archive", "/v1/jobs/" + jobID + "/artifacts/a.cif",
		"/v1/predictions", "/v1/designs", "/v1/embeddings", "/v1/openapi.json", "/errors/invalid-input", "/nowhere"}
	garbage := func(k int) string {
		b := make([]byte, k)
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		return string(b)
	}
	line := func(method, target string) string { return method + " " + target + " HTTP/1.1\r\nHost: h\r\n" }
	create := func(contentType, body string) string {
		ct := ""
		if contentType != "" {
			ct = "Content-Type: " + contentType + "\r\n"
		}
		return line("POST", pick("/v1/predictions", "/v1/designs", "/v1/embeddings")) + ct +
			fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body)
	}
	generators := []func() string{
		func() string { return garbage(1+rng.IntN(40)) + "\r\n\r\n" },
		func() string {
			return pick("GET", "POST", "G ET", "") + " " + pick(paths...) + " " + pick("HTTP/9.9", "HTTP/1", "HTTP/1.1x", "http/1.1", "HTTP/2.0", "FOO") + "\r\nHost: h\r\n\r\n"
		},
		func() string { return "GET " + pick(paths...) + "\r\n\r\n" },
		func() string { return "GET " + garbage(1+rng.IntN(8)) + " HTTP/1.1\r\nHost: h\r\n\r\n" },
		func() string {
			return line("GET", pick(paths...)) + "X-" + pick("A", "B") + ": a" + string(rune(rng.IntN(32))) + "b\r\n\r\n"
		},
		func() string {
			return line("GET", pick(paths...)) + pick("Bad Name", "Na\x01me", ":", "X-A") + ": v\r\n\r\n"
		},
		func() string {
			return line("GET", pick(paths...)) + "X-Big: " + strings.Repeat("a", 1<<20+8<<10+rng.IntN(1000)) + "\r\n\r\n"
		},
		func() string {
			return line("POST", pick(paths...)) + "Transfer-Encoding: " + pick("gzip, chunked", "identity", "foo", "chunked, chunked") + "\r\n\r\n0\r\n\r\n"
		},
		func() string {
			return line("GET", pick(paths...)) + "Expect: " + pick("200-ok", "100-continue-please", "x") + "\r\n\r\n"
		},
		func() string {
			p := pick(paths...)
			i := 1 + rng.IntN(len(p)-1)
			return line(pick("GET", "POST", "DELETE"), p[:i]+pick("/./", "/../", "//", "/.", "/..")+p[i:]) + "\r\n"
		},
		func() string {
			return line("GET", pick("/v1/jobs", "/v1/models", "/v1/jobs/"+jobID)+"?"+pick("cursor=%%%x", "limit=%zz", "a=%", "%", "cursor=%G0", "x=1&%%=2")) + "\r\n"
		},
		func() string {
			return create(pick("", "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/jsonx", "json", "application/json; charset"), `{"sequence":"MKT"}`)
		},
		func() string {
			return create("application/json", pick(`{"sequence":"MKT","sequence":"AAA"}`, `{"targets":[{"content":"x","content":"y"}]}`,
				`{"params":{"a":1,"a":2}}`, `{"sequence":`, `{]`, `[`+strings.Repeat("[", rng.IntN(2000))+`]`, `{"sequence":1e999}`,
				`{"sequence":"`+garbage(20)+`"}`, `{"model":"`+strings.Repeat("x", rng.IntN(5000))+`"}`, garbage(rng.IntN(100))))
		},
		func() string {
			return line(pick("BREW", "PROPFIND", "TRACE", "PATCH", "PUT", "OPTIONS", "X"+garbage(3)), pick(paths...)) + "\r\n"
		},
		func() string {
			return line("GET", pick(paths...)) + pick("Authorization: Bearer "+garbage(10), "X-API-Key: \xff\xfe", "Cookie: chaperone_session="+garbage(40), "Prefer: wait="+garbage(5), "Range: bytes="+garbage(6), "If-Match: "+garbage(4)) + "\r\n\r\n"
		},
		// A body that never arrives whole, on an endpoint that reads none.
		func() string {
			return line(pick("GET", "POST", "DELETE"), pick(paths...)) + pick("Content-Length: 100000\r\n\r\nabc",
				"Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n", "Content-Length: "+strconv.Itoa(1+rng.IntN(1<<20))+"\r\n\r\n")
		},
		// A create announcing more than the body cap, with almost nothing of it.
		func() string {
			return line("POST", pick("/v1/predictions", "/v1/designs", "/v1/embeddings")) + "Content-Type: application/json\r\n" +
				"Content-Length: " + pick("8388609", "9437184", "9000000000000000000", strconv.Itoa(8<<20+1+rng.IntN(1<<30))) + "\r\n\r\n{}"
		},
	}
	out := make([]string, n)
	for i := range out {
		out[i] = generators[i%len(generators)]()
	}
	return out
}

// rawExchange sends one raw request on a new connection and reads the answer.
func rawExchange(t *testing.T, addr, req string) (*http.Response, []byte) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	// The server may answer and hang up before it read everything (431): a failed write is
	// not the test's business, the answer is.
	go io.WriteString(c, req)
	// The answer to a HEAD has a length but no body.
	method, _, _ := strings.Cut(req, " ")
	res, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: method})
	if err != nil {
		return nil, nil
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res, body
}

// internals are what no answer may show: Go's and the JSON decoder's words, chaperone's
// own types, the stores, socket addresses, stack traces.
var internals = regexp.MustCompile(`Go (value|struct)|json: |\b(worker|job|store|api|catalog|remote|backend|artifact)\.[A-Z]|sqlite|postgres|pgx|goroutine|\d+\.\d+\.\d+\.\d+:\d+`)

// answersAtOnce bounds how long any answer to a hostile request may take: none of them
// needs anything more from the client.
const answersAtOnce = 5 * time.Second

// hostileRun sends requests and checks every answer: a problem with its status when it is
// an error, showing nothing internal, no 5xx but those allowed, within answersAtOnce. It
// returns the answers by status, and how many requests the server hung up on.
func hostileRun(t *testing.T, addr string, requests []string, allowed5xx ...int) (byStatus map[int]int, errors, silent int) {
	t.Helper()
	byStatus = map[int]int{}
	for i, req := range requests {
		start := time.Now()
		res, body := rawExchange(t, addr, req)
		if took := time.Since(start); took > answersAtOnce {
			t.Errorf("request %d %q: answered after %s", i, truncate(req), took.Round(time.Millisecond))
		}
		if res == nil {
			silent++ // the server hung up without an answer
			continue
		}
		byStatus[res.StatusCode]++
		if res.StatusCode >= 500 && !slices.Contains(allowed5xx, res.StatusCode) {
			t.Errorf("request %d %q: status %d: %s", i, truncate(req), res.StatusCode, truncate(string(body)))
		}
		if res.StatusCode < 400 {
			continue
		}
		errors++
		if strings.HasPrefix(req, "HEAD ") { // an answer without a body
			if ct := res.Header.Get("Content-Type"); ct != "application/problem+json" {
				t.Errorf("request %d %q: %d %s, not a problem", i, truncate(req), res.StatusCode, ct)
			}
			continue
		}
		var p problem.Problem
		if ct := res.Header.Get("Content-Type"); ct != "application/problem+json" || json.Unmarshal(body, &p) != nil ||
			p.Status != res.StatusCode || p.Title == "" || p.Detail == "" || !strings.Contains(p.Type, "/errors/") {
			t.Errorf("request %d %q: %d %s, not a problem: %s", i, truncate(req), res.StatusCode, ct, truncate(string(body)))
		}
		if tell := internals.FindString(p.Detail); tell != "" {
			t.Errorf("request %d %q: the detail shows %q: %s", i, truncate(req), tell, p.Detail)
		}
	}
	return byStatus, errors, silent
}

// TestHostileRequestsGetProblems is the hostile suite: every error answer to a generated
// malformed request is problem+json with its status, shows nothing internal, comes at once,
// and none is a 5xx but the documented 503 and the 501 and 505 of unsupported framing. Its
// size is HOSTILE_N-tunable for longer local runs (default 1,400).
func TestHostileRequestsGetProblems(t *testing.T) {
	t.Parallel()
	hs := newHoldServer(t)
	n := 1400
	if v, err := strconv.Atoi(os.Getenv("HOSTILE_N")); err == nil && v > 0 {
		n = v
	}
	if testing.Short() {
		n = 150
	}
	byStatus, errors, silent := hostileRun(t, strings.TrimPrefix(hs.url, "http://"), hostileRequests(n, 14, hs.jobID),
		http.StatusServiceUnavailable, http.StatusNotImplemented, http.StatusHTTPVersionNotSupported)
	t.Logf("%d requests: %d answered (%d errors, all problem+json), %d hung up on; by status %v", n, n-silent, errors, silent, byStatus)
	if !testing.Short() && errors < 1000 {
		t.Errorf("only %d error answers; the suite must see at least 1,000", errors)
	}
}

func truncate(s string) string {
	if len(s) > 120 {
		return s[:120] + "…"
	}
	return s
}

// hostileWorkerRequests generates n requests to the worker endpoints of what a stolen or
// buggy worker token, or no token, sends: every endpoint, with missing, malformed,
// unknown and API-key credentials, broken JSON and values of the wrong type, unknown and
// malformed job ids, stale and absurd attempts, and uploads with broken offsets and paths.
// Most carry the live worker token, so as to reach past the token check; job is an attempt
// that the token's worker holds.
func hostileWorkerRequests(n int, seed uint64, token string, held worker.Fence) []string {
	rng := rand.New(rand.NewPCG(seed, 1))
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	garbage := func(k int) string {
		b := make([]byte, k)
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		return string(b)
	}
	auth := func() string {
		if rng.IntN(4) > 0 {
			return "Authorization: Bearer " + token + "\r\n"
		}
		return pick("", "Authorization: Bearer nope\r\n", "Authorization: Basic "+garbage(8)+"\r\n",
			"Authorization: Bearer chp_live_"+strings.Repeat("A", 40)+"\r\n", "Authorization: Bearer "+token+"x\r\n", "X-API-Key: "+token+"\r\n")
	}
	request := func(method, path, headers, body string) string {
		return fmt.Sprintf("%s %s HTTP/1.1\r\nHost: h\r\n%s%sContent-Length: %d\r\n\r\n%s", method, path, auth(), headers, len(body), body)
	}
	id := func() string {
		return pick(held.JobID, held.JobID, job.NewID(), "job_1", strings.Repeat("f", 33), "%2e%2e", "..", strings.ToUpper(held.JobID))
	}
	attempt := func() string {
		return pick(strconv.Itoa(held.Attempt), strconv.Itoa(held.Attempt+1), "0", "-1", "x", "99999999999999999999", "1.5")
	}
	fence := func() string {
		return pick(`"job_id":"`+id()+`","attempt":`+attempt(), `"job_id":7,"attempt":"1"`, `"attempt":{}`, `"job_id":null`)
	}
	body := func(fields ...string) string {
		return pick(`{`+strings.Join(fields, ",")+`}`, `{`, `[]`, `"x"`, `null`, `{"a":`+strings.Repeat("[", rng.IntN(5000))+`}`,
			`{"wait_ns":1e999}`, garbage(rng.IntN(64)), ``)
	}
	generators := []func() string{
		func() string {
			return request("POST", "/v1/worker/announce", "", body(`"worker_id":`+pick(`"w"`, `5`, `["w"]`), `"models":`+pick(`["boltz2"]`, `"boltz2"`, `[1]`), `"slots":`+pick(`1`, `-1`, `"1"`)))
		},
		func() string {
			return request("POST", "/v1/worker/lease", "", body(`"worker_id":`+pick(`"w"`, `{}`), `"models":`+pick(`[]`, `["nope"]`, `7`), `"wait_ns":`+pick(`0`, `"soon"`, `-5`)))
		},
		func() string {
			return request("POST", "/v1/worker/heartbeat", "", body(fence(), `"progress":`+pick(`{"done":"x"}`, `{"stage":7}`, `null`, `{"done":1,"total":1}`)))
		},
		func() string {
			return request("POST", "/v1/worker/complete", "", body(fence(), `"status":`+pick(`"bogus"`, `"queued"`, `"canceled"`, `5`, `""`, `"failed"`),
				`"results":`+pick(`{"rows":"x"}`, `[]`, `null`)))
		},
		func() string {
			return request("POST", "/v1/worker/"+pick("release", "hand-back", "remove"), "", body(`"worker_id":`+pick(`"other"`, `5`, `null`)))
		},
		func() string {
			return request(pick("GET", "POST", "DELETE"), "/v1/worker/"+pick("token", "nope", "", "jobs", "announce"), "", "")
		},
		func() string {
			return request("POST", "/v1/worker/jobs/"+id()+"/attempts/"+attempt()+"/log",
				pick("Upload-Offset: 0\r\n", "Upload-Offset: -3\r\n", "Upload-Offset: x\r\n", "", "Upload-Offset: 99999\r\n"), garbage(rng.IntN(200)))
		},
		func() string {
			path := pick("t1.cif", "big.bin", "../../etc/passwd", "a//b", "%2e%2e/x", strings.Repeat("a", 2000), "x\x01y")
			return request(pick("PUT", "HEAD"), "/v1/worker/jobs/"+id()+"/attempts/"+attempt()+"/artifacts/"+path,
				pick("Upload-Offset: 0\r\n", "Upload-Offset: 0\r\nUpload-Complete: 1\r\n", "Upload-Offset: -1\r\n", "Upload-Offset: 5\r\n", ""), garbage(rng.IntN(300)))
		},
		// Bodies that never arrive whole, and bodies over the caps, announced up front.
		func() string {
			return fmt.Sprintf("POST /v1/worker/%s HTTP/1.1\r\nHost: h\r\n%s%s", pick("heartbeat", "complete", "jobs/"+held.JobID+"/attempts/1/log"), auth(),
				pick("Content-Length: 100000\r\n\r\n{\"a", "Transfer-Encoding: chunked\r\n\r\n3\r\n{\"a\r\n", "Content-Length: 99999999999\r\nUpload-Offset: 0\r\n\r\n{}"))
		},
	}
	out := make([]string, n)
	for i := range out {
		out[i] = generators[i%len(generators)]()
	}
	return out
}

// TestHostileWorkerRequestsGetProblems: the worker endpoints, which a stolen or buggy worker
// token reaches, answer every bad request as the public API does: problem+json with its
// status, nothing internal, at once, and no 5xx at all. Its size is HOSTILE_N-tunable.
func TestHostileWorkerRequestsGetProblems(t *testing.T) {
	t.Parallel()
	var token string
	var held worker.Fence
	hs := newHoldServerWith(t, false, func(cfg *Config) {
		queue := backend.New(backend.Config{Store: cfg.Store, Artifacts: cfg.Artifacts, Logger: quietLog})
		// A body that stops arriving is answered after a quarter second here, not after
		// half a minute as by default.
		h, err := remote.NewHandler(remote.HandlerConfig{Queue: queue, Keys: cfg.Store, Leases: queue,
			Staging: t.TempDir(), BodyIdle: 250 * time.Millisecond, Logger: quietLog})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(h.Close)
		cfg.Workers = h
		var rec store.Key
		token, rec = apikey.New("hostile", time.Now())
		rec.Worker = true
		if err := cfg.Store.CreateKey(t.Context(), rec); err != nil {
			t.Fatal(err)
		}
		held = heldJob(t, cfg.Store, "hostile/w")
	})
	n := 600
	if v, err := strconv.Atoi(os.Getenv("HOSTILE_N")); err == nil && v > 0 {
		n = v / 2
	}
	if testing.Short() {
		n = 100
	}
	byStatus, errors, silent := hostileRun(t, strings.TrimPrefix(hs.url, "http://"), hostileWorkerRequests(n, 23, token, held))
	t.Logf("%d worker requests: %d answered (%d errors, all problem+json), %d hung up on; by status %v", n, n-silent, errors, silent, byStatus)
	if !testing.Short() && errors < n/2 {
		t.Errorf("only %d error answers of %d; the suite must see more", errors, n)
	}
}

// heldJob queues a job and leases it to workerID, and returns its attempt.
func heldJob(t *testing.T, st store.Store, workerID string) worker.Fence {
	t.Helper()
	now := time.Now()
	j := &job.Job{ID: job.NewID(), Owner: job.Owner{Kind: job.OwnerIP, ID: "192.0.2.9"}, Kind: job.PredictKind,
		Model: "boltz2", RunModel: "boltz2", Status: job.Queued, CreatedAt: now, Total: 1}
	if _, err := st.CreateJob(t.Context(), j, store.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	l, err := st.LeaseJob(t.Context(), store.LeaseRequest{WorkerID: workerID, Models: []string{"boltz2"}, Now: now, LeaseUntil: now.Add(time.Hour)})
	if err != nil || l == nil || l.ID != j.ID {
		t.Fatalf("lease: %v %v", l, err)
	}
	return worker.Fence{JobID: l.ID, Attempt: l.Attempt}
}
