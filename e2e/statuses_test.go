package e2e

import (
	"maps"
	"net/http"
	"strings"
	"testing"
)

// createBodies is one valid body per create endpoint, for the test engine's models.
var createBodies = map[string]map[string]any{
	"/v1/predictions": {"sequence": "MKTAYIAKQ", "name": "hang"},
	"/v1/designs":     {"protocol": "protein-anything", "spec": "entities:\n  - protein: {id: B, sequence: 80..140}\n", "name": "hang"},
	"/v1/embeddings":  {"sequence": "MKTAYIAKQ", "name": "hang"},
}

// unavailableBodies ask for a model no test worker serves.
var unavailableBodies = map[string]map[string]any{
	"/v1/predictions": {"model": "openfold3", "sequence": "MKTAYIAKQ"},
	"/v1/designs":     {"protocol": "rfd3-binder", "contig": "A1,40-60", "structure": "ATOM      1  N   MET A   1      11.104  13.207   2.100  1.00  0.00           N\n"},
	"/v1/embeddings":  {"model": "saprot-650m", "sequence": "MKTAYIAKQ"},
}

func TestEveryCreateEndpointAnswersEveryDocumentedStatus(t *testing.T) {
	t.Parallel()
	for path, body := range createBodies {
		t.Run(strings.TrimPrefix(path, "/v1/"), func(t *testing.T) {
			t.Parallel()
			s := startServer(t, withLimits(func(l *limitsT) { l.ActiveJobsPerOwner = 1 }))
			bad := "Authorization: Bearer chp_live_00000000000000000000000000000000"
			s.post(path, body, bad).problem(http.StatusUnauthorized, "unauthorized")
			s.post(path, `{"sequence":"`+strings.Repeat("A", 9<<20)+`"}`).problem(http.StatusRequestEntityTooLarge, "payload-too-large")
			s.post(path, unavailableBodies[path]).problem(http.StatusServiceUnavailable, "unavailable")

			id := s.post(path, body, "Idempotency-Key: k1").expect(http.StatusAccepted).json()["id"].(string)
			replay := s.post(path, body, "Idempotency-Key: k1").expect(http.StatusOK).json()
			mustf(t, replay["id"] == id, "replay returned %v, want %s", replay["id"], id)
			different := maps.Clone(body)
			different["name"] = "another run"
			s.post(path, different, "Idempotency-Key: k1").problem(http.StatusUnprocessableEntity, "idempotency-key-reused")
			s.post(path, body).problem(http.StatusTooManyRequests, "rate-limited") // one active job allowed

			for _, p := range []string{"", "/results", "/logs", "/archive", "/artifacts/t1.cif"} {
				s.get("/v1/jobs/"+id+p, bad).problem(http.StatusUnauthorized, "unauthorized")
			}
			s.post("/v1/jobs/"+id+"/cancel", nil, bad).problem(http.StatusUnauthorized, "unauthorized")
			s.request(http.MethodDelete, "/v1/jobs/"+id, nil, bad).problem(http.StatusUnauthorized, "unauthorized")
			s.post("/v1/jobs/"+id+"/cancel", nil).expect(http.StatusOK)
		})
	}
}
