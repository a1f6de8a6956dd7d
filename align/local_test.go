package align

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/align/aligntest"
)

// The test databases are built by aligntest.Databases from aligntest/testdata (see its
// README): relatives of chainA and chainB named A… and B… (envA…, envB… in the
// environmental database), each from one organism (OX=), and unrelated decoys.

func TestLocal(t *testing.T) {
	dir := aligntest.Databases(t)
	tests := []struct {
		name       string
		cfg        LocalConfig
		chains     []string
		wantSource Source // its Database is checked to name the databases only
		wantPaired bool
	}{
		{name: "heteromer, plain database and environmental one", cfg: LocalConfig{DB: "uniref", EnvDB: "env"},
			chains: []string{chainA, chainB, chainA}, wantSource: Source{Mode: "env", Pairing: "paircomplete"}, wantPaired: true},
		{name: "heteromer, ColabFold's expandable layout", cfg: LocalConfig{DB: "cf"},
			chains: []string{chainA, chainB}, wantSource: Source{Mode: "all", Pairing: "paircomplete"}, wantPaired: true},
		{name: "homodimer is one chain, unpaired", cfg: LocalConfig{DB: "uniref"},
			chains: []string{chainB, chainB}, wantSource: Source{Mode: "all", Pairing: "paircomplete"}},
		{name: "heteromer without taxonomy is unpaired", cfg: LocalConfig{DB: "env"},
			chains: []string{chainA, chainB}, wantSource: Source{Mode: "all"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Dir = dir
			l, err := NewLocal(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			res, err := l.Search(t.Context(), Query{Chains: tc.chains})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("searched %d distinct chains in %v", len(res.Chains), time.Since(start).Round(time.Millisecond))

			src := res.Source
			if !strings.HasPrefix(src.Database, "mmseqs 14") || strings.Count(src.Database, "#") != len(dbNames(tc.cfg)) {
				t.Errorf("source database %q, want the mmseqs version and %v", src.Database, dbNames(tc.cfg))
			}
			if src.Database = ""; src != tc.wantSource || l.Source() != res.Source {
				t.Errorf("source %+v (searcher's %+v), want %+v", src, l.Source(), tc.wantSource)
			}
			var distinct []string
			for _, c := range tc.chains {
				if !slices.Contains(distinct, c) {
					distinct = append(distinct, c)
				}
			}
			if !slices.Equal(res.Chains, distinct) {
				t.Fatalf("chains %q, want %q", res.Chains, distinct)
			}
			seqs := aligntest.Sequences(t, dbNames(tc.cfg)...)
			for i, chain := range res.Chains {
				checkA3M(t, res.Unpaired[i], queryID(i), chain)
				found := hitNames(res.Unpaired[i])
				want := relatives(seqs, chain)
				if !slices.Equal(found, want) {
					t.Errorf("chain %d found %q, want its relatives %q", i+1, found, want)
				}
			}
			if !tc.wantPaired {
				if res.Paired != nil {
					t.Errorf("paired alignments %q, want none", res.Paired)
				}
				return
			}
			checkPairedRows(t, res, seqs)
		})
	}
}

// dbNames are the databases a configuration searches.
func dbNames(cfg LocalConfig) []string {
	if cfg.EnvDB == "" {
		return []string{cfg.DB}
	}
	return []string{cfg.DB, cfg.EnvDB}
}

// relatives are the names of the test sequences of chain's family (A… or B…, env…
// included), sorted; decoys belong to none.
func relatives(seqs []aligntest.Sequence, chain string) []string {
	family := map[string]string{chainA: "A", chainB: "B"}[chain]
	var out []string
	for _, s := range seqs {
		if strings.HasPrefix(strings.TrimPrefix(s.Name, "env"), family) {
			out = append(out, s.Name)
		}
	}
	slices.Sort(out)
	return out
}

// hitNames are the names of an A3M's rows but the query's, sorted.
func hitNames(a3m string) []string {
	var out []string
	for line := range strings.Lines(a3m) {
		if header, ok := strings.CutPrefix(line, ">"); ok {
			if name := strings.Fields(header)[0]; strconv.Itoa(atoi(name)) != name {
				out = append(out, name)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// checkA3M checks an A3M as the tools read it: a header and one sequence line per row,
// starting with the query itself (number id), and in every row as many match columns
// (upper-case letters and '-') as the query has residues; lower-case letters are
// insertions.
func checkA3M(t *testing.T, a3m string, id int, query string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(a3m, "\n"), "\n")
	if len(lines)%2 != 0 || lines[0] != ">"+strconv.Itoa(id) || lines[1] != query {
		t.Fatalf("A3M of query %d does not start with it:\n%s", id, a3m)
	}
	for i := 0; i < len(lines); i += 2 {
		if !strings.HasPrefix(lines[i], ">") {
			t.Fatalf("line %d is not a header: %q", i+1, lines[i])
		}
		match := 0
		for _, c := range lines[i+1] {
			switch {
			case c >= 'A' && c <= 'Z' || c == '-':
				match++
			case c >= 'a' && c <= 'z':
			default:
				t.Fatalf("row %q holds %q", lines[i], c)
			}
		}
		if match != len(query) {
			t.Errorf("row %q has %d match columns, the query %d", lines[i], match, len(query))
		}
	}
}

// checkPairedRows checks that the paired alignments are valid A3Ms whose row i comes, in
// every chain, from the same organism, and that they pair exactly the organisms that
// have a relative of every chain.
func checkPairedRows(t *testing.T, res Result, seqs []aligntest.Sequence) {
	t.Helper()
	taxon := map[string]int{}
	for _, s := range seqs {
		taxon[s.Name] = s.Taxon
	}
	var want []int // the organisms with a full-length relative of each chain
	for _, s := range seqs {
		if strings.HasPrefix(s.Name, "A") && !strings.Contains(s.Name, "trunc") &&
			slices.ContainsFunc(seqs, func(o aligntest.Sequence) bool { return o.Taxon == s.Taxon && strings.HasPrefix(o.Name, "B") }) {
			want = append(want, s.Taxon)
		}
	}
	var orgs [][]int
	for i, a3m := range res.Paired {
		checkA3M(t, a3m, queryID(i), res.Chains[i])
		var o []int
		for line := range strings.Lines(a3m) {
			if name, ok := strings.CutPrefix(strings.TrimSpace(line), ">"); ok && name != strconv.Itoa(queryID(i)) {
				o = append(o, taxon[name])
			}
		}
		orgs = append(orgs, o)
	}
	for i := range orgs {
		if !slices.Equal(orgs[i], orgs[0]) {
			t.Errorf("paired rows of chain %d from organisms %v, of chain 1 %v", i+1, orgs[i], orgs[0])
		}
	}
	if got := slices.Sorted(slices.Values(orgs[0])); !slices.Equal(got, want) {
		t.Errorf("paired organisms %v, want %v", got, want)
	}
}

// BenchmarkLocalSearch times a search of a heteromer's two chains, unpaired and paired,
// in the plain test databases with the environmental one.
func BenchmarkLocalSearch(b *testing.B) {
	l, err := NewLocal(LocalConfig{Dir: aligntest.Databases(b), DB: "uniref", EnvDB: "env"})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := l.Search(b.Context(), Query{Chains: []string{chainA, chainB}}); err != nil {
			b.Fatal(err)
		}
	}
}

// fakeMmseqs writes an mmseqs command that answers version and pairaln's help and runs
// script for every other command, with its pid file in dir; and a database for it.
func fakeMmseqs(t *testing.T, script string) (mmseqs, dir string) {
	t.Helper()
	dir = t.TempDir()
	mmseqs = filepath.Join(dir, "mmseqs")
	text := "#!/bin/sh\ncase \"$1\" in\nversion) echo 14-fake;;\npairaln) echo 'usage: mmseqs pairaln';;\n*) " + script + ";;\nesac\n"
	if err := os.WriteFile(mmseqs, []byte(text), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "uniref30.dbtype"), []byte{0, 0, 0, 0}, 0o644); err != nil {
		t.Fatal(err)
	}
	return mmseqs, dir
}

func TestLocalFailures(t *testing.T) {
	tests := []struct {
		name    string
		script  string // what the fake mmseqs does for a step; $PIDS is its pid file
		cancel  bool   // cancel once a step runs
		wantErr string
	}{
		{name: "a failing step", script: `if [ "$1" = search ]; then echo "Error: the prefilter died" >&2; exit 1; fi`,
			wantErr: "mmseqs search qdb "},
		{name: "cancel stops mmseqs and what it runs", script: `if [ "$1" = search ]; then sleep 60 & echo $! > "$PIDS.new"; mv "$PIDS.new" "$PIDS"; wait; fi`,
			cancel: true, wantErr: "mmseqs search: context canceled"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mmseqs, dir := fakeMmseqs(t, tc.script)
			pids := filepath.Join(dir, "pids")
			t.Setenv("PIDS", pids)
			l, err := NewLocal(LocalConfig{Dir: dir, Mmseqs: mmseqs, TempDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			if tc.cancel {
				go func() {
					for !exists(pids) {
						time.Sleep(time.Millisecond) // polls the fake's pid file, no fixed wait
					}
					cancel()
				}()
			}
			start := time.Now()
			_, err = l.Search(ctx, Query{Chains: []string{chainA}})
			if elapsed := time.Since(start); elapsed > 5*time.Second {
				t.Errorf("the search took %v", elapsed)
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			}
			if tc.cancel {
				if !errors.Is(err, context.Canceled) {
					t.Errorf("error %v is not context.Canceled", err)
				}
				data, _ := os.ReadFile(pids)
				if pid := atoi(strings.TrimSpace(string(data))); !gone(pid) {
					t.Errorf("the fake's child %d outlived the search", pid)
				}
			}
			if tc.name == "a failing step" && !strings.Contains(err.Error(), "the prefilter died") {
				t.Errorf("error %v does not give mmseqs' words", err)
			}
		})
	}
}

func TestNewLocalRefuses(t *testing.T) {
	mmseqs, dir := fakeMmseqs(t, "true")
	for _, tc := range []struct {
		cfg     LocalConfig
		wantErr string
	}{
		{LocalConfig{Dir: dir, Mmseqs: filepath.Join(dir, "none")}, "apt-get install mmseqs2"},
		{LocalConfig{Dir: dir, Mmseqs: mmseqs, DB: "uniref90"}, "no MMseqs2 database uniref90 in " + dir},
		{LocalConfig{Dir: dir, Mmseqs: mmseqs, EnvDB: "colabfold_envdb"}, "no MMseqs2 database colabfold_envdb"},
	} {
		if _, err := NewLocal(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("NewLocal(%+v): %v, want an error containing %q", tc.cfg, err, tc.wantErr)
		}
	}
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// gone reports whether process pid has ended within a second: killed, it may linger a
// moment until reaped.
func gone(pid int) bool {
	for deadline := time.Now().Add(time.Second); pid > 0; time.Sleep(time.Millisecond) {
		if err := syscall.Kill(pid, 0); err != nil || zombie(pid) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
	return false
}

// zombie reports whether process pid has ended but is not yet reaped.
func zombie(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	_, after, _ := strings.Cut(string(stat), ") ")
	return err == nil && strings.HasPrefix(after, "Z")
}
