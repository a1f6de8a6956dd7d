package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/apikey"
	"github.com/chaperone-bio/chaperone/app"
	"github.com/chaperone-bio/chaperone/store"
)

// issueKey makes a key out of band, as `chaperone keys create` does.
func (s *server) issueKey(name string) (key, id string) {
	s.t.Helper()
	key, rec := apikey.New(name, time.Now())
	if err := s.Store.CreateKey(context.Background(), rec); err != nil {
		s.t.Fatal(err)
	}
	return key, rec.ID
}

func TestAnotherOwnersJobIsNotFoundEverywhere(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	alice, _ := s.issueKey("alice")
	bob, _ := s.issueKey("bob")
	id := s.predict("ok", "Authorization: Bearer "+alice)
	s.waitStatus(id, "succeeded", "X-API-Key: "+alice)

	unknown := "0123456789abcdef0123456789abcdef"
	for _, who := range [][]string{{"Authorization: Bearer " + bob}, nil} { // another key, and keyless
		for _, p := range []string{"", "/results", "/logs", "/archive", "/artifacts/t1.cif"} {
			mine := s.get("/v1/jobs/"+id+p, who...)
			mine.problem(http.StatusNotFound, "not-found")
			theirs := s.get("/v1/jobs/"+unknown+p, who...)
			mustf(t, string(mine.json()["detail"].(string)) == theirs.json()["detail"], "another owner's job is distinguishable from an unknown one")
		}
		s.post("/v1/jobs/"+id+"/cancel", nil, who...).problem(http.StatusNotFound, "not-found")
		s.request(http.MethodDelete, "/v1/jobs/"+id, nil, who...).problem(http.StatusNotFound, "not-found")
		list := s.get("/v1/jobs", who...).expect(http.StatusOK).json()
		mustf(t, len(list["data"].([]any)) == 0, "another owner lists alice's job")
	}
	list := s.get("/v1/jobs", "Authorization: Bearer "+alice).expect(http.StatusOK).json()
	mustf(t, len(list["data"].([]any)) == 1, "alice does not see her job: %v", list)
}

func TestBadKeysAre401AndRevocationTakesEffect(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	key, keyID := s.issueKey("ci")
	for _, h := range []string{
		"Authorization: Bearer chp_live_00000000000000000000000000000000", // well formed, unknown
		"Authorization: Bearer not-a-key",
		"Authorization: Basic dXNlcjpwYXNz",
		"X-API-Key: chp_live_short",
	} {
		s.get("/v1/jobs", h).problem(http.StatusUnauthorized, "unauthorized")
		s.post("/v1/predictions", map[string]any{"sequence": "MKT"}, h).problem(http.StatusUnauthorized, "unauthorized")
		s.get("/v1/health", h).expect(http.StatusOK)
	}
	s.get("/v1/jobs", "Authorization: Bearer "+key).expect(http.StatusOK)
	s.get("/v1/jobs", "authorization: bearer "+key).expect(http.StatusOK)
	if err := s.Store.RevokeKey(context.Background(), keyID, time.Now()); err != nil {
		t.Fatal(err)
	}
	s.get("/v1/jobs", "Authorization: Bearer "+key).problem(http.StatusUnauthorized, "unauthorized")
}

func TestSessionsOwnTheirJobs(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c1, c2 := s.API.NewSession(), s.API.NewSession()
	id := s.predict("ok", "Cookie: "+c1.String())
	s.get("/v1/jobs/"+id, "Cookie: "+c1.String()).expect(http.StatusOK)
	s.get("/v1/jobs/"+id, "Cookie: "+c2.String()).problem(http.StatusNotFound, "not-found")
	s.get("/v1/jobs/"+id).problem(http.StatusNotFound, "not-found") // same IP, no session
	forged := c1.Name + "=" + c1.Value[:32] + ".0000"
	s.get("/v1/jobs/"+id, "Cookie: "+forged).problem(http.StatusNotFound, "not-found")
}

func TestForwardedForIsBelievedOnlyFromTrustedProxies(t *testing.T) {
	t.Parallel()
	untrusted := startServer(t)
	id := untrusted.predict("ok", "X-Forwarded-For: 203.0.113.7")
	untrusted.get("/v1/jobs/"+id, "X-Forwarded-For: 198.51.100.9").expect(http.StatusOK) // header ignored: same peer
	untrusted.get("/v1/jobs/"+id, "Forwarded: for=198.51.100.9").expect(http.StatusOK)
}

// TestSpoofedForwardingHeadersImpersonateNoOne runs the two proxy set-ups the README
// describes. In each, the proxy (the loopback peer) appends the address it saw to the one
// header the operator named; the attacker at 198.51.100.9 writes the victim's address into
// every forwarding header it can, and must see none of the victim's jobs on any endpoint.
func TestSpoofedForwardingHeadersImpersonateNoOne(t *testing.T) {
	t.Parallel()
	const victim, attacker = "203.0.113.7", "198.51.100.9"
	setups := []struct {
		name   string
		header string
		// as is what reaches the server from a client at addr that sent the spoofed value
		// spoof in the named header: the proxy appends addr.
		as func(addr, spoof string) string
		// other is the forwarding header the proxy passes through untouched.
		other string
	}{
		{"nginx X-Forwarded-For", "X-Forwarded-For", func(addr, spoof string) string {
			return "X-Forwarded-For: " + strings.TrimPrefix(spoof+", "+addr, ", ")
		}, "Forwarded: for=" + victim},
		{"RFC 7239 Forwarded", "Forwarded", func(addr, spoof string) string {
			if spoof != "" {
				spoof = "for=" + spoof + ", "
			}
			return "Forwarded: " + spoof + `for="` + addr + `:4711";proto=https`
		}, "X-Forwarded-For: " + victim},
	}
	for _, setup := range setups {
		t.Run(setup.name, func(t *testing.T) {
			t.Parallel()
			s := startServer(t, func(c *app.Config) {
				c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
				c.ForwardedHeader = setup.header
			})
			id := s.predict("ok", setup.as(victim, ""))
			s.waitStatus(id, "succeeded", setup.as(victim, ""))
			spoofs := [][]string{
				{setup.as(attacker, victim)},
				{setup.as(attacker, victim+", "+victim)},
				{setup.as(attacker, ""), setup.other},
				{setup.as(attacker, victim), setup.other},
			}
			for _, spoof := range spoofs {
				for _, p := range []string{"", "/results", "/logs", "/archive", "/artifacts/t1.cif"} {
					s.get("/v1/jobs/"+id+p, spoof...).problem(http.StatusNotFound, "not-found")
				}
				list := s.get("/v1/jobs", spoof...).expect(http.StatusOK).json()
				mustf(t, len(list["data"].([]any)) == 0, "%q lists the victim's job", spoof)
				s.post("/v1/jobs/"+id+"/cancel", nil, spoof...).problem(http.StatusNotFound, "not-found")
				s.request(http.MethodDelete, "/v1/jobs/"+id, nil, spoof...).problem(http.StatusNotFound, "not-found")
			}
			// The victim, through the same proxy, still owns the job.
			s.get("/v1/jobs/"+id, setup.as(victim, attacker)).expect(http.StatusOK)
			s.get("/v1/jobs/"+id+"/results", setup.as(victim, "")).expect(http.StatusOK)
		})
	}
}

func TestIdempotencyKeys(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	body := map[string]any{"sequence": "MKTAYIAKQ", "name": "hang"}
	first := s.post("/v1/predictions", body, "Idempotency-Key: run-1").expect(http.StatusAccepted).json()
	again := s.post("/v1/predictions", body, "Idempotency-Key: run-1").expect(http.StatusOK)
	mustf(t, again.json()["id"] == first["id"] && again.Header.Get("Location") == "/v1/jobs/"+first["id"].(string),
		"the retried create made another job")
	s.post("/v1/predictions", map[string]any{"sequence": "MKTAYIAKQ", "name": "other"}, "Idempotency-Key: run-1").
		problem(http.StatusUnprocessableEntity, "idempotency-key-reused")
	// Keys are per owner: another owner's identical key is a new job.
	key, _ := s.issueKey("k")
	other := s.post("/v1/predictions", body, "Idempotency-Key: run-1", "X-API-Key: "+key).expect(http.StatusAccepted).json()
	mustf(t, other["id"] != first["id"], "idempotency keys leak between owners")
	s.post("/v1/predictions", body, "Idempotency-Key: ").problem(http.StatusBadRequest, "invalid-input")

	// Concurrent creates with one key make one job.
	// The goroutines only send; every check runs on the test goroutine.
	type answer struct {
		status int
		id     string
		err    error
	}
	answers := make(chan answer, 8)
	for range 8 {
		go func() {
			req, _ := http.NewRequest(http.MethodPost, s.URL+"/v1/predictions", strings.NewReader(`{"sequence":"MKT","name":"hang"}`))
			req.Header.Set("Idempotency-Key", "burst")
			req.Header.Set("Content-Type", "application/json")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				answers <- answer{err: err}
				return
			}
			defer res.Body.Close()
			var j struct{ ID string }
			err = json.NewDecoder(res.Body).Decode(&j)
			answers <- answer{status: res.StatusCode, id: j.ID, err: err}
		}()
	}
	seen := map[string]bool{}
	for range 8 {
		a := <-answers
		mustf(t, a.err == nil && (a.status == http.StatusAccepted || a.status == http.StatusOK),
			"a concurrent create answered %d, %v", a.status, a.err)
		seen[a.id] = true
	}
	mustf(t, len(seen) == 1, "8 concurrent creates with one key made %d jobs", len(seen))
	for id := range seen {
		s.post("/v1/jobs/"+id+"/cancel", nil).expect(http.StatusOK)
	}
	s.post("/v1/jobs/"+first["id"].(string)+"/cancel", nil).expect(http.StatusOK)
	s.post("/v1/jobs/"+other["id"].(string)+"/cancel", nil, "X-API-Key: "+key).expect(http.StatusOK)

	// Deleting the job frees its key.
	s.request(http.MethodDelete, "/v1/jobs/"+first["id"].(string), nil).expect(http.StatusOK)
	s.post("/v1/predictions", map[string]any{"sequence": "MKT", "name": "ok"}, "Idempotency-Key: run-1").expect(http.StatusAccepted)
}

func TestAReplayIsAnsweredEvenWhileNoWorkerIsLive(t *testing.T) {
	t.Parallel()
	s := startServer(t, withoutWorker())
	ctx := context.Background()
	// A worker record stands for a GPU node that is live now and gone a moment later.
	if err := s.Store.PutWorker(ctx, store.Worker{ID: "gpu-node", Models: []string{"boltz2"}, Slots: 1, SeenAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	body := map[string]any{"sequence": "MKTAYIAKQ"}
	id := s.post("/v1/predictions", body, "Idempotency-Key: while-live").expect(http.StatusAccepted).json()["id"]
	if err := s.Store.RemoveWorker(ctx, "gpu-node"); err != nil {
		t.Fatal(err)
	}
	replay := s.post("/v1/predictions", body, "Idempotency-Key: while-live").expect(http.StatusOK).json()
	mustf(t, replay["id"] == id, "the replay returned %v, want the original %v", replay["id"], id)
	s.post("/v1/predictions", map[string]any{"sequence": "MKTAYIAKQR"}, "Idempotency-Key: while-live").
		problem(http.StatusUnprocessableEntity, "idempotency-key-reused")
	s.post("/v1/predictions", body, "Idempotency-Key: after").problem(http.StatusServiceUnavailable, "unavailable")
}
