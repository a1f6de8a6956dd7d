package e2e

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chaperone-bio/chaperone/align/aligntest"
	"github.com/chaperone-bio/chaperone/app"
	"github.com/chaperone-bio/chaperone/catalog"
	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/enginetest"
)

// childDataEnv, when set, makes the test binary a chaperone server on that data folder
// instead of running tests, so a test can kill a real server process with SIGKILL.
const childDataEnv = "CHAPERONE_E2E_CHILD_DATA"

// childMSAEnv gives a server process the stand-in ColabFold server it searches on: one
// of the test process (childColabFold), the same across the restarts of every test, so
// that alignments searched before a kill are found after it.
const childMSAEnv = "CHAPERONE_E2E_CHILD_MSA"

var childColabFold = sync.OnceValue(func() *aligntest.ColabFold { return aligntest.NewColabFold(0) })

func TestMain(m *testing.M) {
	if dir := os.Getenv(childDataEnv); dir != "" {
		serveChild(dir)
		return
	}
	code := m.Run()
	removeCLIBinary()
	removeStandIn()
	removeProtenixStandIns()
	removeDesignStandIns()
	if code == 0 && flag.Lookup("test.run").Value.String() == "" {
		code = reportUncovered()
	}
	os.Exit(code)
}

// reportUncovered fails a full run that left a documented response unexercised: every
// status the OpenAPI document promises must have been seen, and matched, at least once.
// The 500s of endpoints other than the one TestInternalErrorsLeakNothingButARequestID
// provokes are exempt: they share one code path.
func reportUncovered() int {
	if checker == nil {
		return 0
	}
	var missing []string
	for _, r := range checker.Uncovered() {
		if !strings.HasSuffix(r, " 500") {
			missing = append(missing, r)
		}
	}
	if len(missing) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: documented responses no test exercised:\n  %s\n", strings.Join(missing, "\n  "))
		return 1
	}
	return 0
}

// serveChild runs a one-slot server with the test engine and prints its URL. Its quotas
// are lifted: the chaos suite creates more jobs a minute than an owner may.
func serveChild(dir string) {
	limits := catalog.DefaultLimits()
	limits.ActiveJobsPerOwner, limits.CreatesPerMinute = 10000, 10000
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	stores, err := app.OpenStores(ctx, dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer stores.Close()
	a, err := app.Start(ctx, app.Config{
		MSAServerURL: os.Getenv(childMSAEnv),
		Store:        stores.Jobs,
		Artifacts:    stores.Artifacts,
		Addr:         "127.0.0.1:0",
		DataDir:      dir,
		Version:      "child",
		Logger:       slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Limits:       limits,
		Engines:      []engine.Engine{enginetest.New(testModels...)},
		Slots:        1,
		WorkerID:     "crash-worker",
		Heartbeat:    100 * time.Millisecond,
		ReapEvery:    200 * time.Millisecond,
		LeaseTTL:     2 * time.Second,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(a.URL)
	<-ctx.Done()
	a.Close()
}

// child is a server process.
type child struct {
	cmd *exec.Cmd
	url string
}

func startChild(t *testing.T, dir string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childDataEnv+"="+dir, childMSAEnv+"="+childColabFold().URL)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the server process printed no URL: %v", err)
	}
	go io.Copy(io.Discard, out)
	return &child{cmd: cmd, url: strings.TrimSpace(line)}
}

func (c *child) kill(t *testing.T) {
	t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	c.cmd.Wait()
}

// client talks to a child as the e2e helpers talk to an in-process server.
func (c *child) client(t *testing.T) *server {
	return &server{App: &app.App{URL: c.url}, t: t}
}

func TestSIGKILLedServerLosesNoJobAndLeavesNoneRunning(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first := startChild(t, dir)
	s := first.client(t)
	interrupted := s.predict("slow:30")
	queued := s.predict("ok")
	s.waitStatus(interrupted, "running")
	first.kill(t)

	second := startChild(t, dir)
	s = second.client(t)
	j := s.waitStatus(interrupted, "succeeded")
	mustf(t, j["results_ready"] == true, "the recovered job has no results: %v", j)
	s.waitStatus(queued, "succeeded")
	// The first attempt's log says that it was lost and why, before the second begins.
	s.everyAttemptEnds(interrupted, "attempt 1 lost: the worker running it started again", "job succeeded in")

	// A job whose worker dies twice fails, saying so; its tool does not outlive the server.
	doomed := s.predict("hang")
	s.waitStatus(doomed, "running")
	pid := waitForPIDFile(t, dir, doomed)
	second.kill(t)
	third := startChild(t, dir)
	waitProcessGone(t, pid, 5*time.Second)
	s = third.client(t)
	s.waitFor(doomed, 20*time.Second, func(j map[string]any) bool {
		return j["status"] == "running" && strings.Contains(string(s.get("/v1/jobs/"+doomed+"/logs").Body), "attempt 2")
	})
	third.kill(t)
	fourth := startChild(t, dir)
	s = fourth.client(t)
	j = s.waitStatus(doomed, "failed")
	mustf(t, strings.Contains(j["error"].(string), "lost"), "error of a job lost twice: %q", j["error"])
	s.everyAttemptEnds(doomed, "attempt 1 lost: the worker running it started again, and what it ran before died with it; the job goes back to the queue",
		"attempt 2 lost: the worker running it started again, and what it ran before died with it; that was its last attempt: the job failed")

	// Nothing is left running, and finished work survived every restart.
	list := s.get("/v1/jobs?limit=100").expect(http.StatusOK).json()
	for _, x := range list["data"].([]any) {
		mustf(t, x.(map[string]any)["status"] != "running", "job %v stuck in running", x.(map[string]any)["id"])
	}
	s.get("/v1/jobs/" + interrupted + "/artifacts/t1.cif").expect(http.StatusOK)
}
