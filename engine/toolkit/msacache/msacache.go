// Package msacache keeps the alignments that tools searched on an MSA server, so that a
// later job with the same sequences reads them instead of searching again. It serves
// every engine that aligns on a server (Boltz, Protenix, OpenFold3, OpenDDE): an entry is
// whatever files one search left, under names the engine chooses, and its key is the hash
// of everything that shapes the result (Key).
//
// Entries are folders made complete in a temporary folder and renamed into place, so
// concurrent jobs, on any slot of the worker, never see half an entry; a reader links or
// copies the files it uses, so pruning never pulls a file from under a running tool. The
// cache keeps to a size in bytes by dropping the least recently used entries.
//
// It imports nothing of chaperone's.
package msacache

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Cache is a folder of alignments. The zero Dir caches nothing.
type Cache struct {
	Dir   string
	Limit int64 // bytes kept
}

// ForRun is the alignment cache of a job run whose engine keeps its caches under
// cacheDir (engine.Run.CacheDir), in its msa folder, holding at most limit bytes; with no
// cacheDir it caches nothing.
func ForRun(cacheDir string, limit int64) *Cache {
	c := &Cache{Limit: limit}
	if cacheDir != "" {
		c.Dir = filepath.Join(cacheDir, "msa")
	}
	return c
}

// Key names one search by every part that shapes its result, in order: what kind of entry
// it is with a version (for example "boltz msa v1"), the server, the options that change
// the alignments (a pairing strategy), and the sequences searched together. A complex's
// paired rows depend on all of its chains, so a single chain is found again by its
// sequence alone and a complex only with the same partners in the same order.
func Key(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%s\n", p)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func (c *Cache) entry(key string) string { return filepath.Join(c.Dir, key[:2], key) }

// Get puts a copy of each file of an entry at its destination (name in the entry →
// path) and reports whether the entry had them all; false also when there is no cache.
func (c *Cache) Get(key string, files map[string]string) bool {
	if c.Dir == "" {
		return false
	}
	entry := c.entry(key)
	for name, dst := range files {
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return false
		}
		if err := linkOrCopy(filepath.Join(entry, filepath.FromSlash(name)), dst); err != nil {
			return false
		}
	}
	now := time.Now()
	_ = os.Chtimes(entry, now, now) // marks the entry as used, for pruning
	return true
}

// Put keeps the files of one search (name in the entry, which may hold slashes → path of
// the file) under key, then prunes the cache to its limit. An entry that exists is left
// alone: it holds the same search.
func (c *Cache) Put(key string, files map[string]string) error {
	if c.Dir == "" {
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
	for name, src := range files {
		dst := filepath.Join(tmp, filepath.FromSlash(name))
		if !strings.HasPrefix(dst, tmp+string(filepath.Separator)) {
			return fmt.Errorf("msacache: entry file name %q leaves the entry", name)
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := linkOrCopy(src, dst); err != nil {
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
func (c *Cache) prune() error {
	type entry struct {
		path string
		size int64
		used time.Time
	}
	var entries []entry
	var total int64
	shards, err := os.ReadDir(c.Dir)
	if err != nil {
		return err
	}
	for _, s := range shards {
		dirs, _ := os.ReadDir(filepath.Join(c.Dir, s.Name()))
		for _, d := range dirs {
			if strings.HasPrefix(d.Name(), ".tmp-") {
				continue
			}
			e := entry{path: filepath.Join(c.Dir, s.Name(), d.Name())}
			if info, err := d.Info(); err == nil {
				e.used = info.ModTime()
			}
			_ = filepath.WalkDir(e.path, func(_ string, f fs.DirEntry, err error) error {
				if err == nil && !f.IsDir() {
					if info, err := f.Info(); err == nil {
						e.size += info.Size()
					}
				}
				return nil
			})
			entries = append(entries, e)
			total += e.size
		}
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].used.Before(entries[j].used) })
	for _, e := range entries {
		if total <= c.Limit {
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
