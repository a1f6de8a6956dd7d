package e2e

import (
	"net/http"
	"net/netip"
	"testing"

	"github.com/chaperone-bio/chaperone/app"
)

// TestOwnershipMatrix is the ownership suite: behind a trusted proxy, callers by key, by
// web session and by address (with and without forged forwarding headers, and with a key
// and another's session at once) each own one job, and every caller tries every job
// endpoint on every job. Only the owner sees its job; everyone else gets the 404 of a job
// that does not exist, and lists only their own.
func TestOwnershipMatrix(t *testing.T) {
	t.Parallel()
	s := startServer(t, func(c *app.Config) { c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")} })
	keyA, _ := s.issueKey("a")
	keyB, _ := s.issueKey("b")
	sess1, sess2 := s.API.NewSession(), s.API.NewSession()
	type caller struct {
		name    string
		headers []string
		owns    string // the caller whose jobs this one sees; itself unless it is a disguise
	}
	callers := []caller{
		{"key A", []string{"Authorization: Bearer " + keyA}, "key A"},
		{"key B", []string{"X-API-Key: " + keyB}, "key B"},
		{"session 1", []string{"Cookie: " + sess1.String()}, "session 1"},
		{"session 2", []string{"Cookie: " + sess2.String()}, "session 2"},
		{"address 1", []string{"X-Forwarded-For: 203.0.113.7"}, "address 1"},
		{"address 2", []string{"X-Forwarded-For: 198.51.100.9"}, "address 2"},
		{"address 2 forging address 1", []string{"X-Forwarded-For: 203.0.113.7, 198.51.100.9", "Forwarded: for=203.0.113.7"}, "address 2"},
		{"key B with session 1's cookie", []string{"X-API-Key: " + keyB, "Cookie: " + sess1.String()}, "key B"},
		{"session 2 from address 1", []string{"Cookie: " + sess2.String(), "X-Forwarded-For: 203.0.113.7"}, "session 2"},
	}
	jobs := map[string]string{} // owner → its job
	for _, c := range callers {
		if c.owns == c.name {
			jobs[c.name] = s.predict("ok", c.headers...)
		}
	}
	for owner, id := range jobs {
		for _, c := range callers {
			if c.owns == owner {
				s.waitStatus(id, "succeeded", c.headers...)
				break
			}
		}
	}
	endpoints := []string{"", "/results", "/logs", "/archive", "/artifacts/t1.cif"}
	cells, denied := 0, 0
	for _, c := range callers {
		list := s.get("/v1/jobs", c.headers...).expect(http.StatusOK).json()["data"].([]any)
		mustf(t, len(list) == 1 && list[0].(map[string]any)["id"] == jobs[c.owns], "%s lists %v, want only %s's job", c.name, list, c.owns)
		cells++
		for owner, id := range jobs {
			mine := owner == c.owns
			for _, p := range endpoints {
				r := s.get("/v1/jobs/"+id+p, c.headers...)
				if mine {
					r.expect(http.StatusOK)
				} else {
					r.problem(http.StatusNotFound, "not-found")
					denied++
				}
				cells++
			}
			if !mine {
				s.post("/v1/jobs/"+id+"/cancel", nil, c.headers...).problem(http.StatusNotFound, "not-found")
				s.request(http.MethodDelete, "/v1/jobs/"+id, nil, c.headers...).problem(http.StatusNotFound, "not-found")
				cells += 2
				denied += 2
			}
		}
	}
	t.Logf("ownership matrix: %d callers × %d jobs × %d endpoints: %d cells, %d non-owner cells, 0 saw another's job",
		len(callers), len(jobs), len(endpoints)+3, cells, denied)
}
