package pydriver

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/chaperone-bio/chaperone/align"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/pydriver/pydrivertest"
	"github.com/chaperone-bio/chaperone/internal/enginerun"
	"github.com/chaperone-bio/chaperone/internal/golden"
)

// searchResult reads a search's result from testdata/alignments: monomer (ColabFold's
// uniref and environmental blocks) or heterodimer (also paired, greedily, on both).
func searchResult(t testing.TB, name string) align.Result {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "alignments", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var r align.Result
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// The A3M each chain of a search's result is handed, as golden files: the query once,
// paired rows keyed by row, each unpaired row once.
func TestTheAlignmentESMFold2ReadsOfASearch(t *testing.T) {
	t.Parallel()
	golden.EachInput(t, "testdata/alignments/*.json", func(t *testing.T, name string, _ []byte, goldenPath string) {
		res := searchResult(t, name)
		got, err := esmAlignments(res)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for i, a := range got {
			fmt.Fprintf(&b, "== chain %d %s: %d paired, %d unpaired ==\n%s", i+1, res.Chains[i], a.paired, a.others, a.text)
		}
		golden.Check(t, goldenPath, []byte(b.String()))
	})
}

func TestAMalformedSearchResultIsRefused(t *testing.T) {
	t.Parallel()
	het := searchResult(t, "heterodimer")
	for _, tc := range []struct {
		name   string
		change func(r *align.Result)
	}{
		{"an alignment short", func(r *align.Result) { r.Unpaired = r.Unpaired[:1] }},
		{"paired of unequal rows", func(r *align.Result) { r.Paired[1] += ">extra\nGSHMLEDPVK\n" }},
		{"another chain's alignment", func(r *align.Result) { r.Unpaired[0], r.Unpaired[1] = r.Unpaired[1], r.Unpaired[0] }},
		{"no rows", func(r *align.Result) { r.Unpaired[1] = "" }},
	} {
		r := het
		r.Unpaired, r.Paired = append([]string(nil), het.Unpaired...), append([]string(nil), het.Paired...)
		tc.change(&r)
		if _, err := esmAlignments(r); !errors.Is(err, errMalformedResult) {
			t.Errorf("%s: %v; want it refused as malformed", tc.name, err)
		}
	}
}

// offline makes every request through Go's default HTTP transport, which the align
// package's searchers use, fail and be counted, until the test ends: not parallel.
func offline(t *testing.T) func() []string {
	var mu sync.Mutex
	var requests []string
	saved := http.DefaultTransport
	http.DefaultTransport = roundTripper(func(r *http.Request) (*http.Response, error) {
		mu.Lock()
		defer mu.Unlock()
		requests = append(requests, r.Method+" "+r.URL.String())
		return nil, errors.New("the test allows no request")
	})
	t.Cleanup(func() { http.DefaultTransport = saved })
	// The guard sees what a searcher's client (no transport of its own) would send.
	if _, err := (&http.Client{}).Get("https://msa.example.org/ticket/msa"); err == nil || len(requests) != 1 {
		t.Fatalf("the guard let a request through (%v) or did not count it", err)
	}
	requests = nil
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), requests...)
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A fold takes each chain's alignment from the alignments the alignment stage searched
// (engine.Run.Alignments), or the one sent with it, and never contacts a server itself;
// without its searched alignments a job that uses the MSA server fails before the model
// is loaded.
func TestAFoldReadsTheAlignmentsTheAlignmentStageSearched(t *testing.T) {
	requests := offline(t)
	tools := engine.Tools{"esm": pydrivertest.Interpreter(t, t.TempDir())}
	mono, het := searchResult(t, "monomer"), searchResult(t, "heterodimer")
	a, b := het.Chains[0], het.Chains[1]
	esmA3M := func(r align.Result, chain int) string {
		got, err := esmAlignments(r)
		if err != nil {
			t.Fatal(err)
		}
		return got[chain].text
	}
	sent := ">query\n" + a + "\n>hit\nMKTSYLAKQR\n"
	sentYAML := "      msa: |\n        >query\n        " + a + "\n        >hit\n        MKTSYLAKQR\n"
	protein := func(id, seq string) string {
		return fmt.Sprintf("  - protein:\n      id: %s\n      sequence: %s\n", id, seq)
	}
	predict := func(useServer bool, content ...string) string {
		b, err := json.Marshal(map[string]any{"model": "esmfold2", "params": map[string]any{"use_msa_server": useServer},
			"targets": []any{map[string]any{"name": "target_1", "content": "version: 1\nsequences:\n" + strings.Join(content, "")}}})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	searchedLog := "searched by the alignment stage (server https://msa.example.org; mode env; pairing "
	for _, tc := range []struct {
		name       string
		req        string
		alignments []align.Result
		// reads is what each chain's file holds, by chain id ("" for none); log, what the
		// log says of them.
		reads  map[string]string
		log    []string
		rowMSA bool
	}{
		{"a monomer gets its alignment", predict(true, protein("A", a)),
			[]align.Result{het, mono}, map[string]string{"A": esmA3M(mono, 0)},
			[]string{"alignment of target_1 chain A: " + searchedLog + "none): the query, 0 rows paired with the target's other chains and 4 unpaired"}, true},
		{"a homodimer's copies get the same one", predict(true, protein("[A, B]", a)),
			[]align.Result{mono}, map[string]string{"A": esmA3M(mono, 0), "B": esmA3M(mono, 0)},
			[]string{"alignment of target_1 chain A,B: " + searchedLog}, true},
		{"a heterodimer's chains get theirs, paired", predict(true, protein("A", a), protein("B", b)),
			[]align.Result{mono, het}, map[string]string{"A": esmA3M(het, 0), "B": esmA3M(het, 1)},
			[]string{"alignment of target_1 chain A: " + searchedLog + "pairgreedy-env): the query, 3 rows paired with the target's other chains and 2 unpaired",
				"alignment of target_1 chain B: " + searchedLog + "pairgreedy-env): the query, 3 rows paired"}, true},
		{"a sent alignment wins over the search", predict(true, protein("A", a)+sentYAML, protein("B", b)),
			[]align.Result{{Chains: []string{b}, Unpaired: []string{">102\n" + b + "\n>UniRef100_V1\nGSHMLEDPVR\n"}, Source: het.Source}},
			map[string]string{"A": sent, "B": ">102\n" + b + "\n>UniRef100_V1\nGSHMLEDPVR\n"},
			[]string{"alignment of target_1 chain A: the one sent with the job", "alignment of target_1 chain B: " + searchedLog}, true},
		{"a sent alignment wins over none", predict(false, protein("A", a)+sentYAML, protein("B", b)),
			nil, map[string]string{"A": sent, "B": ""},
			[]string{"alignment of target_1 chain A: the one sent with the job", "alignment of target_1 chain B: none (use_msa_server is off)"}, true},
		{"without use_msa_server the alignments are ignored", predict(false, protein("A", a)),
			[]align.Result{mono}, map[string]string{"A": ""},
			[]string{"alignment of target_1 chain A: none (use_msa_server is off), folded single-sequence"}, false},
		{"msa: empty folds single-sequence", predict(true, protein("A", a)+"      msa: empty\n"),
			nil, map[string]string{"A": ""},
			[]string{"alignment of target_1 chain A: none (msa: empty), folded single-sequence"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := enginerun.RunAligned(t, ESM(), enginerun.PredictJob(t, tc.req), tools, tc.alignments)
			log := r.Log.String()
			if r.Err != nil {
				t.Fatalf("%v\n%s", r.Err, log)
			}
			for id, want := range tc.reads {
				path := filepath.Join(r.WorkDir, "raw", "target_1_"+id+".a3m")
				if id == "B" && strings.Contains(tc.req, "[A, B]") {
					path = filepath.Join(r.WorkDir, "raw", "target_1_A.a3m") // one file for the copies of one entity
				}
				said := "standin: chain " + id + " reads no alignment"
				if want != "" {
					got, err := os.ReadFile(path)
					if err != nil || string(got) != want {
						t.Errorf("chain %s's alignment file (%v):\n%s\nwant:\n%s", id, err, got, want)
					}
					rows := parseA3M(want)
					said = fmt.Sprintf("standin: chain %s reads %d rows, the first %s", id, len(rows), rows[0].seq)
				}
				if !strings.Contains(log, said) {
					t.Errorf("the model did not say %q:\n%s", said, log)
				}
			}
			for _, want := range tc.log {
				if !strings.Contains(log, "== chaperone: "+want) {
					t.Errorf("the log lacks %q:\n%s", want, log)
				}
			}
			if row := r.Out.Rows[0]; row.MSA != tc.rowMSA {
				t.Errorf("the row says msa %v; want %v", row.MSA, tc.rowMSA)
			}
		})
	}

	t.Run("a job without its searched alignments fails before the model loads", func(t *testing.T) {
		req := `{"model": "esmfold2", "targets": [{"name": "mono", "content": ">A|protein\n` + a + `\n"},
			{"name": "dimer", "content": ">A|protein\n` + a + `\n>B|protein\n` + b + `\n"}], "params": {"use_msa_server": true}}`
		// The heterodimer's chains searched one by one are not its search.
		singles := []align.Result{mono, {Chains: []string{b}, Unpaired: []string{">101\n" + b + "\n"}}}
		r := enginerun.RunAligned(t, ESM(), enginerun.PredictJob(t, req), tools, singles)
		want := "target dimer: use_msa_server is on, but the alignments of its protein chain(s) A, B were not searched before the job reached the worker; esm never searches them itself"
		if r.Err == nil || !strings.Contains(r.Err.Error(), want) {
			t.Errorf("Run = %v; want %q", r.Err, want)
		}
		if log := r.Log.String(); strings.Contains(log, "standin: loading") || strings.Contains(log, "standin: forward pass") {
			t.Errorf("the model was loaded or run:\n%s", log)
		}
	})
	if got := requests(); len(got) > 0 {
		t.Errorf("the engine made requests: %v", got)
	}
}
