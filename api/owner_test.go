package api

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/chaperone-bio/chaperone/api/problem"
	"github.com/chaperone-bio/chaperone/catalog"
)

func TestClientIPBelievesOnlyTheNamedHeadersRightmostUntrustedHop(t *testing.T) {
	t.Parallel()
	proxies := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	tests := []struct {
		name, header, peer string
		lines              map[string][]string
		want               string
	}{
		{"untrusted peer", "", "192.0.2.1:5", map[string][]string{"X-Forwarded-For": {"203.0.113.7"}}, "192.0.2.1"},
		{"xff one hop", "", "10.0.0.1:5", map[string][]string{"X-Forwarded-For": {"203.0.113.7"}}, "203.0.113.7"},
		{"xff spoofed left", "", "10.0.0.1:5", map[string][]string{"X-Forwarded-For": {"1.1.1.1, 203.0.113.7"}}, "203.0.113.7"},
		{"xff proxy chain", "", "10.0.0.1:5", map[string][]string{"X-Forwarded-For": {"1.1.1.1, 203.0.113.7, 10.0.0.9"}}, "203.0.113.7"},
		{"xff across lines", "", "10.0.0.1:5", map[string][]string{"X-Forwarded-For": {"1.1.1.1", "203.0.113.7"}}, "203.0.113.7"},
		{"xff ignores Forwarded", "", "10.0.0.1:5", map[string][]string{"X-Forwarded-For": {"203.0.113.7"}, "Forwarded": {"for=1.1.1.1"}}, "203.0.113.7"},
		{"xff garbage rightmost", "", "10.0.0.1:5", map[string][]string{"X-Forwarded-For": {"1.1.1.1, unknown"}}, "10.0.0.1"},
		{"xff ipv6 with port", "", "[::1]:5", map[string][]string{"X-Forwarded-For": {"[2001:db8::1]:80"}}, "2001:db8::1"},
		{"xff missing", "", "10.0.0.1:5", nil, "10.0.0.1"},
		{"rfc7239", "Forwarded", "10.0.0.1:5", map[string][]string{"Forwarded": {`for=1.1.1.1, for="203.0.113.7:99";proto=https`}}, "203.0.113.7"},
		{"rfc7239 ignores xff", "Forwarded", "10.0.0.1:5", map[string][]string{"Forwarded": {"for=203.0.113.7"}, "X-Forwarded-For": {"1.1.1.1"}}, "203.0.113.7"},
		{"rfc7239 obfuscated", "Forwarded", "10.0.0.1:5", map[string][]string{"Forwarded": {"for=1.1.1.1, for=_hidden"}}, "10.0.0.1"},
		{"rfc7239 ipv6", "forwarded", "10.0.0.1:5", map[string][]string{"Forwarded": {`for="[2001:db8::2]:80"`}}, "2001:db8::2"},
		{"custom header", "X-Real-Ip", "10.0.0.1:5", map[string][]string{"X-Real-Ip": {"203.0.113.7"}, "X-Forwarded-For": {"1.1.1.1"}}, "203.0.113.7"},
	}
	for _, tt := range tests {
		s := New(Config{Catalog: catalog.Default(), TrustedProxies: proxies, ForwardedHeader: tt.header})
		r := httptest.NewRequest("GET", "/v1/jobs", nil)
		r.RemoteAddr = tt.peer
		for k, vs := range tt.lines {
			for _, v := range vs {
				r.Header.Add(k, v)
			}
		}
		if got := s.clientIP(r).String(); got != tt.want {
			t.Errorf("%s: client %s, want %s", tt.name, got, tt.want)
		}
	}
}

func TestCanonicalForwardedHeader(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"": "X-Forwarded-For", "forwarded": "Forwarded", "x-real-ip": "X-Real-Ip", "X Bad": "", "a:b": ""} {
		got, err := CanonicalForwardedHeader(in)
		if got != want || (err != nil) != (want == "") {
			t.Errorf("%q: %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestProblemTypesEchoOnlyAPlainHost(t *testing.T) {
	t.Parallel()
	s := New(Config{Catalog: catalog.Default(), Logger: quietLog})
	tests := []struct{ host, want string }{
		{"fold.example.org", "http://fold.example.org/errors/not-found"},
		{"fold.example.org:8080", "http://fold.example.org:8080/errors/not-found"},
		{"fold.example.org.", "http://fold.example.org./errors/not-found"},
		{"192.0.2.1:80", "http://192.0.2.1:80/errors/not-found"},
		{"[2001:db8::1]:80", "http://[2001:db8::1]:80/errors/not-found"},
		{"user@evil.example", "/errors/not-found"},
		{"evil.example/phish?", "/errors/not-found"},
		{"evil.example:99999", "/errors/not-found"},
		{"evil.example:", "/errors/not-found"},
		{"2001:db8::1", "/errors/not-found"},
		{"[0::", "/errors/not-found"},
		{"[2001:db8::1]", "http://[2001:db8::1]/errors/not-found"},
		{"-evil.example", "/errors/not-found"},
		{"ex%41mple.org", "/errors/not-found"},
		{"", "/errors/not-found"},
	}
	for _, tt := range tests {
		r := httptest.NewRequest("GET", "/nowhere", nil)
		r.Host = tt.host
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		var p problem.Problem
		if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil || p.Type != tt.want {
			t.Errorf("Host %q: type %q (%v), want %q", tt.host, p.Type, err, tt.want)
		}
	}
	withURL := New(Config{Catalog: catalog.Default(), Logger: quietLog, PublicURL: "https://fold.example.org/"})
	r := httptest.NewRequest("GET", "/nowhere", nil)
	r.Host = "evil.example"
	w := httptest.NewRecorder()
	withURL.ServeHTTP(w, r)
	if !strings.Contains(w.Body.String(), `"type":"https://fold.example.org/errors/not-found"`) {
		t.Errorf("with a public URL: %s", w.Body)
	}
}

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

// FuzzClientIP: whatever a client puts in the forwarding headers, the owner address is the
// peer or an address that stands in the named header, and never a trusted proxy's unless
// it is the peer's own.
func FuzzClientIP(f *testing.F) {
	for _, seed := range []string{"203.0.113.7", "1.1.1.1, 203.0.113.7", `for="[2001:db8::1]:80";proto=https, for=_x`, "unknown, 10.0.0.9", ""} {
		f.Add(seed, seed, false)
	}
	proxies := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	f.Fuzz(func(t *testing.T, xff, fwd string, rfc bool) {
		header := ForwardedXFF
		if rfc {
			header = ForwardedRFC7239
		}
		s := &Server{trustedProxies: proxies, forwardedHeader: header}
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = "10.0.0.1:5"
		r.Header["X-Forwarded-For"] = []string{xff}
		r.Header["Forwarded"] = []string{fwd}
		got := s.clientIP(r)
		if got == netip.MustParseAddr("10.0.0.1") {
			return
		}
		if !got.IsValid() || s.trusted(got) {
			t.Fatalf("client %v from %q / %q", got, xff, fwd)
		}
		named := xff
		if rfc {
			named = fwd
		}
		if !slices.Contains(forwardedHops([]string{named}, rfc), got) {
			t.Fatalf("client %v is not an address of the named header %q", got, named)
		}
	})
}
