package e2e

import (
	"strings"
	"testing"

	"github.com/chaperone-bio/chaperone/app"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/boltz"
	"github.com/chaperone-bio/chaperone/engine/enginetest"
)

// TestWebOffersNoSubmitForAModelNoWorkerCanRun: the form says, in the server's words, why a
// model cannot run (its tool is not installed on any worker) and does not offer to submit
// it, rather than take the job and answer "try again in 5 minutes"; a model that can run
// is offered as before.
func TestWebOffersNoSubmitForAModelNoWorkerCanRun(t *testing.T) {
	t.Parallel()
	s := startServer(t, func(c *app.Config) {
		c.Engines = []engine.Engine{boltz.New(boltz.Config{}), enginetest.New("esmfold2")}
		c.Tools = engine.Tools{"boltz": "/nonexistent/boltz"}
	})
	b := openBrowser(t, s, 1280, 900)
	b.open("/")
	b.run("choose Boltz-2", setValue("#predict-model", "boltz2"))
	note := b.text("#unavailable")
	mustf(t, strings.Contains(note, "Boltz-2 cannot run on this server: the boltz command is not installed.") &&
		strings.Contains(note, "Submitting is off"), "the note on an unavailable model reads %q", note)
	var disabled bool
	b.eval(`document.querySelector("#main form button[type=submit]").disabled`, &disabled)
	mustf(t, disabled, "Submit is offered for a model no worker can run")
	b.screenshot("unavailable")

	b.run("choose ESMFold2", setValue("#predict-model", "esmfold2"))
	b.waitJS("Submit is offered again", `!document.querySelector("#main form button[type=submit]").disabled && !document.getElementById("unavailable")`)

	// The last worker that had the model went away after the page loaded: the create is a
	// 503 with Retry-After: 300, whose detail says what is missing. The page says that, and
	// no "try again in 5 minutes".
	var stubbed bool
	b.eval(`(() => { const real = window.fetch; window.fetch = (url, opts) => url === "/v1/predictions"
	  ? Promise.resolve(new Response(JSON.stringify({ type: "/errors/unavailable", title: "Unavailable", status: 503,
	      detail: "No worker can run esmfold2 now: the esm package is not installed.", instance: "/v1/predictions" }),
	      { status: 503, headers: { "Content-Type": "application/problem+json", "Retry-After": "300" } }))
	  : real(url, opts); return true; })()`, &stubbed)
	b.run("submit", setValue("#predict-input", "MKTAYIAKQ"), click("#main form button[type=submit]"))
	b.waitJS("the refusal is shown", `!!document.querySelector("#main .alert")?.textContent`)
	alert := b.text("#main .alert")
	mustf(t, alert == "No worker can run esmfold2 now: the esm package is not installed.", "a 503 reads %q, want its detail alone", alert)
	b.expectNoProblems()
}

// TestWebEmptyListSaysWhoseJobsItShows: a browser with no jobs of its own learns why jobs
// sent with curl or a key are not there, and how to see a key's.
func TestWebEmptyListSaysWhoseJobsItShows(t *testing.T) {
	t.Parallel()
	s, b := openPage(t, 390, 844)
	s.predict("ok") // by address, as curl sends it: not this browser's
	text := b.text("#main .empty")
	for _, want := range []string{"Jobs you submit from this browser appear here", "one sent with an API key belongs to that key",
		"to the address it came from, not to this browser", "paste the key under API key"} {
		mustf(t, strings.Contains(text, want), "the empty list reads %q; want %q", text, want)
	}
	b.expectNoProblems()
}
