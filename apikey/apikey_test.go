package apikey

import (
	"testing"
	"time"
)

func TestNewKeysAreWellFormedUniqueAndHashed(t *testing.T) {
	seen := map[string]bool{}
	for range 200 {
		key, rec := New("ci", time.Now())
		if !WellFormed(key) {
			t.Fatalf("New made a malformed key %q", key)
		}
		if seen[key] {
			t.Fatalf("New repeated key %q", key)
		}
		seen[key] = true
		if rec.Hash != Hash(key) || rec.Hash == key {
			t.Fatalf("record hash %q is not the hash of the key", rec.Hash)
		}
		if len(rec.Prefix) >= len(key) || key[:len(rec.Prefix)] != rec.Prefix {
			t.Fatalf("shown prefix %q is not a strict prefix of the key", rec.Prefix)
		}
	}
}

func TestWellFormed(t *testing.T) {
	tests := []struct {
		key  string
		want bool
	}{
		{"chp_live_" + "abcdefghijABCDEFGHIJ0123456789ab", true},
		{"chp_live_" + "abcdefghijABCDEFGHIJ0123456789a", false}, // 31 characters
		{"chp_test_" + "abcdefghijABCDEFGHIJ0123456789ab", false},
		{"chp_live_" + "abcdefghijABCDEFGHIJ0123456789a!", false},
		{"", false},
		{"Bearer chp_live_abcdefghijABCDEFGHIJ0123456789ab", false},
	}
	for _, tt := range tests {
		if got := WellFormed(tt.key); got != tt.want {
			t.Errorf("WellFormed(%q) = %v, want %v", tt.key, got, tt.want)
		}
	}
}
