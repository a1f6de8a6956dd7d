package api

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
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
// web app's session, else the client IP. A key that is present but invalid is errBadKey.
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
	return job.Owner{Kind: job.OwnerIP, ID: s.clientIP(r).String()}, nil
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
// reports: the rightmost address in X-Forwarded-For (or Forwarded) that is not itself a
// trusted proxy, so a client cannot claim another's IP by sending the header itself.
func (s *Server) clientIP(r *http.Request) netip.Addr {
	peer := remoteAddr(r)
	if !s.trusted(peer) {
		return peer
	}
	hops := forwardedFor(r)
	for i := len(hops) - 1; i >= 0; i-- {
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

// forwardedFor lists the addresses of Forwarded (RFC 7239) or else X-Forwarded-For, in
// header order; unparsable entries are dropped.
func forwardedFor(r *http.Request) []netip.Addr {
	var out []netip.Addr
	if vs := r.Header.Values("Forwarded"); len(vs) > 0 {
		for _, v := range vs {
			for _, elem := range strings.Split(v, ",") {
				for _, pair := range strings.Split(elem, ";") {
					k, val, ok := strings.Cut(strings.TrimSpace(pair), "=")
					if ok && strings.EqualFold(k, "for") {
						if a, ok := parseHop(strings.Trim(val, `"`)); ok {
							out = append(out, a)
						}
					}
				}
			}
		}
		return out
	}
	for _, v := range r.Header.Values("X-Forwarded-For") {
		for _, part := range strings.Split(v, ",") {
			if a, ok := parseHop(strings.TrimSpace(part)); ok {
				out = append(out, a)
			}
		}
	}
	return out
}

// parseHop reads "1.2.3.4", "1.2.3.4:80", "[::1]" or "[::1]:80".
func parseHop(s string) (netip.Addr, bool) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap(), true
	}
	a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(s, "["), "]"))
	return a.Unmap(), err == nil
}
