package aligner

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/chaperone-bio/chaperone/align"
	"github.com/chaperone-bio/chaperone/artifact"
)

// cacheRoot is where the cache's files live among the shared files; v1 is the layout
// below, so that a change of layout starts afresh instead of misreading old entries.
const cacheRoot = "msa/v1/"

// Default bounds of the cache (Limits).
const (
	DefaultMaxAge   = 30 * 24 * time.Hour
	DefaultMaxBytes = 20 << 30
)

// Limits bound what the cache keeps. Zero takes the default.
type Limits struct {
	// MaxAge drops an entry this long after it was written, so that alignments follow an
	// update of the server's databases within that time.
	MaxAge time.Duration
	// MaxBytes drops the oldest entries while the cache holds more (compressed).
	MaxBytes int64
}

// Cache keeps searched alignments in the artifact store's shared files, where every
// replica and worker of a deployment finds them: per distinct chain its unpaired A3M, and
// per complex (its distinct chains in order) the paired A3Ms. An entry's name is the
// hash of everything that shapes it (the searcher's Source and the sequences), so a
// search on another server, database or mode is never mistaken for it. Entries are
// gzipped, and written whole (artifact.Shared.PutShared), so a reader never sees part of
// one.
type Cache struct {
	files  artifact.Shared
	source align.Source
	limits Limits
}

// NewCache is the cache of the searcher whose Source is source.
func NewCache(files artifact.Shared, source align.Source, limits Limits) *Cache {
	if limits.MaxAge <= 0 {
		limits.MaxAge = DefaultMaxAge
	}
	if limits.MaxBytes <= 0 {
		limits.MaxBytes = DefaultMaxBytes
	}
	return &Cache{files: files, source: source, limits: limits}
}

// Source is the searcher's Source, which the cache's entries belong to.
func (c *Cache) Source() align.Source { return c.source }

func hashOf(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d:%s\n", len(p), p)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func (c *Cache) unpairedName(seq string) string {
	k := hashOf("unpaired", c.source.Server, c.source.Database, c.source.Mode, seq)
	return cacheRoot + "unpaired/" + k[:2] + "/" + k + ".a3m.gz"
}

func (c *Cache) pairedName(chains []string) string {
	k := hashOf(append([]string{"paired", c.source.Server, c.source.Database, c.source.Pairing}, chains...)...)
	return cacheRoot + "paired/" + k[:2] + "/" + k + ".json.gz"
}

// needsPairing reports whether a search of these distinct chains gives paired
// alignments: two or more chains, on a searcher that pairs.
func (c *Cache) needsPairing(chains []string) bool {
	return len(chains) > 1 && c.source.Pairing != ""
}

// SearchKey names the search of chains for the cluster-wide claim that makes it happen
// once (store.Aligning.ClaimSearch).
func (c *Cache) SearchKey(chains []string) string {
	d := align.Distinct(chains)
	return hashOf(append([]string{"search", c.source.String()}, d...)...)
}

// Get returns the alignments of a search of chains when the cache holds all of them; ok
// is false when any is missing, or unreadable (it is searched again and written anew).
func (c *Cache) Get(ctx context.Context, chains []string) (res align.Result, ok bool, err error) {
	d := align.Distinct(chains)
	res = align.Result{Chains: d, Unpaired: make([]string, len(d)), Source: c.source}
	// The paired entry first: the usual miss is a complex of chains each kept before.
	if c.needsPairing(d) {
		b, found, err := c.read(ctx, c.pairedName(d))
		if err != nil || !found {
			return align.Result{}, false, err
		}
		// JSON null: the search paired nothing (Put).
		if json.Unmarshal(b, &res.Paired) != nil || res.Paired != nil && len(res.Paired) != len(d) {
			return align.Result{}, false, nil
		}
	}
	for i, seq := range d {
		b, found, err := c.read(ctx, c.unpairedName(seq))
		if err != nil || !found {
			return align.Result{}, false, err
		}
		if firstRow(b) != seq {
			return align.Result{}, false, nil
		}
		res.Unpaired[i] = string(b)
	}
	return res, true, nil
}

// Put keeps the alignments of a search.
func (c *Cache) Put(ctx context.Context, res align.Result) error {
	if len(res.Unpaired) != len(res.Chains) || res.Paired != nil && len(res.Paired) != len(res.Chains) {
		return fmt.Errorf("aligner: a result of %d chains with %d unpaired and %d paired alignments",
			len(res.Chains), len(res.Unpaired), len(res.Paired))
	}
	for i, seq := range res.Chains {
		// A chain's unpaired alignment does not depend on its partners: one already kept
		// (searched alone, or with other partners) stays.
		if _, found, err := c.read(ctx, c.unpairedName(seq)); err == nil && found {
			continue
		}
		if err := c.write(ctx, c.unpairedName(seq), []byte(res.Unpaired[i])); err != nil {
			return err
		}
	}
	if !c.needsPairing(res.Chains) {
		return nil
	}
	// A searcher that pairs may give none (a local database without taxonomy for these
	// chains): that is kept too, as JSON null, or every later job would search again.
	b, err := json.Marshal(res.Paired)
	if err != nil {
		return err
	}
	return c.write(ctx, c.pairedName(res.Chains), b)
}

func (c *Cache) read(ctx context.Context, name string) ([]byte, bool, error) {
	f, err := c.files.OpenShared(ctx, name)
	if errors.Is(err, artifact.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("aligner: reading the alignment cache: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && time.Since(st.ModTime()) > c.limits.MaxAge {
		return nil, false, nil
	}
	z, err := gzip.NewReader(f)
	if err != nil {
		return nil, false, nil
	}
	b, err := io.ReadAll(z)
	if err != nil {
		return nil, false, nil
	}
	return b, true, nil
}

func (c *Cache) write(ctx context.Context, name string, b []byte) error {
	var buf bytes.Buffer
	z := gzip.NewWriter(&buf)
	if _, err := z.Write(b); err != nil {
		return err
	}
	if err := z.Close(); err != nil {
		return err
	}
	if err := c.files.PutShared(ctx, name, &buf); err != nil {
		return fmt.Errorf("aligner: writing the alignment cache: %w", err)
	}
	return nil
}

// firstRow is the first sequence row of an A3M: the query.
func firstRow(a3m []byte) string {
	for line := range strings.Lines(string(a3m)) {
		t := strings.TrimSpace(line)
		if t != "" && t[0] != '>' && t[0] != '#' {
			return t
		}
	}
	return ""
}

// Swept is what a Sweep removed.
type Swept struct {
	Files int
	Bytes int64
	Kept  int64 // bytes left
}

// Sweep drops the entries older than the cache's MaxAge, then the oldest ones while the
// rest exceed MaxBytes. Several replicas may sweep at once: each removal is idempotent.
// An entry a queued job still needs may go; its worker then finds it missing and the job
// is searched again (store.Aligning.ReturnForAlignment).
func (c *Cache) Sweep(ctx context.Context, now time.Time) (Swept, error) {
	files, err := c.files.ListShared(ctx, cacheRoot)
	if err != nil {
		return Swept{}, fmt.Errorf("aligner: listing the alignment cache: %w", err)
	}
	slices.SortFunc(files, func(a, b artifact.SharedFile) int { return a.ModTime.Compare(b.ModTime) })
	var total int64
	for _, f := range files {
		total += f.Size
	}
	var out Swept
	for _, f := range files {
		if now.Sub(f.ModTime) <= c.limits.MaxAge && total <= c.limits.MaxBytes {
			break // the rest are newer, and the size is within bounds
		}
		if err := c.files.DeleteShared(ctx, f.Name); err != nil {
			return out, fmt.Errorf("aligner: sweeping the alignment cache: %w", err)
		}
		out.Files++
		out.Bytes += f.Size
		total -= f.Size
	}
	out.Kept = total
	return out, nil
}
