package sqlite

import (
	"context"
	"encoding/binary"
	"os"
	"sync"

	"github.com/chaperone-bio/chaperone/store"
)

// keyCache remembers live API keys by hash, so that the key check of every authenticated
// request does not query the database, while a revocation still takes effect at once, also
// one made by another process on the same file (chaperone keys revoke).
//
// Whether the cache may answer is decided by two detectors, a cheap one first:
//   - the WAL-index header (changeDetector): SQLite rewrites it at every commit to the file,
//     by any connection of any process. While it is unchanged, nothing changed at all.
//   - the key epoch, a counter that triggers bump on every change to api_keys (migration
//     00004). When the header changed, one read of it tells whether the keys did; only then
//     is the cache emptied.
//
// Only live keys are cached: an unknown key is looked up every time, so a key created
// elsewhere is found at once and unknown keys cannot fill the cache.
type keyCache struct {
	changes *changeDetector // nil: every lookup reads the epoch

	mu    sync.Mutex
	stamp walStamp // the header when the cache was last known valid
	valid bool     // stamp means something
	epoch int64
	gen   uint64 // bumped when the cache is emptied
	keys  map[string]store.Key
}

// check makes the cache valid for the database as it is now and returns its generation,
// which put needs.
func (c *keyCache) check(ctx context.Context, readEpoch func(context.Context) (int64, error)) (uint64, error) {
	stamp, stampOK := c.changes.stamp()
	c.mu.Lock()
	if stampOK && c.valid && stamp == c.stamp {
		gen := c.gen
		c.mu.Unlock()
		return gen, nil
	}
	c.mu.Unlock()

	// The stamp is read before the epoch: a change committed between the two reads is in
	// the epoch, and the stamp kept is older than it, so the next check reads again.
	epoch, err := readEpoch(ctx)
	if err != nil {
		return 0, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if epoch != c.epoch || c.keys == nil {
		c.keys = map[string]store.Key{}
		c.epoch = epoch
		c.gen++
	}
	c.stamp, c.valid = stamp, stampOK
	return c.gen, nil
}

func (c *keyCache) get(hash string) (store.Key, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k, ok := c.keys[hash]
	return k, ok
}

// put remembers a live key read from the database after check returned gen. A cache emptied
// since then is left alone: the key was read from a state that may be gone (a revocation
// committed between the check and the read).
func (c *keyCache) put(gen uint64, k store.Key) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen == gen && k.RevokedAt.IsZero() {
		c.keys[k.Hash] = k
	}
}

// walStamp is the first copy of the WAL-index header (https://www.sqlite.org/walformat.html,
// "The WAL-Index Header"): among others iChange, which SQLite increments at each commit,
// mxFrame and the WAL salts. Any commit changes it.
type walStamp [48]byte

// walIndexVersion is the header's iVersion in the format this detector reads.
const walIndexVersion = 3007000

// changeDetector reads the WAL-index header from the database's -shm file: one pread, no
// query. SQLite keeps that file, in its documented format, while any connection is open,
// and this store holds connections for as long as the detector lives.
type changeDetector struct {
	f *os.File
}

// openChangeDetector returns nil when the file is not there or not in the format it
// reads; the cache then reads the epoch at every lookup, which is correct, only slower.
func openChangeDetector(dbPath string) *changeDetector {
	f, err := os.Open(dbPath + "-shm")
	if err != nil {
		return nil
	}
	d := &changeDetector{f: f}
	s, ok := d.stamp()
	if !ok || binary.NativeEndian.Uint32(s[:4]) != walIndexVersion {
		f.Close()
		return nil
	}
	return d
}

// stamp reads the header; ok is false when it could not, which callers treat as a change.
// A read torn by a concurrent commit differs from both headers, and is a change too.
func (d *changeDetector) stamp() (s walStamp, ok bool) {
	if d == nil {
		return s, false
	}
	n, err := d.f.ReadAt(s[:], 0)
	return s, err == nil && n == len(s) && s != walStamp{}
}

func (d *changeDetector) close() error {
	if d == nil {
		return nil
	}
	return d.f.Close()
}
