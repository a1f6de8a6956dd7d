package e2e

import (
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chaperone-bio/chaperone/app"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/boltzgen"
	"github.com/chaperone-bio/chaperone/engine/builtin"
)

// catalogReasons is each model's unavailable_reason in GET /v1/models; "" for an
// available model.
func catalogReasons(s *server) map[string]string {
	s.t.Helper()
	reasons := map[string]string{}
	for _, raw := range s.get("/v1/models").expect(http.StatusOK).json()["models"].([]any) {
		m := raw.(map[string]any)
		why, _ := m["unavailable_reason"].(string)
		mustf(s.t, (m["available"] == true) == (m["unavailable_reason"] == nil), "%v: available %v with reason %v", m["id"], m["available"], m["unavailable_reason"])
		reasons[m["id"].(string)] = why
	}
	return reasons
}

// reasonCreates are a valid create per model, for the 503 that names its reason, and what
// the 503 calls the model.
var reasonCreates = map[string]struct {
	path, what string
	body       map[string]any
}{
	"boltz2":        {"/v1/predictions", "model boltz2", map[string]any{"model": "boltz2", "sequence": "MKTAYIAK"}},
	"protenix-v2":   {"/v1/predictions", "model protenix-v2", map[string]any{"model": "protenix-v2", "sequence": "MKTAYIAK"}},
	"openfold3":     {"/v1/predictions", "model openfold3", map[string]any{"model": "openfold3", "sequence": "MKTAYIAK"}},
	"opendde-abag":  {"/v1/predictions", "model opendde-abag", map[string]any{"model": "opendde-abag", "sequence": "MKTAYIAK"}},
	"esmfold2-fast": {"/v1/predictions", "model esmfold2-fast", map[string]any{"model": "esmfold2-fast", "sequence": "MKTAYIAK"}},
	"saprot-650m":   {"/v1/embeddings", "model saprot-650m", map[string]any{"model": "saprot-650m", "sequence": "MKTAYIAK"}},
	"boltzgen": {"/v1/designs", "model boltzgen (protocol protein-anything)", map[string]any{"protocol": "protein-anything",
		"spec": "entities:\n  - protein:\n      id: B\n      sequence: 80..140\n"}},
}

// TestCatalogSaysWhyAModelIsUnavailable: every unavailable model carries its reason in the
// catalog, in the words of the 503 a create for it gets: a worker whose tools are missing
// names each missing tool, a worker without an engine for a model says no worker offers
// it, and a server with no worker says so.
func TestCatalogSaysWhyAModelIsUnavailable(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "absent")
	var log lockedBuffer
	noTools := startServer(t, func(c *app.Config) {
		c.Logger = slog.New(slog.NewTextHandler(&log, nil))
		c.Engines = builtin.Engines(builtin.Config{})
		c.Tools = engine.Tools{}
		for _, name := range []string{"boltz", "run_openfold", "protenix", "opendde", "boltzgen", "rfd3", "esm", "transformers"} {
			c.Tools[name] = missing
		}
	})
	bare := startServer(t, withoutWorker())
	offersSome := startServer(t)

	notInstalled := func(command string) string { return "the " + command + " command is not installed" }
	noPython := func(pkg string) string { return "no Python interpreter on a worker imports the " + pkg + " package" }
	tests := []struct {
		server *server
		model  string
		want   string
	}{
		{noTools, "boltz2", notInstalled("boltz")},
		{noTools, "openfold3", notInstalled("run_openfold")},
		{noTools, "protenix-v2", notInstalled("protenix")},
		{noTools, "opendde", notInstalled("opendde")},
		{noTools, "opendde-abag", notInstalled("opendde")},
		{noTools, "boltzgen", boltzgen.NoGPU}, // a worker without a GPU: that comes before the tool
		{noTools, "rfd3", notInstalled("rfd3")},
		{noTools, "esmfold2-fast", noPython("esm")},
		{noTools, "esmc-6b", noPython("esm")},
		{noTools, "saprot-650m", noPython("transformers")},
		{bare, "boltz2", "no worker is connected"},
		{bare, "saprot-650m", "no worker is connected"},
		{offersSome, "protenix-v2", "no live worker offers it"},
		{offersSome, "boltz2", ""},
	}
	catalogs := map[*server]map[string]string{}
	for _, tt := range tests {
		if catalogs[tt.server] == nil {
			catalogs[tt.server] = catalogReasons(tt.server)
		}
		if got := catalogs[tt.server][tt.model]; got != tt.want {
			t.Errorf("%s: unavailable_reason %q, want %q", tt.model, got, tt.want)
		}
		create, ok := reasonCreates[tt.model]
		if !ok || tt.want == "" {
			continue
		}
		detail := tt.server.post(create.path, create.body).problem(http.StatusServiceUnavailable, "unavailable")
		if want := "No live worker can run " + create.what + ": " + tt.want + "."; detail != want {
			t.Errorf("%s: 503 detail %q, want %q", tt.model, detail, want)
		}
	}
	for model, why := range catalogs[bare] {
		mustf(t, why == "no worker is connected", "%s on a server without workers: %q", model, why)
	}

	// The worker logged each model's finding once at start, in the catalog's words, and
	// how many can run.
	for model, why := range catalogs[noTools] {
		line := fmt.Sprintf("msg=\"model on this worker\" worker=test-worker model=%s status=no reason=%q", model, why)
		mustf(t, strings.Count(log.String(), line) == 1, "the worker's log has not once %s:\n%s", line, log.String())
	}
	mustf(t, strings.Count(log.String(), `msg="0 of 14 models can run on this worker" worker=test-worker`) == 1, "no summary in the worker's log:\n%s", log.String())
}
