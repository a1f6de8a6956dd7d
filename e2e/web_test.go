package e2e

import (
	"context"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/chaperone-bio/chaperone/api"
	"github.com/chaperone-bio/chaperone/app"
	"github.com/chaperone-bio/chaperone/engine/enginetest"
	"github.com/chaperone-bio/chaperone/job"
)

var jobHash = regexp.MustCompile(`#/job/([\w-]+)$`)

// submitted waits for the page to move to the job page of the job it created.
func (b *browser) submitted() string {
	b.t.Helper()
	b.waitJS("the job page opens", `location.hash.startsWith("#/job/")`)
	var hash string
	b.eval(`location.hash`, &hash)
	return jobHash.FindStringSubmatch(hash)[1]
}

// openPage starts a server with the web engines and opens its page in a fresh browser of
// the given window size.
func openPage(t *testing.T, width, height int) (*server, *browser) {
	t.Helper()
	s := startServer(t, withWebEngines(t))
	b := openBrowser(t, s, width, height)
	b.open("/")
	return s, b
}

// submitPrediction fills in and sends the prediction form.
func (b *browser) submitPrediction(model, input, name string) {
	b.t.Helper()
	b.run("submit a prediction", setValue("#predict-model", model), setValue("#predict-input", input),
		setValue("#predict-name", name), click("#main form button[type=submit]"))
}

func TestWebPredictionFromSubmitToViewer(t *testing.T) {
	t.Parallel()
	s, b := openPage(t, 1280, 1000)
	mustf(t, strings.Contains(b.text("#predict-model"), "Boltz-2"), "the model list lacks Boltz-2")
	mustf(t, strings.Contains(b.text("#predict-model"), "unavailable"), "unavailable models are not marked")
	b.screenshot("home")

	b.run("fill in a prediction",
		setValue("#predict-model", "boltz2"),
		setValue("#predict-input", ">A|protein\nMKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQ\n"),
		click(".params summary"),
		setValue("#predict-param-diffusion_samples", "2"),
		click("#predict-param-write_pae"), // each sample's PAE comes with write_pae
		setValue("#predict-name", "kinase fold"),
		click("#main form button[type=submit]"))
	id := b.submitted()
	b.waitJS("the job succeeds", `document.querySelector(".card .pill")?.textContent === "succeeded"`)
	b.waitJS("the viewer shows the best sample", `document.getElementById("viewer")?.dataset.loaded === "target_1.cif"`)
	b.waitJS("the PAE heatmap is drawn", `document.getElementById("pae")?.dataset.drawn === "target_1/pae_target_1_model_0.npz"`)
	mustf(t, strings.Contains(b.text("#log"), "Predicting"), "the run log was not shown")

	// Mol* drew the structure: check the canvas's pixels, not the element. (The stand-in's
	// atoms lie on a straight line, seen edge-on; the design test checks the colours.)
	drawn := countDrawn(b.elementPixels("#viewer"))
	mustf(t, drawn > 150, "the viewer shows %d coloured pixels, too few for a structure", drawn)

	// The stand-in's PAE is 4 Å everywhere: the heatmap's colour at 4 of 30 Å.
	var pae []int
	b.eval(`(() => { const c = document.getElementById("pae"); const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data; return [c.width, c.height, d[0], d[1], d[2], d[3]]; })()`, &pae)
	mustf(t, pae[0] == 33 && pae[1] == 33 && pae[5] == 255, "the PAE heatmap is %dx%d, alpha %d; want 33x33 opaque", pae[0], pae[1], pae[5])
	mustf(t, pae[2] < 60 && pae[4] > 100, "the PAE colour of 4 Å is rgb(%d,%d,%d), want a dark blue", pae[2], pae[3], pae[4])

	var rows int
	b.eval(`document.querySelectorAll("table[aria-label='Prediction rows'] tbody tr").length`, &rows)
	mustf(t, rows == 1, "the rows table has %d rows, want 1", rows)
	b.run("sort the rows", click("table[aria-label='Prediction rows'] th button"))
	b.run("show the second sample", click("[aria-label=Samples] button:nth-of-type(2)"))
	b.waitJS("the second sample is shown", `document.getElementById("viewer").dataset.loaded === "target_1_sample_1.cif" && document.getElementById("pae").dataset.drawn === "target_1/pae_target_1_model_1.npz"`)
	var links int
	b.eval(`document.querySelectorAll(".downloads a").length`, &links)
	mustf(t, links >= 6, "only %d download links", links)
	b.screenshot("prediction")

	b.open("/#/jobs")
	b.waitJS("the job is listed", `[...document.querySelectorAll("table a")].some(a => a.textContent === "kinase fold")`)
	b.screenshot("jobs")
	s.get("/v1/jobs/" + id).expect(http.StatusNotFound) // owned by the browser's session, not the IP
	b.expectNoProblems()
}

func TestWebShowsAProblemNextToItsField(t *testing.T) {
	t.Parallel()
	s, b := openPage(t, 1280, 900)
	b.submitPrediction("boltz2", "MKX1", "bad")
	got := b.text("#predict-input-error")
	mustf(t, strings.HasPrefix(got, "sequence: position 4"), "the error beside the input reads %q", got)
	var invalid string
	b.eval(`document.getElementById("predict-input").getAttribute("aria-invalid")`, &invalid)
	mustf(t, invalid == "true", "the input is not marked invalid")
	b.screenshot("field-error")
	b.expectNoProblems(s.URL + "/v1/predictions") // the 400 itself
}

func TestWebCancelAndDelete(t *testing.T) {
	t.Parallel()
	s, b := openPage(t, 1280, 900)
	b.submitPrediction("esmfold2", "MKTAYIAKQRQ", enginetest.Slow+":600") // a minute, reporting progress
	id := b.submitted()
	b.waitJS("the job runs", `document.querySelector(".card .pill")?.textContent === "running"`)
	b.waitJS("the progress bar moves", `Number(document.querySelector("[role=progressbar]")?.getAttribute("aria-valuenow")) > 0`)
	b.waitJS("the log follows the run", `/step [1-9][0-9]*\/600/.test(document.getElementById("log").textContent)`)
	b.screenshot("running")
	b.run("cancel", click("#cancel"))
	b.waitJS("the job is canceled", `document.querySelector(".card .pill")?.textContent === "canceled"`)
	b.run("delete", click("#delete"), click("#delete"))
	b.waitJS("the page returns to the list", `location.hash === "#/"`)
	b.waitJS("the list is empty", `!!document.querySelector("#main .empty")`)
	_, err := s.Store.GetJobSummary(context.Background(), id)
	mustf(t, errors.Is(err, job.ErrNotFound), "the deleted job is still stored: %v", err)
	b.expectNoProblems()
}

// A job that waits says why: here both worker slots of the server run other jobs.
func TestWebSaysWhyAJobWaits(t *testing.T) {
	t.Parallel()
	_, b := openPage(t, 1280, 900)
	for range 2 {
		b.open("/")
		b.submitPrediction("esmfold2", "MKTAYIAKQRQ", enginetest.Slow+":600") // a minute
		b.submitted()
		b.waitJS("the job runs", `document.querySelector(".card .pill")?.textContent === "running"`)
	}
	b.open("/")
	b.submitPrediction("esmfold2", "MKTAYIAKQRQ", enginetest.Slow+":600")
	b.submitted()
	b.waitJS("the third job says why it waits", `document.querySelector("[data-stage]")?.textContent === "waiting: all 2 worker slots that can run it are busy"`)
	b.screenshot("waiting")
	b.expectNoProblems()
}

func TestWebDesignOpensInTheViewer(t *testing.T) {
	t.Parallel()
	_, b := openPage(t, 1280, 1000)
	b.run("fill in a design", click("#tab-design"), setValue("#design-protocol", "protein-anything"),
		setValue("#design-spec", "entities:\n  - protein:\n      id: B\n      sequence: 80..140\n"), click("#main form button[type=submit]"))
	b.submitted()
	b.waitJS("the first design is shown", `document.getElementById("viewer")?.dataset.loaded === "design_1.cif"`)
	var ranks []string
	b.eval(`[...document.querySelectorAll("table[aria-label=Designs] tbody tr td:first-child")].map(td => td.textContent)`, &ranks)
	mustf(t, strings.Join(ranks, ",") == "1,2,3", "design ranks %v", ranks)
	b.run("open the third design", click("table[aria-label=Designs] tbody tr:nth-child(3)"))
	b.waitJS("the third design is shown", `document.getElementById("viewer").dataset.loaded === "design_3.cif"`)
	// design_3's pLDDT is 65: Mol* paints it in the "low" band's yellow, none of it blue.
	pixels := b.elementPixels("#viewer")
	yellow, blue := countNear(pixels, 60, 0xffdb13), countNear(pixels, 50, 0x65cbf3, 0x0053d6)
	mustf(t, yellow > 300 && blue < yellow/10, "design_3 drawn with %d yellow and %d blue pixels", yellow, blue)
	b.screenshot("design")
	b.expectNoProblems()
}

func TestWebEmbeddingPlotsPooledVectors(t *testing.T) {
	t.Parallel()
	_, b := openPage(t, 390, 844) // a phone's width
	b.run("fill in an embedding", click("#tab-embed"), setValue("#embed-model", "esmc-300m"),
		setValue("#embed-input", ">alpha\nMKTAYIAKQRQISFVK\n>beta\nMVHLTPEEKSAVTALW\n>gamma\nGSGSGSPEPTIDE\n"), click("#main form button[type=submit]"))
	b.submitted()
	b.waitJS("the projection is drawn", `document.querySelectorAll("#pca svg circle").length === 3`)
	var labels []string
	b.eval(`[...document.querySelectorAll("#pca svg g text")].map(t => t.textContent)`, &labels)
	mustf(t, strings.Join(labels, ",") == "alpha,beta,gamma", "plot labels %v", labels)
	var overflow bool
	b.eval(`document.documentElement.scrollWidth > window.innerWidth`, &overflow)
	mustf(t, !overflow, "the page is wider than a phone's screen")
	b.screenshot("embedding-phone")
	b.expectNoProblems()
}

func TestWebSessionsSeeOnlyTheirOwnJobs(t *testing.T) {
	t.Parallel()
	s := startServer(t, withWebEngines(t))
	first, second := openBrowser(t, s, 1000, 800), openBrowser(t, s, 1000, 800)
	first.open("/")
	first.submitPrediction("esmfold2", "MKTAYIAKQRQ", enginetest.Hang)
	id := first.submitted()
	first.open("/#/jobs")
	first.waitJS("the first browser lists its job", `document.querySelectorAll("#main tbody tr").length === 1`)
	second.open("/#/jobs")
	second.waitJS("the second browser lists nothing", `!!document.querySelector("#main .empty")`)
	second.open("/#/job/" + id)
	second.waitJS("the second browser cannot open the job", `document.querySelector("h1")?.textContent === "Job not found"`)
	list := s.get("/v1/jobs").expect(http.StatusOK).json()
	mustf(t, len(list["data"].([]any)) == 0, "a keyless call from the same IP sees the browser's jobs: %v", list["data"])

	// Keyboard alone: Tab from the top of the page to the job's link and open it.
	first.open("/#/jobs")
	first.waitJS("the job is listed", `document.querySelectorAll("#main tbody tr").length === 1`)
	for range 30 {
		var on string
		first.run("press Tab", chromedp.KeyEvent(kb.Tab))
		first.eval(`document.activeElement.textContent`, &on)
		if on == "hang" {
			break
		}
	}
	first.run("press Enter", chromedp.KeyEvent(kb.Enter))
	first.waitJS("the job page opens by keyboard", `location.hash === "#/job/`+id+`"`)

	// An API key pasted into the page shows that key's jobs instead.
	key, _ := s.issueKey("web")
	keyJob := s.predict("by key", "Authorization: Bearer "+key)
	second.open("/#/jobs")
	second.run("paste the key", click("#key-summary"), setValue("#key-input", key), click("#key-form button[type=submit]"))
	second.waitJS("the key's job is listed", `[...document.querySelectorAll("#main tbody a")].some(a => a.getAttribute("href") === "#/job/`+keyJob+`")`)
	first.expectNoProblems()
	second.expectNoProblems(s.URL + "/v1/jobs/" + id) // the job it may not see: a 404
}

// pageCookie loads the page as a browser would and returns the session cookie it is given.
func pageCookie(t *testing.T, s *server, cookies ...*http.Cookie) *http.Cookie {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, s.URL+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cookies {
		req.AddCookie(c)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	mustf(t, res.StatusCode == http.StatusOK && strings.HasPrefix(res.Header.Get("Content-Type"), "text/html"),
		"GET / answered %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	for _, c := range res.Cookies() {
		if c.Name == api.SessionCookie {
			return c
		}
	}
	return nil
}

func TestWebPageIssuesASessionCookie(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		publicURL  string
		wantSecure bool
	}{
		{"over plain HTTP", "", false},
		{"behind TLS", "https://fold.example.org", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := startServer(t, withoutWorker(), func(c *app.Config) { c.PublicURL = tt.publicURL })
			c := pageCookie(t, s)
			mustf(t, c != nil, "the page set no session cookie")
			mustf(t, c.HttpOnly && c.SameSite == http.SameSiteLaxMode && c.Secure == tt.wantSecure && c.MaxAge > 0,
				"cookie attributes: HttpOnly %v SameSite %v Secure %v MaxAge %d", c.HttpOnly, c.SameSite, c.Secure, c.MaxAge)
			mustf(t, pageCookie(t, s, c) == nil, "a browser with a valid session was given another")
		})
	}
}

func TestWebSessionIsNotLentToOtherSites(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	c := pageCookie(t, s)
	cookie := "Cookie: " + c.Name + "=" + c.Value
	id := s.create("/v1/predictions", map[string]any{"sequence": "MKTAYIAKQ", "name": enginetest.Silent}, cookie, "Sec-Fetch-Site: same-origin")
	tests := []struct {
		name    string
		headers []string
		status  int
	}{
		{"a cross-site cancel", []string{cookie, "Sec-Fetch-Site: cross-site"}, http.StatusNotFound},
		{"a cancel from another origin", []string{cookie, "Origin: https://evil.example"}, http.StatusNotFound},
		{"the page's own cancel", []string{cookie, "Sec-Fetch-Site: same-origin"}, http.StatusOK},
	}
	for _, tt := range tests {
		s.post("/v1/jobs/"+id+"/cancel", nil, tt.headers...).expect(tt.status)
	}
	s.get("/v1/jobs/"+id, cookie, "Sec-Fetch-Site: cross-site").expect(http.StatusOK) // reads are safe
}

// listRequests sums the server's count of job-list requests from its metrics.
func listRequests(t *testing.T, s *server) int {
	t.Helper()
	res, err := http.Get(s.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range regexp.MustCompile(`chaperone_http_requests_total\{[^}]*route="GET /v1/jobs"[^}]*\} (\d+)`).FindAllSubmatch(body, -1) {
		v, _ := strconv.Atoi(string(m[1]))
		n += v
	}
	return n
}

func TestWebJobListFollowsWithoutReloading(t *testing.T) {
	t.Parallel()
	s, b := openPage(t, 1280, 900)
	b.submitPrediction("esmfold2", "MKTAYIAKQRQ", enginetest.Hang)
	id := b.submitted()
	b.open("/#/jobs")
	b.waitJS("the list shows the job running", `document.querySelector("#main tbody .pill")?.textContent === "running"`)
	before := listRequests(t, s)

	// Another tab, or a script with the same session, cancels the job: the list's hold on
	// it ends, and the list shows the change without a reload.
	j, err := s.Store.GetJob(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Store.CancelJob(context.Background(), id, j.Owner, time.Now()); err != nil {
		t.Fatal(err)
	}
	b.waitJS("the list shows the job canceled", `document.querySelector("#main tbody .pill")?.textContent === "canceled"`)
	after := listRequests(t, s)
	mustf(t, after-before <= 2, "the list was read %d times for one change: a polling loop", after-before)
	b.expectNoProblems()
}
