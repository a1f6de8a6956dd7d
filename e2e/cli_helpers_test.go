package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The chaperone binary, built once for every CLI test of the run (TestMain removes it).
var (
	cliBuild    sync.Once
	cliBinDir   string
	cliBin      string
	cliBuildErr error
)

// chaperoneBinary returns the CLI binary, building it on the first call; concurrent
// callers wait for that build.
func chaperoneBinary(t *testing.T) string {
	t.Helper()
	cliBuild.Do(func() {
		if cliBinDir, cliBuildErr = os.MkdirTemp("", "chaperone-cli-"); cliBuildErr != nil {
			return
		}
		cliBin = filepath.Join(cliBinDir, "chaperone")
		// go test puts its own toolchain first on PATH.
		out, err := exec.Command("go", "build", "-o", cliBin, "github.com/chaperone-bio/chaperone/cmd/chaperone").CombinedOutput()
		if err != nil {
			cliBuildErr = fmt.Errorf("%v\n%s", err, out)
		}
	})
	if cliBuildErr != nil {
		t.Fatalf("building the chaperone binary: %v", cliBuildErr)
	}
	return cliBin
}

// removeCLIBinary is called by TestMain once every test is done.
func removeCLIBinary() {
	if cliBinDir != "" {
		os.RemoveAll(cliBinDir)
	}
}

// proxied is a server under test behind a reverse proxy that the CLI talks to. The proxy
// checks every answer against the OpenAPI document, as the e2e client does, records the
// requests, and can cut a download short to test resuming.
type proxied struct {
	*server
	URL string
	// bin is the CLI, built before the server starts: a test's jobs must not run while
	// the binary that watches them is still being built.
	bin string

	mu   sync.Mutex
	seen []seenRequest
	// cut, when set, decides per request after how many body bytes the answer breaks
	// off (-1: it does not).
	cut func(r *http.Request) int
}

type seenRequest struct {
	Method, Path, Range, IfRange, IdempotencyKey string
	Status                                       int
	RetryAfter                                   string // of the answer
	At                                           time.Time
}

func startProxied(t *testing.T, opts ...option) *proxied {
	t.Helper()
	bin := chaperoneBinary(t)
	s := startServer(t, opts...)
	target, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	p := &proxied{server: s, bin: bin}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ErrorLog = log.New(io.Discard, "", 0) // the cuts are deliberate
	rp.ModifyResponse = func(res *http.Response) error {
		req := res.Request
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			return err
		}
		if err := contractChecker(t).Check(req.Method, req.URL.Path, res.StatusCode, res.Header, body); err != nil {
			t.Errorf("CLI: %s %s → %d does not match the OpenAPI document: %v", req.Method, req.URL.Path, res.StatusCode, err)
		}
		p.mu.Lock()
		p.seen = append(p.seen, seenRequest{req.Method, req.URL.Path, req.Header.Get("Range"), req.Header.Get("If-Range"),
			req.Header.Get("Idempotency-Key"), res.StatusCode, res.Header.Get("Retry-After"), time.Now()})
		cut := p.cut
		p.mu.Unlock()
		res.Body = io.NopCloser(bytes.NewReader(body))
		if cut != nil {
			if n := cut(req); n >= 0 && n < len(body) {
				// The proxy aborts the answer when its body fails mid-copy.
				res.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body[:n]), errReader{errors.New("cut by the test")}))
			}
		}
		return nil
	}
	ps := httptest.NewServer(rp)
	t.Cleanup(ps.Close)
	p.URL = ps.URL
	return p
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

func (p *proxied) requests() []seenRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]seenRequest(nil), p.seen...)
}

func (p *proxied) setCut(f func(r *http.Request) int) {
	p.mu.Lock()
	p.cut = f
	p.mu.Unlock()
}

// cliRun is one finished run of the CLI.
type cliRun struct {
	code           int
	stdout, stderr string
}

// runCLI runs the chaperone binary against the proxy, in dir (a temp folder when empty),
// with quick retries; env entries override.
func (p *proxied) runCLI(t *testing.T, dir string, env []string, args ...string) cliRun {
	t.Helper()
	cmd := p.command(t, dir, env, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("running chaperone %v: %v", args, err)
	}
	return cliRun{code: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String()}
}

func (p *proxied) command(t *testing.T, dir string, env []string, args ...string) *exec.Cmd {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, p.bin, args...)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CHAPERONE_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "CHAPERONE_URL="+p.URL, "CHAPERONE_RETRY_DELAY=10ms")
	cmd.Env = append(cmd.Env, env...)
	return cmd
}

// expect fails the test unless the run exited with code.
func (r cliRun) expect(t *testing.T, code int) cliRun {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit code %d, want %d\nstdout: %s\nstderr: %s", r.code, code, r.stdout, r.stderr)
	}
	return r
}

// controlFree reports whether s has no control characters but newlines and tabs.
func controlFree(s string) bool {
	return !strings.ContainsFunc(s, func(r rune) bool { return (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f })
}

// openPTY opens a pseudo-terminal pair of the given width: the program writes to the
// second file (its terminal), the test reads the first.
func openPTY(t *testing.T, cols uint16) (master, tty *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("opening /dev/ptmx: %v", err)
	}
	fd := int(m.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil { // unlockpt
		t.Fatalf("unlocking the pty: %v", err)
	}
	n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN) // ptsname
	if err != nil {
		t.Fatalf("naming the pty: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("opening the pty's terminal: %v", err)
	}
	if err := unix.IoctlSetWinsize(int(s.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: cols}); err != nil {
		t.Fatalf("sizing the pty: %v", err)
	}
	t.Cleanup(func() { m.Close(); s.Close() })
	return m, s
}
