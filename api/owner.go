package api

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/chaperone-bio/chaperone/apikey"
	"github.com/chaperone-bio/chaperone/job"
)

// SessionCookie is the web app's session cookie; its value is "<id>.<hmac>" so that a
// client cannot forge another session's id.
const SessionCookie = "chaperone_session"

// sessionLifetime is how long, in seconds, a browser keeps its session cookie: longer
// than any job is kept, so that closing the browser does not lose sight of one.
const sessionLifetime = 365 * 24 * 60 * 60

// errBadKey is a key that is present but not valid: 401.
var errBadKey = errors.New("bad api key")

// owner decides who a request belongs to (decisions: Ownership): a valid API key, else the
// web app's session, else the client IP (an IPv6 client by its /64, see clientGroup). A key that is present but invalid is errBadKey.
func (s *Server) owner(r *http.Request) (job.Owner, error) {
	if key, present := presentedKey(r); present {
		id, err := s.checkKey(r, key)
		if err != nil {
			return job.Owner{}, err
		}
		return job.Owner{Kind: job.OwnerKey, ID: id}, nil
	}
	if id, ok := s.session(r); ok {
		return job.Owner{Kind: job.OwnerSession, ID: id}, nil
	}
	return job.Owner{Kind: job.OwnerIP, ID: clientGroup(s.clientIP(r))}, nil
}

// crossOrigin tells a browser's cross-site request from the web app's own, by the
// Sec-Fetch-Site and Origin headers browsers send.
var crossOrigin = http.NewCrossOriginProtection()

// session is the id of the request's signed session cookie. A cross-site browser request
// that would change something does not get the session's authority, so another site cannot
// forge a cancel or delete in the user's name (cross-site request forgery); it is then
// owned by its IP, as a cookieless request would be.
func (s *Server) session(r *http.Request) (string, bool) {
	c, err := r.Cookie(SessionCookie)
	if err != nil || crossOrigin.Check(r) != nil {
		return "", false
	}
	return s.verifySession(c.Value)
}

// Session wraps the web app's page: a browser without a valid session cookie is given
// one, Secure when the page is served over TLS, so that its jobs belong to it alone.
func (s *Server) Session(page http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := s.session(r); !ok {
			c := s.NewSession()
			c.Secure = r.TLS != nil || strings.HasPrefix(s.publicURL, "https://")
			c.MaxAge = sessionLifetime
			http.SetCookie(w, c)
		}
		page.ServeHTTP(w, r)
	})
}

// presentedKey finds a key in Authorization: Bearer or X-API-Key.
func presentedKey(r *http.Request) (string, bool) {
	if v := r.Header.Get("Authorization"); v != "" {
		scheme, token, _ := strings.Cut(v, " ")
		if !strings.EqualFold(scheme, "Bearer") {
			return "", true // some credential was sent, in a form we do not accept
		}
		return strings.TrimSpace(token), true
	}
	if v, ok := r.Header["X-Api-Key"]; ok && len(v) > 0 {
		return strings.TrimSpace(v[0]), true
	}
	return "", false
}

// checkKey returns the id of a live key.
func (s *Server) checkKey(r *http.Request, key string) (string, error) {
	if !apikey.WellFormed(key) {
		return "", errBadKey
	}
	hash := apikey.Hash(key)
	rec, err := s.store.KeyByHash(r.Context(), hash)
	if errors.Is(err, job.ErrNotFound) {
		return "", errBadKey
	}
	if err != nil {
		return "", err
	}
	// The lookup was by hash already; comparing again in constant time keeps the decision
	// itself free of timing differences whatever the store's index does.
	// A worker token is good for the worker endpoints only.
	if subtle.ConstantTimeCompare([]byte(rec.Hash), []byte(hash)) != 1 || !rec.RevokedAt.IsZero() || rec.Worker {
		return "", errBadKey
	}
	return rec.ID, nil
}

// NewSession returns a fresh session cookie for the web app.
func (s *Server) NewSession() *http.Cookie {
	var b [16]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	return &http.Cookie{Name: SessionCookie, Value: id + "." + s.sessionMAC(id), Path: "/",
		HttpOnly: true, SameSite: http.SameSiteLaxMode}
}

func (s *Server) sessionMAC(id string) string {
	m := hmac.New(sha256.New, s.sessionSecret)
	m.Write([]byte(id))
	return hex.EncodeToString(m.Sum(nil))
}

func (s *Server) verifySession(v string) (string, bool) {
	id, mac, ok := strings.Cut(v, ".")
	if !ok || len(id) != 32 {
		return "", false
	}
	return id, hmac.Equal([]byte(mac), []byte(s.sessionMAC(id)))
}

// clientIP is the TCP peer, or, when the peer is a trusted proxy, the address that proxy
// reports in the one header the operator named (Config.ForwardedHeader): the rightmost
// address in it that is not itself a trusted proxy. A proxy appends the peer it saw to the
// right of whatever the client sent, so an address a client writes into the header, or into
// any other forwarding header, is never believed.
func (s *Server) clientIP(r *http.Request) netip.Addr {
	peer := remoteAddr(r)
	if !s.trusted(peer) {
		return peer
	}
	hops := forwardedHops(r.Header.Values(s.forwardedHeader), s.forwardedHeader == ForwardedRFC7239)
	for i := len(hops) - 1; i >= 0; i-- {
		if !hops[i].IsValid() {
			break // the proxy sent no usable address ("unknown", an obfuscated id)
		}
		if !s.trusted(hops[i]) {
			return hops[i]
		}
	}
	return peer
}

func (s *Server) trusted(a netip.Addr) bool {
	for _, p := range s.trustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

func remoteAddr(r *http.Request) netip.Addr {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.IPv4Unspecified()
	}
	return a.Unmap()
}

// The forwarding headers an operator can name.
const (
	ForwardedXFF     = "X-Forwarded-For" // nginx, HAProxy, most load balancers: a list of addresses
	ForwardedRFC7239 = "Forwarded"       // RFC 7239: elements with for= parameters
)

// CanonicalForwardedHeader checks an operator's choice of header: empty means
// X-Forwarded-For; any other name is a comma-separated list of addresses, but Forwarded,
// which is read as RFC 7239.
func CanonicalForwardedHeader(name string) (string, error) {
	if name == "" {
		return ForwardedXFF, nil
	}
	if !validHeaderName(name) {
		return "", fmt.Errorf("%q is not a header name", name)
	}
	return http.CanonicalHeaderKey(name), nil
}

func validHeaderName(name string) bool {
	for _, c := range []byte(name) {
		if !(c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return name != ""
}

// forwardedHops lists the addresses of the header's lines in order, reading each line as
// RFC 7239 elements (rfc7239) or as an address list. An entry that does not parse stays in
// the list as an invalid address, so that the walk from the right stops at it rather than
// believing what stands to its left.
func forwardedHops(lines []string, rfc7239 bool) []netip.Addr {
	var out []netip.Addr
	for _, v := range lines {
		for _, elem := range strings.Split(v, ",") {
			if !rfc7239 {
				out = append(out, parseHop(strings.TrimSpace(elem)))
				continue
			}
			var a netip.Addr
			for _, pair := range strings.Split(elem, ";") {
				k, val, ok := strings.Cut(strings.TrimSpace(pair), "=")
				if ok && strings.EqualFold(k, "for") {
					a = parseHop(strings.Trim(val, `"`))
				}
			}
			out = append(out, a)
		}
	}
	return out
}

// parseHop reads "1.2.3.4", "1.2.3.4:80", "[::1]" or "[::1]:80"; anything else is the
// invalid address.
func parseHop(s string) netip.Addr {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap()
	}
	a, _ := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(s, "["), "]"))
	return a.Unmap()
}
