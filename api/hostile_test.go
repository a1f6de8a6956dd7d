package api

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/api/problem"
)

// hostileRequests generates n malformed requests, each the raw bytes of one HTTP/1.1
// request, drawn from what an outside test of a public server throws at it: broken request
// lines and versions, control characters in headers, oversized headers, unknown transfer
// codings and expectations, paths that are not clean, query strings that do not parse,
// creates with the wrong media type, duplicate keys or broken JSON, and made-up methods.
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
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return nil, nil
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res, body
}

// TestHostileRequestsGetProblems is the hostile suite: every error answer to a generated
// malformed request is problem+json with its status, and none is a 5xx but the documented
// 503. Its size is HOSTILE_N-tunable for longer local runs (default 1,200).
func TestHostileRequestsGetProblems(t *testing.T) {
	t.Parallel()
	hs := newHoldServer(t)
	addr := strings.TrimPrefix(hs.url, "http://")
	n := 1200
	if testing.Short() {
		n = 150
	}
	var answered, errors, silent int
	byStatus := map[int]int{}
	for i, req := range hostileRequests(n, 14, hs.jobID) {
		res, body := rawExchange(t, addr, req)
		if res == nil {
			silent++ // the server hung up without an answer
			continue
		}
		answered++
		byStatus[res.StatusCode]++
		if res.StatusCode >= 500 && res.StatusCode != http.StatusServiceUnavailable && res.StatusCode != http.StatusNotImplemented &&
			res.StatusCode != http.StatusHTTPVersionNotSupported {
			t.Errorf("request %d %q: status %d", i, truncate(req), res.StatusCode)
		}
		if res.StatusCode < 400 {
			continue
		}
		errors++
		var p problem.Problem
		if ct := res.Header.Get("Content-Type"); ct != "application/problem+json" || json.Unmarshal(body, &p) != nil ||
			p.Status != res.StatusCode || p.Title == "" || p.Detail == "" || !strings.Contains(p.Type, "/errors/") {
			t.Errorf("request %d %q: %d %s, not a problem: %s", i, truncate(req), res.StatusCode, ct, truncate(string(body)))
		}
	}
	t.Logf("%d requests: %d answered (%d errors, all problem+json), %d hung up on; by status %v", n, answered, errors, silent, byStatus)
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
