package e2e

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/chaperone-bio/chaperone/app"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/boltz"
	"github.com/chaperone-bio/chaperone/engine/enginetest"
)

// The web app's tests drive Debian's chromium over the DevTools protocol (chromedp)
// against a real server. Without chromium they skip, unless CHAPERONE_REQUIRE_BROWSER is
// set (CI sets it, so there they fail instead). Screenshots go to CHAPERONE_SCREENSHOTS
// when it names a folder.

// webAssets is where the tests keep the Mol* tarball: one fetch from the npm registry per
// machine, not one per test server.
func webAssets() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	return filepath.Join(dir, "chaperone-e2e", "web")
}

// withWebEngines serves boltz2 on the boltz engine and its stand-in (structures and PAE
// files), esmfold2 on the shell test engine (for jobs that hang until canceled), and a
// design and an embedding model on pictureEngine.
func withWebEngines(t *testing.T) option {
	path := boltzStandIn(t)
	assets := webAssets()
	return func(c *app.Config) {
		c.Engines = []engine.Engine{boltz.New(boltz.Config{}),
			enginetest.New("esmfold2"), pictureEngine{models: []string{"boltzgen", "esmc-300m"}}}
		c.Tools = engine.Tools{"boltz": path}
		c.WebAssets = assets
	}
}

func chromiumPath(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CHAPERONE_REQUIRE_BROWSER") != "" {
		t.Fatal("no chromium on PATH, and CHAPERONE_REQUIRE_BROWSER is set")
	}
	t.Skip("no chromium on PATH (apt-get install chromium)")
	return ""
}

// browser is one chromium with its own cookie jar, on one tab.
type browser struct {
	t    *testing.T
	ctx  context.Context
	base string

	mu       sync.Mutex
	problems []string // console errors, uncaught exceptions, failed loads
}

// openBrowser starts a chromium for the test; width and height set its window (a phone's
// width shows the narrow layout).
func openBrowser(t *testing.T, s *server, width, height int) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.NoSandbox,
		chromedp.WindowSize(width, height),
		// WebGL without a GPU, for Mol*.
		chromedp.Flag("use-angle", "swiftshader"),
		chromedp.Flag("enable-unsafe-swiftshader", true),
		chromedp.Flag("ignore-gpu-blocklist", true),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(allocCtx)
	b := &browser{t: t, ctx: ctx, base: s.URL}
	chromedp.ListenTarget(ctx, func(ev any) {
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.APITypeError {
				var parts []string
				for _, a := range ev.Args {
					parts = append(parts, string(a.Value)+a.Description)
				}
				b.problem("console.error: " + strings.Join(parts, " "))
			}
		case *runtime.EventExceptionThrown:
			b.problem("exception: " + ev.ExceptionDetails.Error())
		case *log.EventEntryAdded:
			if ev.Entry.Level == log.LevelError {
				b.problem(fmt.Sprintf("log: %s %s", ev.Entry.Text, ev.Entry.URL))
			}
		}
	})
	if err := chromedp.Run(ctx, log.Enable()); err != nil {
		cancelCtx()
		cancelAlloc()
		t.Fatalf("starting chromium: %v", err)
	}
	t.Cleanup(func() {
		cancelCtx()
		cancelAlloc()
	})
	return b
}

func (b *browser) problem(p string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.problems = append(b.problems, p)
}

// expectNoProblems fails the test for any console error, exception or failed load so far
// but for failed loads of the expected URLs.
func (b *browser) expectNoProblems(expected ...string) {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.problems {
		if !slices.ContainsFunc(expected, func(url string) bool { return strings.HasPrefix(p, "log: ") && strings.HasSuffix(p, " "+url) }) {
			b.t.Errorf("the page reported: %s", p)
		}
	}
}

// run runs actions with a deadline, failing the test with what was being done.
func (b *browser) run(what string, actions ...chromedp.Action) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Run(ctx, actions...); err != nil {
		b.screenshot("failure-" + strings.ReplaceAll(what, " ", "-"))
		b.mu.Lock()
		defer b.mu.Unlock()
		b.t.Fatalf("%s: %v\nthe page reported: %q", what, err, b.problems)
	}
}

func (b *browser) open(path string) {
	b.t.Helper()
	b.run("open "+path, chromedp.Navigate(b.base+path), chromedp.WaitVisible("main .card", chromedp.ByQuery))
}

// text returns the text of the first element matching sel, once it is visible.
func (b *browser) text(sel string) string {
	b.t.Helper()
	var s string
	b.run("read "+sel, chromedp.WaitVisible(sel, chromedp.ByQuery), chromedp.Text(sel, &s, chromedp.ByQuery))
	return s
}

// eval evaluates a JavaScript expression into out.
func (b *browser) eval(expr string, out any) {
	b.t.Helper()
	b.run("evaluate "+expr, chromedp.Evaluate(expr, out))
}

// waitJS waits until a JavaScript expression is true, polling in the browser.
func (b *browser) waitJS(what, expr string) {
	b.t.Helper()
	b.run("wait until "+what, chromedp.Poll(expr, nil, chromedp.WithPollingTimeout(50*time.Second)))
}

// screenshot keeps a full-page PNG when CHAPERONE_SCREENSHOTS names a folder.
func (b *browser) screenshot(name string) {
	dir := os.Getenv("CHAPERONE_SCREENSHOTS")
	if dir == "" {
		return
	}
	var png []byte
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Run(ctx, chromedp.FullScreenshot(&png, 100)); err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return
	}
	if err := os.MkdirAll(dir, 0o755); err == nil {
		_ = os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644)
	}
}

// elementPixels returns a screenshot of the element matching sel, decoded.
func (b *browser) elementPixels(sel string) image.Image {
	b.t.Helper()
	var buf []byte
	b.run("capture "+sel, chromedp.Screenshot(sel, &buf, chromedp.ByQuery))
	if dir := os.Getenv("CHAPERONE_SCREENSHOTS"); dir != "" {
		_ = os.WriteFile(filepath.Join(dir, "element-"+strings.Trim(sel, "#.")+".png"), buf, 0o644)
	}
	img, err := png.Decode(bytes.NewReader(buf))
	if err != nil {
		b.t.Fatalf("decoding the screenshot of %s: %v", sel, err)
	}
	return img
}

// countNear counts the pixels within tolerance of any of the colours (0xRRGGBB).
func countNear(img image.Image, tolerance int, colours ...uint32) int {
	return countPixels(img, func(r, g, b int) bool {
		for _, c := range colours {
			if within(r, int(c>>16&0xff), tolerance) && within(g, int(c>>8&0xff), tolerance) && within(b, int(c&0xff), tolerance) {
				return true
			}
		}
		return false
	})
}

// countDrawn counts the coloured pixels of a Mol* canvas, leaving out the corners where
// Mol* draws its axes (bottom left) and its buttons (right).
func countDrawn(img image.Image) int {
	b := img.Bounds()
	inner := image.Rect(b.Min.X+100, b.Min.Y, b.Max.X-70, b.Max.Y)
	return countPixels(img.(interface {
		SubImage(image.Rectangle) image.Image
	}).SubImage(inner), func(r, g, b int) bool { return max(r, g, b)-min(r, g, b) > 40 })
}

func countPixels(img image.Image, match func(r, g, b int) bool) int {
	n := 0
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			if match(int(r>>8), int(g>>8), int(b>>8)) {
				n++
			}
		}
	}
	return n
}

// within reports whether two colour channels differ by at most tolerance.
func within(a, b, tolerance int) bool { return a-b <= tolerance && b-a <= tolerance }

// click clicks the first element matching sel.
func click(sel string) chromedp.Action {
	return chromedp.Click(sel, chromedp.ByQuery, chromedp.NodeVisible)
}

// setValue sets a form control's value; the page reads values when the form is sent.
func setValue(sel, value string) chromedp.Action {
	return chromedp.SetValue(sel, value, chromedp.ByQuery)
}
