package align

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/align/aligntest"
)

// The made-up chains of the test databases, which the stand-in server aligns too.
const (
	chainA = aligntest.ChainA
	chainB = aligntest.ChainB
)

var (
	_ Searcher = (*Remote)(nil)
	_ Searcher = (*Local)(nil)
)

func TestRemote(t *testing.T) {
	tests := []struct {
		name   string
		chains []string
		// The stand-in's answers to successive submissions, polls and downloads of each
		// ticket, the last repeating: a ticket status, an HTTP status code, or for
		// downloads "archive", "garbage" (not a tar.gz) or "swapped" (blocks of the
		// wrong chains).
		submit, poll, download []string
		cancelAtPoll           int  // the test cancels its context at this poll
		unreachable            bool // no server listens at the URL
		wantErr                string
		wantSubmits            int // of the unpaired ticket; -1 when the paired ticket's failure may stop it first
	}{
		{name: "monomer", chains: []string{chainA}, submit: []string{"COMPLETE"}, wantSubmits: 1},
		{name: "heteromer pairs its chains", chains: []string{chainA, chainB, chainA}, submit: []string{"COMPLETE"}, wantSubmits: 1},
		{name: "homodimer is one chain, unpaired", chains: []string{chainB, chainB}, submit: []string{"COMPLETE"}, wantSubmits: 1},
		{name: "pending, running, complete", chains: []string{chainA, chainB},
			submit: []string{"PENDING"}, poll: []string{"RUNNING", "RUNNING", "COMPLETE"}, wantSubmits: 1},
		{name: "error every time", chains: []string{chainA}, submit: []string{"PENDING"}, poll: []string{"ERROR"},
			wantErr: "/ticket/msa on URL failed (try 3 of 3): ticket msa-3: the server answered ERROR", wantSubmits: 3},
		{name: "rate limit and maintenance, then complete", chains: []string{chainA, chainB},
			submit: []string{"RATELIMIT", "MAINTENANCE", "COMPLETE"}, wantSubmits: 3},
		{name: "rate limit every time", chains: []string{chainA}, submit: []string{"RATELIMIT"},
			wantErr: `429 Too Many Requests: "{\"status\":\"RATELIMIT\",\"reason\":\"too many jobs from your address\"}"`, wantSubmits: 3},
		{name: "5xx, then success", chains: []string{chainA, chainB},
			submit: []string{"503", "COMPLETE"}, download: []string{"502", "archive"}, wantSubmits: 3},
		{name: "5xx while polling, then success", chains: []string{chainA},
			submit: []string{"PENDING"}, poll: []string{"500", "COMPLETE"}, wantSubmits: 2},
		{name: "unreachable", chains: []string{chainA}, unreachable: true,
			wantErr: "/ticket/msa on URL failed (try 3 of 3): the server is unreachable"},
		{name: "malformed archive", chains: []string{chainA}, submit: []string{"COMPLETE"}, download: []string{"garbage"},
			wantErr: "failed (try 3 of 3): the archive of ticket msa-3: malformed alignments: gzip: invalid header", wantSubmits: 3},
		{name: "alignments of the wrong chains", chains: []string{chainA, chainB}, submit: []string{"COMPLETE"}, download: []string{"swapped"},
			wantErr: "malformed alignments: the row of query 101 is not its sequence", wantSubmits: -1},
		{name: "refused query fails at once", chains: []string{chainA}, submit: []string{"400"},
			wantErr: "/ticket/msa on URL failed (try 1 of 3): POST /ticket/msa: 400 Bad Request", wantSubmits: 1},
		{name: "cancel mid-poll", chains: []string{chainA}, submit: []string{"PENDING"}, poll: []string{"RUNNING"},
			cancelAtPoll: 3, wantErr: context.Canceled.Error(), wantSubmits: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			s := newStandIn(t, tc.chains, tc.submit, tc.poll, tc.download)
			if tc.cancelAtPoll > 0 {
				s.onPoll = func(n int) {
					if n == tc.cancelAtPoll {
						cancel()
					}
				}
			}
			if tc.unreachable {
				s.Close()
			}
			r := testRemote(t, s.URL)
			start := time.Now()
			res, err := r.Search(ctx, Query{Chains: tc.chains})
			if elapsed := time.Since(start); elapsed > 5*time.Second {
				t.Errorf("the search took %v", elapsed)
			}
			if tc.wantErr != "" {
				want := strings.ReplaceAll(tc.wantErr, "URL", s.URL)
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("error %v, want one containing %q", err, want)
				}
				if tc.cancelAtPoll > 0 && !errors.Is(err, context.Canceled) {
					t.Errorf("error %v is not context.Canceled", err)
				}
			} else if err != nil {
				t.Fatal(err)
			} else {
				s.checkResult(res, r.Source())
			}
			if got := s.count("submit msa"); tc.wantSubmits >= 0 && got != tc.wantSubmits {
				t.Errorf("%d submissions of the unpaired ticket, want %d", got, tc.wantSubmits)
			}
		})
	}
}

// testRemote is a Remote on url that polls and backs off in milliseconds and gives up
// after 3 failed tries.
func testRemote(t *testing.T, url string) *Remote {
	t.Helper()
	r, err := NewRemote(RemoteConfig{URL: url, Poll: time.Millisecond,
		Retry: Retry{Attempts: 3, Backoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// standIn is a ColabFold MMseqs2 server of the test's own: it checks the forms of the
// tickets, answers each request from its script and serves archives of alignments made up
// for the query's chains.
type standIn struct {
	*httptest.Server
	t                      *testing.T
	distinct               []string
	submit, poll, download []string
	onPoll                 func(n int) // called with the number of each poll

	mu     sync.Mutex
	counts map[string]int
}

func newStandIn(t *testing.T, chains, submit, poll, download []string) *standIn {
	s := &standIn{t: t, submit: submit, poll: poll, download: download, counts: map[string]int{}}
	for _, c := range chains {
		if !slices.Contains(s.distinct, c) {
			s.distinct = append(s.distinct, c)
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /ticket/msa", func(w http.ResponseWriter, r *http.Request) { s.ticket(w, r, "msa", "env") })
	mux.HandleFunc("POST /ticket/pair", func(w http.ResponseWriter, r *http.Request) { s.ticket(w, r, "pair", "pairgreedy") })
	mux.HandleFunc("GET /ticket/{id}", func(w http.ResponseWriter, r *http.Request) {
		kind, _, _ := strings.Cut(r.PathValue("id"), "-")
		n := s.next("poll " + kind)
		if s.onPoll != nil {
			s.onPoll(n)
		}
		s.answer(w, r.PathValue("id"), pick(s.poll, n))
	})
	mux.HandleFunc("GET /result/download/{id}", func(w http.ResponseWriter, r *http.Request) {
		kind, _, _ := strings.Cut(r.PathValue("id"), "-")
		switch a := pick(s.download, s.next("download "+kind)); a {
		case "", "archive":
			w.Write(s.archive(kind, false))
		case "swapped":
			w.Write(s.archive(kind, true))
		case "garbage":
			w.Write([]byte("<html>not an archive</html>"))
		default:
			code, _ := strconv.Atoi(a)
			http.Error(w, "the stand-in fails", code)
		}
	})
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// pick is the answer of a script to its n-th request (from 1); the last answer repeats.
func pick(script []string, n int) string {
	if len(script) == 0 {
		return ""
	}
	return script[min(n, len(script))-1]
}

func (s *standIn) next(what string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts[what]++
	return s.counts[what]
}

func (s *standIn) count(what string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[what]
}

// ticket checks a submission as ColabFold's client makes it: the distinct chains numbered
// from 101 in q, and the mode.
func (s *standIn) ticket(w http.ResponseWriter, r *http.Request, kind, mode string) {
	n := s.next("submit " + kind)
	var q strings.Builder
	for i, c := range s.distinct {
		fmt.Fprintf(&q, ">%d\n%s\n", 101+i, c)
	}
	if got := r.FormValue("q"); got != q.String() {
		s.t.Errorf("%s ticket q = %q, want %q", kind, got, q.String())
	}
	if got := r.FormValue("mode"); got != mode {
		s.t.Errorf("%s ticket mode = %q, want %q", kind, got, mode)
	}
	if kind == "pair" && len(s.distinct) < 2 {
		s.t.Errorf("a pair ticket for %d distinct chains", len(s.distinct))
	}
	if r.UserAgent() == "" || strings.HasPrefix(r.UserAgent(), "Go-http-client") {
		s.t.Errorf("User-Agent %q does not name chaperone", r.UserAgent())
	}
	s.answer(w, kind+"-"+strconv.Itoa(n), pick(s.submit, n))
}

// answer writes a ticket's status as the MMseqs2-App server does: a rate limit as HTTP
// 429 with a reason, an HTTP failure as its code.
func (s *standIn) answer(w http.ResponseWriter, id, status string) {
	if code, err := strconv.Atoi(status); err == nil {
		http.Error(w, "the stand-in fails", code)
		return
	}
	if status == "RATELIMIT" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		fmt.Fprint(w, `{"status":"RATELIMIT","reason":"too many jobs from your address"}`)
		return
	}
	fmt.Fprintf(w, `{"id":%q,"status":%q}`, id, status)
}

// pairBlock is a made-up paired block of distinct chain i: two organisms shared by every
// chain.
func pairBlock(i int, seq string) string {
	return fmt.Sprintf(">%d\n%s\n>UniRef100_orgX_%d\n%s\n>UniRef100_orgY_%d\n%s\n", 101+i, seq, i, "A"+seq[1:], i, seq[:10]+"a"+seq[10:])
}

// archive is the result of a ticket of the stand-in's chains; swapped gives each chain's
// block the number of another.
func (s *standIn) archive(kind string, swapped bool) []byte {
	join := func(block func(int, string) string) []byte {
		var b bytes.Buffer
		for i, c := range s.distinct {
			if swapped {
				c = s.distinct[(i+1)%len(s.distinct)]
			}
			b.WriteString(block(i, c))
			b.WriteByte(0)
		}
		return b.Bytes()
	}
	files := map[string][]byte{"pair.a3m": join(pairBlock)}
	if kind == "msa" {
		files = map[string][]byte{"uniref.a3m": join(aligntest.UnirefBlock), "bfd.mgnify30.metaeuk30.smag30.a3m": join(aligntest.EnvBlock), "pdb70.m8": nil}
	}
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, data := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data))}); err != nil {
			s.t.Fatal(err)
		}
		tw.Write(data)
	}
	if err := tw.Close(); err != nil {
		s.t.Fatal(err)
	}
	gz.Close()
	return buf.Bytes()
}

// checkResult checks a search's result against the alignments the stand-in served.
func (s *standIn) checkResult(res Result, src Source) {
	t := s.t
	if !reflect.DeepEqual(res.Chains, s.distinct) {
		t.Errorf("chains %q, want %q", res.Chains, s.distinct)
	}
	var unpaired, paired []string
	for i, c := range s.distinct {
		unpaired = append(unpaired, aligntest.UnirefBlock(i, c)+aligntest.EnvBlock(i, c))
		paired = append(paired, pairBlock(i, c))
	}
	if len(s.distinct) < 2 {
		paired = nil
	}
	if !reflect.DeepEqual(res.Unpaired, unpaired) {
		t.Errorf("unpaired alignments\n%q\nwant\n%q", res.Unpaired, unpaired)
	}
	if !reflect.DeepEqual(res.Paired, paired) {
		t.Errorf("paired alignments\n%q\nwant\n%q", res.Paired, paired)
	}
	if want := (Source{Server: s.URL, Mode: "env", Pairing: "pairgreedy"}); res.Source != want || src != want {
		t.Errorf("source %+v (searcher's %+v), want %+v", res.Source, src, want)
	}
	for i, c := range s.distinct {
		u, p, ok := res.Chain(c)
		if !ok || u != unpaired[i] || (paired != nil && p != paired[i]) || (paired == nil && p != "") {
			t.Errorf("Chain(%d) = %q, %q, %v", i+1, u, p, ok)
		}
	}
}

func TestNewRemoteRefuses(t *testing.T) {
	for _, cfg := range []RemoteConfig{
		{URL: "api.colabfold.com"},
		{URL: "https://api.colabfold.com", Mode: "all"},
		{URL: "https://api.colabfold.com", Pairing: "pairwise"},
	} {
		if _, err := NewRemote(cfg); err == nil {
			t.Errorf("NewRemote(%+v) took it", cfg)
		}
	}
}

func TestRetryWait(t *testing.T) {
	r := Retry{Backoff: 5 * time.Second, MaxBackoff: time.Minute}
	for n, want := range []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second, 40 * time.Second, time.Minute, time.Minute} {
		if got := r.wait(n + 1); got != want {
			t.Errorf("wait after failure %d: %v, want %v", n+1, got, want)
		}
	}
}

func TestQueryRefuses(t *testing.T) {
	for _, q := range []Query{{}, {Chains: []string{chainA, ""}}, {Chains: []string{"mskie"}}, {Chains: []string{"MSK IE"}}} {
		if _, err := q.distinct(); err == nil {
			t.Errorf("%q taken", q.Chains)
		}
	}
}

// A private server behind an authenticating proxy takes the credentials it is given, and
// refuses a search without them at once, in its words.
func TestRemoteSendsCredentials(t *testing.T) {
	t.Parallel()
	standIn := aligntest.NewColabFold(0)
	defer standIn.Close()
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, ok := r.BasicAuth()
		if !ok || user != "lab" || pass != "s3cret" || r.Header.Get("X-Msa-Key") != "k1" {
			http.Error(w, "credentials, please", http.StatusUnauthorized)
			return
		}
		standIn.Config.Handler.ServeHTTP(w, r)
	}))
	defer proxy.Close()
	for _, tc := range []struct {
		name    string
		cfg     RemoteConfig
		wantErr string
	}{
		{"with them", RemoteConfig{Username: "lab", Password: "s3cret", APIKeyHeader: "X-Msa-Key", APIKey: "k1"}, ""},
		{"without", RemoteConfig{}, "401 Unauthorized"},
		{"a wrong key", RemoteConfig{Username: "lab", Password: "s3cret", APIKey: "k1"}, "credentials, please"},
	} {
		tc.cfg.URL, tc.cfg.Poll = proxy.URL, time.Millisecond
		r, err := NewRemote(tc.cfg)
		if err != nil {
			t.Fatal(err)
		}
		_, err = r.Search(context.Background(), Query{Chains: []string{chainA}})
		if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%s: %v; want %q", tc.name, err, tc.wantErr)
		}
	}
}
