package e2e

import (
	"strings"
	"testing"
)

// tablesFit is the check, in the page, that every table fits its card: the card stays
// inside the window, and a table wider than its card scrolls inside it (its wrapper
// scrolls) instead of pushing the card out or clipping columns. It returns what does not
// fit, empty when everything does.
const tablesFit = `(() => {
  const bad = [];
  if (document.documentElement.scrollWidth > window.innerWidth) bad.push("the page is " + document.documentElement.scrollWidth + " px wide in a window of " + window.innerWidth);
  for (const t of document.querySelectorAll("main table")) {
    const card = t.closest(".card"), wrap = t.parentElement, name = t.getAttribute("aria-label");
    const c = card.getBoundingClientRect(), w = wrap.getBoundingClientRect();
    if (c.right > window.innerWidth + 0.5) bad.push(name + ": its card ends at " + c.right + " px");
    if (w.right > c.right + 0.5) bad.push(name + ": it ends at " + w.right + " px, past its card at " + c.right);
    const scrolls = ["auto", "scroll"].includes(getComputedStyle(wrap).overflowX);
    if (wrap.scrollWidth > wrap.clientWidth + 0.5 && !scrolls) bad.push(name + ": wider than its card and clipped");
  }
  return bad.join("; ");
})()`

// TestWebFitsAPhone: at a phone's width (390 px) every table fits its card: the list of
// jobs shows each by its name or a short id and a short creation time, without scrolling;
// the targets table, wider than any phone, scrolls inside its card.
func TestWebFitsAPhone(t *testing.T) {
	t.Parallel()
	_, b := openPage(t, 390, 844)
	b.run("submit a prediction without a name", setValue("#predict-model", "boltz2"),
		setValue("#predict-input", ">A|protein\nMKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQ\n"), click("#main form button[type=submit]"))
	id := b.submitted()
	b.waitJS("the job succeeds", `document.querySelector(".card .pill")?.textContent === "succeeded"`)
	b.waitJS("the targets are listed", `!!document.querySelector("table[aria-label='Prediction rows'] tbody tr")`)
	var bad string
	b.eval(tablesFit, &bad)
	mustf(t, bad == "", "at 390 px, the job's page: %s", bad)
	var scrolls bool
	b.eval(`(w => w.scrollWidth > w.clientWidth)(document.querySelector("table[aria-label='Prediction rows']").parentElement)`, &scrolls)
	mustf(t, scrolls, "the targets table does not scroll inside its card: every column fits at 390 px?")
	b.screenshot("phone-prediction")

	b.open("/")
	b.submitPrediction("boltz2", "MKTAYIAKQR", "a name long enough to need more than one line on a phone")
	b.submitted()
	b.open("/#/jobs")
	b.waitJS("both jobs are listed", `document.querySelectorAll("table[aria-label='Your jobs'] tbody tr").length === 2`)
	b.eval(tablesFit, &bad)
	mustf(t, bad == "", "at 390 px, the list of jobs: %s", bad)
	var fits bool
	b.eval(`(w => w.scrollWidth <= w.clientWidth)(document.querySelector("table[aria-label='Your jobs']").parentElement)`, &fits)
	mustf(t, fits, "the list of jobs needs scrolling at 390 px")
	var unnamed string
	b.eval(`[...document.querySelectorAll("table[aria-label='Your jobs'] tbody tr")].map(r => r.querySelector("a").textContent).find(s => !s.startsWith("a name"))`, &unnamed)
	mustf(t, unnamed == "Structure prediction "+id[:8], "a job without a name is listed as %q, want its kind and short id", unnamed)
	var created string
	b.eval(`document.querySelector("table[aria-label='Your jobs'] tbody tr").cells[2].textContent`, &created)
	mustf(t, len(created) <= 12 && !strings.Contains(created, "/"), "the creation time reads %q, want a short one", created)
	b.screenshot("phone-jobs")
	b.expectNoProblems()
}
