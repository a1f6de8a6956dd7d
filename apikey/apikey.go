// Package apikey makes and checks chaperone API keys: "chp_live_" followed by 40 random
// base62 characters. Only a key's SHA-256 is ever stored; the key itself is shown once.
package apikey

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"

	"github.com/chaperone-bio/chaperone/store"
)

// Prefix starts every live key.
const Prefix = "chp_live_"

const (
	randomChars = 40 // 40 base62 characters carry about 238 bits
	base62      = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	shownPrefix = len(Prefix) + 6
)

// New makes a key and the record to store for it.
func New(name string, now time.Time) (key string, rec store.Key) {
	var b strings.Builder
	b.WriteString(Prefix)
	for b.Len() < len(Prefix)+randomChars {
		var buf [64]byte
		_, _ = rand.Read(buf[:])
		for _, c := range buf {
			// 248 = 4*62 keeps the draw uniform over the 62 characters.
			if c < 248 && b.Len() < len(Prefix)+randomChars {
				b.WriteByte(base62[c%62])
			}
		}
	}
	key = b.String()
	var id [8]byte
	_, _ = rand.Read(id[:])
	return key, store.Key{
		ID:        "key_" + hex.EncodeToString(id[:]),
		Name:      name,
		Hash:      Hash(key),
		Prefix:    key[:shownPrefix],
		CreatedAt: now.UTC(),
	}
}

// Hash is the stored form of a key.
func Hash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// WellFormed reports whether s has the shape of a key, so malformed ones are refused
// without touching the store.
func WellFormed(s string) bool {
	rest, ok := strings.CutPrefix(s, Prefix)
	if !ok || len(rest) < 32 || len(rest) > 128 {
		return false
	}
	for i := 0; i < len(rest); i++ {
		if strings.IndexByte(base62, rest[i]) < 0 {
			return false
		}
	}
	return true
}
