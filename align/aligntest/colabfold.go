// Package aligntest is a stand-in of a ColabFold MMseqs2 server for tests and benchmarks:
// it speaks the MMseqs2-App API that align.Remote speaks (package align's doc), answers
// any query with made-up alignments derived from its chains, can take a set time to
// answer, and counts the searches it was asked for. It is a test fixture: nothing a
// running server offers uses it.
package aligntest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ColabFold is a running stand-in server.
type ColabFold struct {
	*httptest.Server
	delay time.Duration

	mu       sync.Mutex
	tickets  map[string]*ticket
	searches map[string]int // unpaired searches per distinct chain
	pairs    int            // paired searches
	fail     []string       // statuses the next tickets end in, first to last
}

type ticket struct {
	kind   string // msa or pair
	chains []string
	ready  time.Time
	status string // what the ticket ends in: COMPLETE, ERROR, …
}

// NewColabFold starts a stand-in whose tickets complete delay after they were submitted;
// Close stops it.
func NewColabFold(delay time.Duration) *ColabFold {
	c := &ColabFold{delay: delay, tickets: map[string]*ticket{}, searches: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /ticket/msa", func(w http.ResponseWriter, r *http.Request) { c.submit(w, r, "msa") })
	mux.HandleFunc("POST /ticket/pair", func(w http.ResponseWriter, r *http.Request) { c.submit(w, r, "pair") })
	mux.HandleFunc("GET /ticket/{id}", c.status)
	mux.HandleFunc("GET /result/download/{id}", c.download)
	c.Server = httptest.NewServer(mux)
	return c
}

// FailNext makes the next tickets end in these statuses (ERROR, RATELIMIT, MAINTENANCE,
// or "garbage" for an archive that is not one), one each, in order.
func (c *ColabFold) FailNext(statuses ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fail = append(c.fail, statuses...)
}

// Searches counts the unpaired tickets that held the chain seq.
func (c *ColabFold) Searches(seq string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.searches[seq]
}

// Total counts every ticket, unpaired and paired.
func (c *ColabFold) Total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.pairs
	for _, k := range c.searches {
		n += k
	}
	return n
}

// submit reads a query as ColabFold's client writes it: ">101\nSEQ\n>102\nSEQ\n…".
func (c *ColabFold) submit(w http.ResponseWriter, r *http.Request, kind string) {
	var chains []string
	lines := strings.Split(strings.TrimSpace(r.FormValue("q")), "\n")
	for i := 0; i+1 < len(lines); i += 2 {
		if lines[i] != ">"+strconv.Itoa(101+len(chains)) {
			http.Error(w, "a query numbers its chains >101, >102, …", http.StatusBadRequest)
			return
		}
		chains = append(chains, strings.TrimSpace(lines[i+1]))
	}
	if len(chains) == 0 || len(lines)%2 != 0 {
		http.Error(w, "an empty or malformed query", http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	status := "COMPLETE"
	if len(c.fail) > 0 {
		status, c.fail = c.fail[0], c.fail[1:]
	}
	if status == "RATELIMIT" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		fmt.Fprint(w, `{"status":"RATELIMIT","reason":"the stand-in limits this address"}`)
		return
	}
	id := fmt.Sprintf("%s-%d", kind, len(c.tickets)+1)
	c.tickets[id] = &ticket{kind: kind, chains: chains, ready: time.Now().Add(c.delay), status: status}
	if kind == "pair" {
		c.pairs++
	} else {
		for _, s := range chains {
			c.searches[s]++
		}
	}
	// A ticket of no delay is complete at once, as the server answers a query it searched
	// before; the others are pending.
	answer := "PENDING"
	if c.delay == 0 && status == "COMPLETE" {
		answer = status
	}
	fmt.Fprintf(w, `{"id":%q,"status":%q}`, id, answer)
}

func (c *ColabFold) lookup(id string) (*ticket, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.tickets[id]
	return t, ok
}

func (c *ColabFold) status(w http.ResponseWriter, r *http.Request) {
	t, ok := c.lookup(r.PathValue("id"))
	if !ok {
		http.Error(w, "unknown ticket", http.StatusNotFound)
		return
	}
	status := "RUNNING"
	if !time.Now().Before(t.ready) {
		status = t.status
		if status == "garbage" {
			status = "COMPLETE"
		}
	}
	fmt.Fprintf(w, `{"id":%q,"status":%q}`, r.PathValue("id"), status)
}

func (c *ColabFold) download(w http.ResponseWriter, r *http.Request) {
	t, ok := c.lookup(r.PathValue("id"))
	if !ok || time.Now().Before(t.ready) {
		http.Error(w, "no such result", http.StatusNotFound)
		return
	}
	if t.status == "garbage" {
		fmt.Fprint(w, "<html>not an archive</html>")
		return
	}
	files := map[string]string{"pair.a3m": join(t.chains, PairedBlock)}
	if t.kind == "msa" {
		files = map[string]string{"uniref.a3m": join(t.chains, UnirefBlock),
			"bfd.mgnify30.metaeuk30.smag30.a3m": join(t.chains, EnvBlock), "pdb70.m8": ""}
	}
	w.Write(archive(files))
}

// join writes every chain's block, each ended by a NUL byte as result2msa ends them.
func join(chains []string, block func(i int, seq string) string) string {
	var b strings.Builder
	for i, s := range chains {
		b.WriteString(block(i, s))
		b.WriteByte(0)
	}
	return b.String()
}

// UnirefBlock is the stand-in's UniRef block of distinct chain i: the query and two
// made-up hits, one with a substitution, one with a lower-case insertion and a deletion.
func UnirefBlock(i int, seq string) string {
	n := len(seq)
	return fmt.Sprintf(">%d\n%s\n>UniRef100_U%d\t120\t0.9\n%s\n>UniRef100_V%d\t90\t0.7\n%s\n",
		101+i, seq, i, "W"+seq[1:], i, seq[:n/2]+"gk"+seq[n/2:max(n/2, n-3)]+strings.Repeat("-", min(3, n-n/2)))
}

// EnvBlock is the stand-in's environmental block of distinct chain i.
func EnvBlock(i int, seq string) string {
	return fmt.Sprintf(">%d\n%s\n>MGYP%d\t80\t0.6\n%s\n", 101+i, seq, i, strings.Repeat("-", min(3, len(seq)))+seq[min(3, len(seq)):])
}

// PairedBlock is the stand-in's paired block of distinct chain i: the query and one hit
// of each of two organisms, which every chain's block has, in the same order.
func PairedBlock(i int, seq string) string {
	return fmt.Sprintf(">%d\n%s\n>UniRef100_orgX_%d\n%s\n>UniRef100_orgY_%d\n%s\n", 101+i, seq, i, "A"+seq[1:], i, seq[:len(seq)-1]+"G")
}

func archive(files map[string]string) []byte {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, data := range files {
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data))})
		tw.Write([]byte(data))
	}
	tw.Close()
	gz.Close()
	return buf.Bytes()
}
