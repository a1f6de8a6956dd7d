package problem

import (
	"net/url"
	"testing"
)

// FuzzPlainHost: a Host that problem types echo makes a URL whose host is that Host and
// nothing else.
func FuzzPlainHost(f *testing.F) {
	for _, seed := range []string{"fold.example.org", "192.0.2.1:80", "[2001:db8::1]:80", "user@evil", "a/b", "x:99999"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, h string) {
		if !plainHost(h) {
			return
		}
		u, err := url.Parse("http://" + h + "/errors/x")
		if err != nil || u.Host != h || u.Path != "/errors/x" || u.User != nil {
			t.Fatalf("plain host %q makes %v (%v)", h, u, err)
		}
	})
}
