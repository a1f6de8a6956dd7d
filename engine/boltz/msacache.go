package boltz

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// msaCache keeps the alignments Boltz searched on the MSA server, so that a later job
// with the same sequences reads them instead of searching again. An entry holds the CSV
// files of one search, as Boltz wrote them into msa/: one per protein entity, rows paired
// across entities by key. Its key is the hash of the server, the pairing strategy and the
// ordered sequences searched together, because the paired rows of a complex depend on all
// of its chains: a single chain is found again by its sequence alone, a complex only with
// the same partners.
//
// Entries are folders made complete in a temporary folder and renamed into place, so
// concurrent jobs never see half an entry, and a reader links or copies the files it
// uses, so pruning never pulls a file from under a running Boltz.
type msaCache struct {
	dir   string // empty: no caching
	limit int64  // bytes kept; the least recently used entries go first
}

// pairingStrategy is Boltz's default --msa_pairing_strategy, which this engine keeps.
const pairingStrategy = "greedy"

// cacheKey names the search of seqs, in that order, on server.
func cacheKey(server string, seqs []string) string {
	h := sha256.New()
	fmt.Fprintf(h, "boltz msa v1\n%s\n%s\n", server, pairingStrategy)
	for _, s := range seqs {
		fmt.Fprintf(h, "%s\n", s)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func (c *msaCache) entry(key string) string { return filepath.Join(c.dir, key[:2], key) }

// lookup copies the n alignment files of an entry to dst/<prefix>_<i>.csv and returns
// their paths; false when the entry is missing or incomplete.
func (c *msaCache) lookup(key string, n int, dst, prefix string) ([]string, bool) {
	if c.dir == "" {
		return nil, false
	}
	entry := c.entry(key)
	paths := make([]string, n)
	for i := range n {
		paths[i] = filepath.Join(dst, prefix+"_"+strconv.Itoa(i)+".csv")
		if err := linkOrCopy(filepath.Join(entry, strconv.Itoa(i)+".csv"), paths[i]); err != nil {
			return nil, false
		}
	}
	now := time.Now()
	_ = os.Chtimes(entry, now, now) // marks the entry as used, for pruning
	return paths, true
}

// store keeps the files of one search under key; an entry that exists is left alone.
func (c *msaCache) store(key string, files []string) error {
	if c.dir == "" {
		return nil
	}
	entry := c.entry(key)
	if _, err := os.Stat(entry); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(entry), 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(entry), ".tmp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	for i, f := range files {
		if err := linkOrCopy(f, filepath.Join(tmp, strconv.Itoa(i)+".csv")); err != nil {
			return err
		}
	}
	if err := os.Rename(tmp, entry); err != nil {
		// Another job may have stored the same search first; its entry is as good.
		if _, statErr := os.Stat(entry); statErr != nil {
			return err
		}
	}
	return c.prune()
}

// prune removes the least recently used entries until the cache fits its limit.
func (c *msaCache) prune() error {
	type entry struct {
		path string
		size int64
		used time.Time
	}
	var entries []entry
	var total int64
	shards, err := os.ReadDir(c.dir)
	if err != nil {
		return err
	}
	for _, s := range shards {
		dirs, _ := os.ReadDir(filepath.Join(c.dir, s.Name()))
		for _, d := range dirs {
			if strings.HasPrefix(d.Name(), ".tmp-") {
				continue
			}
			e := entry{path: filepath.Join(c.dir, s.Name(), d.Name())}
			if info, err := d.Info(); err == nil {
				e.used = info.ModTime()
			}
			files, _ := os.ReadDir(e.path)
			for _, f := range files {
				if info, err := f.Info(); err == nil {
					e.size += info.Size()
				}
			}
			entries = append(entries, e)
			total += e.size
		}
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].used.Before(entries[j].used) })
	for _, e := range entries {
		if total <= c.limit {
			break
		}
		if err := os.RemoveAll(e.path); err != nil {
			return err
		}
		total -= e.size
	}
	return nil
}

// linkOrCopy puts a copy of src at dst: a hard link where the file system allows one.
func linkOrCopy(src, dst string) error {
	if err := os.Link(src, dst); err == nil {
		return nil
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
