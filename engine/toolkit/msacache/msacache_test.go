package msacache

import (
	"bytes"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

const server = "https://msa.example.org"

func write(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestGetGivesBackWhatPutKept(t *testing.T) {
	t.Parallel()
	c := &Cache{Dir: t.TempDir(), Limit: 1 << 20}
	src := t.TempDir()
	key := Key("protenix msa v1", server, "MKTAYI", "GGSGG")
	files := map[string]string{
		"0/pairing.a3m":     write(t, filepath.Join(src, "a.a3m"), ">q\nMKTAYI\n"),
		"0/non_pairing.a3m": write(t, filepath.Join(src, "b.a3m"), ">q\nMKTAYI\n>h\nMK-AYI\n"),
		"1/non_pairing.a3m": write(t, filepath.Join(src, "c.a3m"), ">q\nGGSGG\n"),
	}
	if c.Get(key, map[string]string{"0/pairing.a3m": filepath.Join(t.TempDir(), "x")}) {
		t.Fatal("an empty cache had an entry")
	}
	if err := c.Put(key, files); err != nil {
		t.Fatal(err)
	}
	// The sources may go: the entry holds its own copies.
	if err := os.RemoveAll(src); err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	want := map[string]string{"0/pairing.a3m": ">q\nMKTAYI\n", "0/non_pairing.a3m": ">q\nMKTAYI\n>h\nMK-AYI\n", "1/non_pairing.a3m": ">q\nGGSGG\n"}
	got := map[string]string{}
	for name := range want {
		got[name] = filepath.Join(dst, "chains", name)
	}
	if !c.Get(key, got) {
		t.Fatal("the entry is missing")
	}
	for name, text := range want {
		if b, err := os.ReadFile(got[name]); err != nil || string(b) != text {
			t.Errorf("%s = %q, %v; want %q", name, b, err, text)
		}
	}
	if c.Get(key, map[string]string{"2/non_pairing.a3m": filepath.Join(dst, "y")}) {
		t.Error("Get found a file the entry does not hold")
	}
	if err := c.Put(Key("x"), map[string]string{"../escape": filepath.Join(dst, "chains", "1/non_pairing.a3m")}); err == nil {
		t.Error("an entry file named outside the entry was kept")
	}
	if (&Cache{}).Get(key, got) || (&Cache{}).Put(key, got) != nil {
		t.Error("a cache without a folder must keep nothing and fail nothing")
	}
}

func TestPutPrunesTheLeastRecentlyUsed(t *testing.T) {
	t.Parallel()
	c := &Cache{Dir: t.TempDir(), Limit: 300}
	src := write(t, filepath.Join(t.TempDir(), "a.csv"), string(bytes.Repeat([]byte("x"), 100)))
	key := func(seq string) string { return Key("boltz msa v1", server, "greedy", seq) }
	old := time.Now().Add(-time.Hour)
	for i, seq := range []string{"A", "B", "C"} {
		if err := c.Put(key(seq), map[string]string{"0.csv": src}); err != nil {
			t.Fatal(err)
		}
		// Entries stored earlier were used earlier.
		used := old.Add(time.Duration(i) * time.Minute)
		_ = os.Chtimes(c.entry(key(seq)), used, used)
	}
	// Using the oldest makes it the newest; the next store evicts the least recently used.
	if !c.Get(key("A"), map[string]string{"0.csv": filepath.Join(t.TempDir(), "a")}) {
		t.Fatal("A missing")
	}
	if err := c.Put(key("D"), map[string]string{"0.csv": src}); err != nil {
		t.Fatal(err)
	}
	for seq, want := range map[string]bool{"A": true, "B": false, "C": true, "D": true} {
		if got := c.Get(key(seq), map[string]string{"0.csv": filepath.Join(t.TempDir(), "a")}); got != want {
			t.Errorf("entry %s present %v, want %v", seq, got, want)
		}
	}
}

func TestConcurrentPutsOfOneSearch(t *testing.T) {
	t.Parallel()
	c := &Cache{Dir: t.TempDir(), Limit: 1 << 20}
	src := write(t, filepath.Join(t.TempDir(), "a.csv"), "key,sequence\n-1,MK\n")
	key := Key("boltz msa v1", server, "MK")
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() { errs <- c.Put(key, map[string]string{"0.csv": src}) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	leftovers, _ := filepath.Glob(filepath.Join(c.Dir, "*", ".tmp-*"))
	if len(leftovers) != 0 {
		t.Errorf("temporary folders left: %v", leftovers)
	}
	if !c.Get(key, map[string]string{"0.csv": filepath.Join(t.TempDir(), "a")}) {
		t.Error("the entry is missing")
	}
}

func TestKey(t *testing.T) {
	t.Parallel()
	a := Key("boltz msa v1", server, "greedy", "A", "B")
	for name, other := range map[string]string{
		"order of the sequences": Key("boltz msa v1", server, "greedy", "B", "A"),
		"server":                 Key("boltz msa v1", "https://other", "greedy", "A", "B"),
		"options":                Key("boltz msa v1", server, "complete", "A", "B"),
		"kind of entry":          Key("protenix msa v1", server, "greedy", "A", "B"),
		"where parts split":      Key("boltz msa v1", server, "greedy", "AB"),
	} {
		if other == a {
			t.Errorf("the key does not depend on the %s", name)
		}
	}
	if Key("boltz msa v1", server, "greedy", "A", "B") != a {
		t.Error("the key of one search changes")
	}
}
