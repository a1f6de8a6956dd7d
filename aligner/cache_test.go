package aligner_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/align"
	"github.com/chaperone-bio/chaperone/aligner"
	artifactfs "github.com/chaperone-bio/chaperone/artifact/fs"
)

func newCache(t *testing.T, src align.Source, limits aligner.Limits) (*aligner.Cache, *artifactfs.Store) {
	t.Helper()
	arts, err := artifactfs.Open(filepath.Join(t.TempDir(), "artifacts"))
	if err != nil {
		t.Fatal(err)
	}
	return aligner.NewCache(arts, src, limits), arts
}

var server = align.Source{Server: "https://msa.example.org", Mode: "env", Pairing: "pairgreedy"}

func result(chains ...string) align.Result {
	r := align.Result{Chains: chains, Source: server}
	for _, c := range chains {
		r.Unpaired = append(r.Unpaired, ">101\n"+c+"\n>hit\n"+c+"\n")
		if len(chains) > 1 {
			r.Paired = append(r.Paired, ">101\n"+c+"\n>orgX\n"+c+"\n")
		}
	}
	return r
}

func TestTheCacheFindsWhatItKeptAndNothingElse(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, arts := newCache(t, server, aligner.Limits{})
	if err := c.Put(ctx, result("MKV", "GGSW")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		cache  *aligner.Cache
		chains []string
		want   bool
	}{
		{"the complex searched, copies repeated", c, []string{"MKV", "GGSW", "MKV"}, true},
		{"one of its chains alone, unpaired", c, []string{"GGSW"}, true},
		{"its chains in another order: paired anew", c, []string{"GGSW", "MKV"}, false},
		{"a chain never searched", c, []string{"MKV", "AAAA"}, false},
		{"another server", aligner.NewCache(arts, align.Source{Server: "https://other.example.org", Mode: "env", Pairing: "pairgreedy"}, aligner.Limits{}), []string{"GGSW"}, false},
		{"another mode", aligner.NewCache(arts, align.Source{Server: server.Server, Mode: "env-nofilter", Pairing: "pairgreedy"}, aligner.Limits{}), []string{"GGSW"}, false},
		{"another pairing", aligner.NewCache(arts, align.Source{Server: server.Server, Mode: "env", Pairing: "paircomplete"}, aligner.Limits{}), []string{"MKV", "GGSW"}, false},
	} {
		res, ok, err := tc.cache.Get(ctx, tc.chains)
		if err != nil || ok != tc.want {
			t.Errorf("%s: found %v, %v; want %v", tc.name, ok, err, tc.want)
			continue
		}
		if ok && res.Unpaired[0] != ">101\n"+res.Chains[0]+"\n>hit\n"+res.Chains[0]+"\n" {
			t.Errorf("%s: unpaired %q", tc.name, res.Unpaired[0])
		}
	}
}

func TestSweepDropsOldEntriesThenTheOldestBeyondTheSize(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, _ := newCache(t, server, aligner.Limits{MaxAge: time.Hour, MaxBytes: 1 << 20})
	for _, seq := range []string{"MKV", "GGSW", "WWY"} {
		if err := c.Put(ctx, result(seq)); err != nil {
			t.Fatal(err)
		}
	}
	if swept, err := c.Sweep(ctx, time.Now()); err != nil || swept.Files != 0 {
		t.Fatalf("a sweep within the bounds removed %+v, %v", swept, err)
	}
	small, _ := newCache(t, server, aligner.Limits{MaxAge: time.Hour, MaxBytes: 1})
	small.Put(ctx, result("MKV"))
	small.Put(ctx, result("GGSW"))
	if swept, err := small.Sweep(ctx, time.Now()); err != nil || swept.Files != 2 || swept.Kept != 0 {
		t.Errorf("over a 1-byte bound, sweep removed %+v, %v; want both entries", swept, err)
	}
	swept, err := c.Sweep(ctx, time.Now().Add(2*time.Hour))
	if err != nil || swept.Files != 3 || swept.Kept != 0 {
		t.Fatalf("two hours on, sweep removed %+v, %v; want all 3 entries", swept, err)
	}
	if _, ok, _ := c.Get(ctx, []string{"MKV"}); ok {
		t.Error("a swept entry is still found")
	}
}

// TestASearchThatPairedNothingIsKeptAsUnpaired: a pairing search that paired no row (a
// local database without taxonomy for the chains) is kept, so it is not searched again,
// and comes back as it was made: with no paired alignments, which engines read as none.
func TestASearchThatPairedNothingIsKeptAsUnpaired(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	local := align.Source{Database: "uniref30 (mmseqs 14)", Mode: "env", Pairing: "paircomplete"}
	c, _ := newCache(t, local, aligner.Limits{})
	searched := result("MKV", "GGSW")
	searched.Source, searched.Paired = local, nil
	if err := c.Put(ctx, searched); err != nil {
		t.Fatal(err)
	}
	res, ok, err := c.Get(ctx, []string{"MKV", "GGSW"})
	if err != nil || !ok {
		t.Fatalf("found %v, %v; want the search kept", ok, err)
	}
	if res.Paired != nil {
		t.Errorf("paired %q, want none", res.Paired)
	}
}
