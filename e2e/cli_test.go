package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The CLI tests run the chaperone binary as a user would, against a real server, through
// a proxy that checks every answer against the OpenAPI document.

func TestCLIPredictWaitsAndSavesEverything(t *testing.T) {
	t.Parallel()
	p := startProxied(t)
	out := filepath.Join(t.TempDir(), "run")
	r := p.runCLI(t, "", nil, "predict", "--sequence", "MKTAYIAKQRQISFVKSHFSRQ", "--name", "slow:5",
		"--param", "diffusion_samples=2", "--param", "use_msa_server=false", "--param", "output_format=pdb",
		"--wait", "--out", out).expect(t, exitOK)
	mustf(t, strings.Contains(r.stdout, "succeeded") && strings.Contains(r.stdout, "boltz2"), "stdout: %s", r.stdout)
	// Not a terminal: plain progress lines, no control characters.
	mustf(t, controlFree(r.stderr) && strings.Count(r.stderr, "job ") >= 2 && strings.Contains(r.stderr, "succeeded"),
		"stderr without a terminal: %q", r.stderr)

	id := strings.Fields(strings.SplitN(r.stdout, "\n", 2)[0])[1]
	for _, name := range []string{"results.json", "run.log", "t1.cif", "t1/confidence.json"} {
		got, err := os.ReadFile(filepath.Join(out, filepath.FromSlash(name)))
		mustf(t, err == nil, "--out lacks %s: %v", name, err)
		if name == "t1.cif" || name == "t1/confidence.json" {
			want := p.get("/v1/jobs/" + id + "/artifacts/" + name).expect(http.StatusOK).Body
			mustf(t, bytes.Equal(got, want), "%s differs from the server's", name)
		}
	}
	var manifest map[string]any
	b, _ := os.ReadFile(filepath.Join(out, "results.json"))
	mustf(t, json.Unmarshal(b, &manifest) == nil && manifest["ready"] == true && manifest["job_id"] == id, "results.json: %s", b)
	entries, _ := os.ReadDir(out)
	for _, e := range entries {
		mustf(t, !strings.HasPrefix(e.Name(), "."), "--out keeps %s", e.Name())
	}

	// --param values are JSON when they parse, strings otherwise.
	j := jsonOf(t, p.runCLI(t, "", nil, "jobs", "get", id, "--json").expect(t, exitOK).stdout)
	params := j["params"].(map[string]any)
	mustf(t, params["diffusion_samples"] == 2.0 && params["use_msa_server"] == false && params["output_format"] == "pdb", "params %v", params)
}

func TestCLIPredictInputsByFile(t *testing.T) {
	t.Parallel()
	p := startProxied(t)
	dir := t.TempDir()
	files := map[string]string{
		"a.fasta": ">A\nMKTAYIAKQ\n",
		"b.yaml":  "sequences:\n  - protein:\n      id: A\n      sequence: GSGSGSGS\n",
		"one.txt": "version: 1\nsequences:\n  - protein:\n      id: A\n      sequence: MKTAYIAKQ\n", // YAML by content, whatever its name
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := p.runCLI(t, dir, nil, "predict", "--target", "a.fasta", "--target", "b.yaml", "--name", "ok", "--wait", "--json").expect(t, exitOK)
	j := jsonOf(t, r.stdout)
	mustf(t, j["status"] == "succeeded" && j["total"] == 2.0, "a two-target job: %v", j)
	res := jsonOf(t, p.runCLI(t, dir, nil, "jobs", "results", j["id"].(string), "--json").expect(t, exitOK).stdout)
	mustf(t, len(res["rows"].([]any)) == 2, "rows %v", res["rows"])

	r = p.runCLI(t, dir, nil, "predict", "--input", "one.txt", "--name", "ok", "--json").expect(t, exitOK)
	mustf(t, jsonOf(t, r.stdout)["kind"] == "predict", "predict --input: %s", r.stdout)
	p.runCLI(t, dir, nil, "predict", "--input", "missing.fasta").expect(t, exitUsage)
}

func TestCLIDesignAndEmbed(t *testing.T) {
	t.Parallel()
	p := startProxied(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "spec.yaml"), []byte("entities:\n  - protein:\n      id: B\n      sequence: 80..140\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "seqs.fasta"), []byte(">p1\nMKTAYIAKQ\n>p2\nGSGSGS\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "target.pdb"), []byte("ATOM      1  N   MET A   1      11.104  13.207   2.100  1.00  0.00           N\n"), 0o644)

	r := p.runCLI(t, dir, nil, "design", "--protocol", "protein-anything", "--spec", "spec.yaml",
		"--param", "num_designs=2", "--param", "budget=2", "--name", "ok", "--wait").expect(t, exitOK)
	mustf(t, strings.Contains(r.stdout, "design") && strings.Contains(r.stdout, "succeeded"), "design: %s", r.stdout)
	id := strings.Fields(strings.SplitN(r.stdout, "\n", 2)[0])[1]
	r = p.runCLI(t, dir, nil, "jobs", "results", id).expect(t, exitOK)
	mustf(t, strings.Contains(r.stdout, "RANK") && strings.Contains(r.stdout, "GSGSGS"), "design results: %s", r.stdout)

	// No test worker runs rfd3: 503, whose 300 s Retry-After the CLI does not wait out.
	r = p.runCLI(t, dir, nil, "design", "--protocol", "rfd3-binder", "--structure", "target.pdb", "--contig", "A1-1,40-60").expect(t, exitUnavailable)
	mustf(t, strings.Contains(r.stderr, "rfd3"), "503 detail: %s", r.stderr)

	out := filepath.Join(dir, "emb")
	r = p.runCLI(t, dir, nil, "embed", "--model", "esmc-300m", "--input", "seqs.fasta", "--pool", "max", "--format", "npz",
		"--name", "ok", "--out", out, "--json").expect(t, exitOK)
	j := jsonOf(t, r.stdout)
	params := j["params"].(map[string]any)
	mustf(t, j["kind"] == "embed" && params["pool"] == "max" && params["format"] == "npz", "embed job %v", j)
	_, err := os.Stat(filepath.Join(out, "results.json"))
	mustf(t, err == nil, "embed --out: %v", err)
	r = p.runCLI(t, dir, nil, "jobs", "results", j["id"].(string)).expect(t, exitOK)
	mustf(t, strings.Contains(r.stdout, "p2") && strings.Contains(r.stdout, "model esmc-300m"), "embedding results: %s", r.stdout)

	r = p.runCLI(t, dir, nil, "embed", "--sequence", "MKTAYIAKQ", "--model", "esmc-300m").expect(t, exitOK)
	mustf(t, strings.HasPrefix(r.stdout, "id ") && strings.Contains(r.stdout, "embed"), "embed without --wait: %s", r.stdout)
}

func TestCLIJobsCommands(t *testing.T) {
	t.Parallel()
	p := startProxied(t)
	ok := p.predict("ok")
	slow := p.predict("slow:15") // long enough for logs --follow to read twice
	running := p.predict("silent")
	p.waitStatus(ok, "succeeded")

	r := p.runCLI(t, "", nil, "jobs", "list").expect(t, exitOK)
	for _, id := range []string{ok, slow, running} {
		mustf(t, strings.Contains(r.stdout, id), "jobs list lacks %s: %s", id, r.stdout)
	}
	r = p.runCLI(t, "", nil, "jobs", "list", "--limit", "1", "--json").expect(t, exitOK)
	page := jsonOf(t, r.stdout)
	mustf(t, len(page["data"].([]any)) == 1 && page["has_more"] == true, "one page: %s", r.stdout)
	r = p.runCLI(t, "", nil, "jobs", "list", "--limit", "1").expect(t, exitOK)
	mustf(t, strings.Contains(r.stderr, "--cursor "+page["next_cursor"].(string)), "a page that is not the last says how to get the next: %q", r.stderr)
	r = p.runCLI(t, "", nil, "jobs", "list", "--limit", "1", "--cursor", page["next_cursor"].(string), "--json").expect(t, exitOK)
	mustf(t, jsonOf(t, r.stdout)["data"].([]any)[0].(map[string]any)["id"] == slow, "second page: %s", r.stdout)
	r = p.runCLI(t, "", nil, "jobs", "list", "--all", "--json").expect(t, exitOK)
	mustf(t, len(jsonOf(t, r.stdout)["data"].([]any)) == 3, "--all: %s", r.stdout)

	r = p.runCLI(t, "", nil, "jobs", "get", ok).expect(t, exitOK)
	mustf(t, strings.Contains(r.stdout, "succeeded") && strings.Contains(r.stdout, "100% (1/1)"), "jobs get: %s", r.stdout)

	r = p.runCLI(t, "", nil, "jobs", "logs", slow, "--follow").expect(t, exitOK)
	var steps []string
	for line := range strings.Lines(r.stdout) {
		if strings.HasPrefix(line, "step ") {
			steps = append(steps, strings.TrimSpace(line))
		}
	}
	var want []string
	for i := 1; i <= 15; i++ {
		want = append(want, fmt.Sprintf("step %d/15", i))
	}
	mustf(t, slices.Equal(steps, want) &&
		strings.Contains(r.stdout, "job succeeded"), "logs --follow printed %q", r.stdout)
	mustf(t, slices.ContainsFunc(p.requests(), func(s seenRequest) bool {
		return strings.HasSuffix(s.Path, "/logs") && s.Range != "" && (s.Status == http.StatusPartialContent || s.Status == http.StatusRequestedRangeNotSatisfiable)
	}), "logs --follow never read from an offset: %v", p.requests())
	r = p.runCLI(t, "", nil, "jobs", "logs", ok).expect(t, exitOK)
	mustf(t, strings.Contains(r.stdout, "wrote 1 outputs"), "jobs logs: %s", r.stdout)

	r = p.runCLI(t, "", nil, "jobs", "results", ok).expect(t, exitOK)
	mustf(t, strings.Contains(r.stdout, "TARGET") && strings.Contains(r.stdout, "t1.cif") && strings.Contains(r.stdout, "structure"), "jobs results: %s", r.stdout)
	r = p.runCLI(t, "", nil, "jobs", "results", running).expect(t, exitOK)
	mustf(t, strings.Contains(r.stdout, "not ready"), "results of a running job: %s", r.stdout)

	r = p.runCLI(t, "", nil, "jobs", "cancel", running).expect(t, exitOK)
	mustf(t, strings.Contains(r.stdout, "canceled "+running), "jobs cancel: %s", r.stdout)
	p.runCLI(t, "", nil, "jobs", "wait", running).expect(t, exitJobFailed)
	p.runCLI(t, "", nil, "jobs", "logs", running, "--follow").expect(t, exitJobFailed)
	p.runCLI(t, "", nil, "jobs", "cancel", ok).expect(t, exitUsage) // 409: it succeeded

	dir := t.TempDir()
	p.runCLI(t, dir, nil, "jobs", "download", ok).expect(t, exitOK)
	_, err := os.Stat(filepath.Join(dir, ok, "t1.cif"))
	mustf(t, err == nil, "download into ./<id>: %v", err)
	p.runCLI(t, dir, nil, "jobs", "download", ok, "--zip", "--out", "z").expect(t, exitOK)
	zipped, _ := os.ReadFile(filepath.Join(dir, "z", ok+".zip"))
	mustf(t, bytes.Equal(zipped, p.get("/v1/jobs/"+ok+"/archive").Body), "--zip differs from the archive")
	r = p.runCLI(t, dir, nil, "jobs", "download", ok, "--artifact", "t1/confidence.json", "--out", "one").expect(t, exitOK)
	mustf(t, r.stderr == "saved 1 file in one\n", "one artifact saved: %q", r.stderr)
	entries, _ := os.ReadDir(filepath.Join(dir, "one"))
	mustf(t, len(entries) == 1 && entries[0].Name() == "t1", "--artifact saved %v", entries)
	p.runCLI(t, dir, nil, "jobs", "download", running).expect(t, exitJobFailed)

	r = p.runCLI(t, "", nil, "jobs", "wait", slow, "--json").expect(t, exitOK)
	mustf(t, jsonOf(t, r.stdout)["status"] == "succeeded" && r.stderr == "", "jobs wait --json: %s / %q", r.stdout, r.stderr)

	r = p.runCLI(t, "", nil, "jobs", "delete", ok).expect(t, exitOK)
	mustf(t, strings.Contains(r.stdout, "deleted "+ok), "jobs delete: %s", r.stdout)
	p.runCLI(t, "", nil, "jobs", "get", ok).expect(t, exitNotFound)

	r = p.runCLI(t, "", nil, "models").expect(t, exitOK)
	mustf(t, strings.Contains(r.stdout, "boltz2") && strings.Contains(r.stdout, "rfd3-binder"), "models: %s", r.stdout)
}

// TestCLIExitCodes: one case per code a script can branch on.
func TestCLIExitCodes(t *testing.T) {
	t.Parallel()
	p := startProxied(t, withLimits(func(l *limitsT) { l.ActiveJobsPerOwner = 1 }))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()

	// An ok job first, so the quota's Retry-After learns that jobs end in a second.
	p.runCLI(t, "", nil, "predict", "--sequence", "MKTAYIAKQ", "--name", "ok", "--wait").expect(t, exitOK)
	r := p.runCLI(t, "", nil, "predict", "--sequence", "MKTAYIAKQ", "--name", "fail", "--wait").expect(t, exitJobFailed)
	mustf(t, strings.Contains(r.stderr, "CUDA out of memory"), "a failed job's error: %s", r.stderr)

	tests := []struct {
		name string
		env  []string
		args []string
		code int
		says string
	}{
		{"usage: no command", nil, []string{"jobs"}, exitUsage, "want list"},
		{"usage: no input", nil, []string{"predict", "--model", "boltz2"}, exitUsage, "--sequence"},
		{"usage: two inputs", nil, []string{"embed", "--sequence", "MK", "--input", "x.fasta"}, exitUsage, "--input"},
		{"usage: bad param", nil, []string{"predict", "--sequence", "MK", "--param", "fast"}, exitUsage, "KEY=VALUE"},
		{"usage: no id", nil, []string{"jobs", "get"}, exitUsage, "jobs get needs the id of a job"},
		{"input rejected: 400", nil, []string{"predict", "--sequence", "MKT1AY"}, exitUsage, "sequence"},
		{"input rejected: unknown param", nil, []string{"predict", "--sequence", "MKT", "--param", "recycle_steps=3"}, exitUsage, "recycle_steps"},
		{"authentication: 401", nil, []string{"jobs", "list", "--api-key", "chp_live_00000000000000000000000000000000"}, exitAuth, "401"},
		{"authentication from the environment", []string{"CHAPERONE_API_KEY=chp_live_bad"}, []string{"models"}, exitOK, ""},
		{"not found: 404", nil, []string{"jobs", "get", "0123456789abcdef0123456789abcdef"}, exitNotFound, "404"},
		{"unreachable", []string{"CHAPERONE_RETRIES=1"}, []string{"jobs", "list", "--server", closed}, exitUnavailable, "connection refused"},
		{"unreachable from the environment", []string{"CHAPERONE_URL=" + closed, "CHAPERONE_RETRIES=0"}, []string{"jobs", "get", "0123456789abcdef0123456789abcdef"}, exitUnavailable, "connection refused"},
		{"unavailable: 503", nil, []string{"predict", "--model", "openfold3", "--sequence", "MKT"}, exitUnavailable, "openfold3"},
		{"json problem", nil, []string{"jobs", "get", "0123456789abcdef0123456789abcdef", "--json"}, exitNotFound, `"status":404`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := p.runCLI(t, "", tt.env, tt.args...).expect(t, tt.code)
			mustf(t, strings.Contains(r.stderr, tt.says), "stderr %q does not say %q", r.stderr, tt.says)
		})
	}

	// Rate-limited: one active job allowed, and one is running. The client waits out the
	// server's Retry-After (a few seconds) while its patience lasts, tries again, and gives
	// up when the next announced wait would outlast it.
	silent := p.predict("silent")
	defer p.post("/v1/jobs/"+silent+"/cancel", nil)
	probe := p.post("/v1/predictions", map[string]any{"sequence": "MKT"}).expect(http.StatusTooManyRequests)
	announced, err := strconv.Atoi(probe.Header.Get("Retry-After"))
	mustf(t, err == nil && announced >= 5, "the active-jobs 429 announced Retry-After %q", probe.Header.Get("Retry-After"))
	patience := fmt.Sprintf("%ds", announced*3/2) // one announced wait, not two
	before := len(p.requests())
	r = p.runCLI(t, "", []string{"CHAPERONE_RETRIES=1", "CHAPERONE_PATIENCE=" + patience}, "predict", "--sequence", "MKTAYIAKQ", "--name", "ok").expect(t, exitRateLimited)
	mustf(t, strings.Contains(r.stderr, "429"), "429: %s", r.stderr)
	var posts []seenRequest
	for _, s := range p.requests()[before:] {
		if s.Method == http.MethodPost {
			posts = append(posts, s)
		}
	}
	mustf(t, len(posts) == 2 && posts[0].Status == 429 && posts[1].Status == 429, "the create was tried %v, want twice, 429 both times", posts)
	// The retry is the same request: the same Idempotency-Key, sent no sooner than the
	// server asked.
	mustf(t, posts[0].IdempotencyKey != "" && posts[1].IdempotencyKey == posts[0].IdempotencyKey,
		"the retry carried Idempotency-Key %q, the first attempt %q", posts[1].IdempotencyKey, posts[0].IdempotencyKey)
	after, err := strconv.Atoi(posts[0].RetryAfter)
	mustf(t, err == nil && after >= 1 && posts[1].At.Sub(posts[0].At) >= time.Duration(after)*time.Second,
		"the retry came %v after a 429 with Retry-After %q", posts[1].At.Sub(posts[0].At), posts[0].RetryAfter)
}

// TestCLIIdempotencyKey: a create run again with the same --idempotency-key (a script that
// is rerun) returns the job the first run made; the same key with another input is refused.
func TestCLIIdempotencyKey(t *testing.T) {
	t.Parallel()
	p := startProxied(t)
	first := jsonOf(t, p.runCLI(t, "", nil, "predict", "--sequence", "MKTAYIAKQ", "--name", "ok", "--idempotency-key", "run-7", "--json").expect(t, exitOK).stdout)
	again := jsonOf(t, p.runCLI(t, "", nil, "predict", "--sequence", "MKTAYIAKQ", "--name", "ok", "--idempotency-key", "run-7", "--json").expect(t, exitOK).stdout)
	mustf(t, first["id"] != nil && again["id"] == first["id"], "the rerun made job %v, the first run %v", again["id"], first["id"])
	r := p.runCLI(t, "", nil, "predict", "--sequence", "GSGSGS", "--name", "ok", "--idempotency-key", "run-7").expect(t, exitUsage)
	mustf(t, strings.Contains(r.stderr, "422"), "the key reused with another input: %s", r.stderr)
	var keys []string
	for _, s := range p.requests() {
		if s.Method == http.MethodPost {
			keys = append(keys, s.IdempotencyKey)
		}
	}
	mustf(t, slices.Equal(keys, []string{"run-7", "run-7", "run-7"}), "creates sent Idempotency-Key %q", keys)
}

// TestCLIResumesACutDownload: the proxy breaks the archive off half way. A run without
// retries fails with exit 6 and keeps what it got; the next run asks for the rest only,
// guarded by the ETag, and the file is byte for byte the server's. With retries, one run
// resumes by itself.
func TestCLIResumesACutDownload(t *testing.T) {
	t.Parallel()
	p := startProxied(t)
	id := p.predict("many:30")
	p.waitStatus(id, "succeeded")
	archive := p.get("/v1/jobs/" + id + "/archive").expect(http.StatusOK)
	want, etag := archive.Body, archive.Header.Get("ETag")
	half := len(want) / 2
	cutOnce := func(suffix string) {
		first := true
		p.setCut(func(r *http.Request) int {
			if first && strings.HasSuffix(r.URL.Path, suffix) {
				first = false
				return half
			}
			return -1
		})
	}

	dir := t.TempDir()
	cutOnce("/archive")
	before := len(p.requests())
	r := p.runCLI(t, dir, []string{"CHAPERONE_RETRIES=0"}, "jobs", "download", id, "--zip", "--out", "z").expect(t, exitUnavailable)
	mustf(t, strings.Contains(r.stderr, "cut short"), "stderr: %s", r.stderr)
	part, err := os.ReadFile(filepath.Join(dir, "z", id+".zip.part"))
	mustf(t, err == nil && len(part) == half && bytes.Equal(part, want[:half]), "partial file: %d bytes, %v; want the first %d", len(part), err, half)

	p.runCLI(t, dir, nil, "jobs", "download", id, "--zip", "--out", "z").expect(t, exitOK)
	got, _ := os.ReadFile(filepath.Join(dir, "z", id+".zip"))
	mustf(t, bytes.Equal(got, want), "resumed archive: %d bytes, differs from the server's %d", len(got), len(want))
	resumed := p.requests()[before:]
	mustf(t, slices.ContainsFunc(resumed, func(s seenRequest) bool {
		return s.Range == fmt.Sprintf("bytes=%d-", half) && s.IfRange == etag && s.Status == http.StatusPartialContent
	}), "no ranged request for the rest: %+v", resumed)
	leftovers, _ := filepath.Glob(filepath.Join(dir, "z", "*.part*"))
	mustf(t, len(leftovers) == 0, "left behind: %v", leftovers)

	// In one run: the archive behind --out, and a single artifact.
	cutOnce("/archive")
	out := filepath.Join(dir, "all")
	p.runCLI(t, dir, nil, "jobs", "download", id, "--out", out).expect(t, exitOK)
	names := zipNames(t, want)
	for name := range names {
		_, err := os.Stat(filepath.Join(out, filepath.FromSlash(name)))
		mustf(t, err == nil, "--out lacks %s after a resumed download", name)
	}
	art := p.get("/v1/jobs/" + id + "/artifacts/t1.cif").Body
	half = len(art) / 2
	cutOnce("/t1.cif")
	p.runCLI(t, dir, nil, "jobs", "download", id, "--artifact", "t1.cif", "--out", "one").expect(t, exitOK)
	gotArt, _ := os.ReadFile(filepath.Join(dir, "one", "t1.cif"))
	mustf(t, bytes.Equal(gotArt, art), "resumed artifact %q, want %q", gotArt, art)
}

// TestCLIProgressOnATerminal: on a terminal the wait redraws one line in place; without
// one it writes plain lines.
func TestCLIProgressOnATerminal(t *testing.T) {
	t.Parallel()
	p := startProxied(t)
	master, tty := openPTY(t, 100)
	id := p.predict("slow:12")
	cmd := p.command(t, "", []string{"TERM=xterm"}, "jobs", "wait", id)
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, tty
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()                     // the child holds its own copy; reads end when it exits
	screen, _ := io.ReadAll(master) // ends with EIO once no one holds the terminal
	if err := cmd.Wait(); err != nil {
		t.Fatalf("jobs wait on a terminal: %v\n%s", err, screen)
	}
	out := string(screen)
	redraws := strings.Count(out, "\r"+"job "+id[:8])
	mustf(t, redraws >= 2 && strings.Count(out, "\x1b[K") == redraws, "want the line redrawn in place (\\r…\\x1b[K) at least twice: %q", out)
	mustf(t, strings.Contains(out, "running") && strings.Contains(out, "succeeded") && strings.Contains(out, "100%"), "progress line: %q", out)
	for _, line := range strings.Split(out, "\x1b[K") {
		mustf(t, len(line) <= 100+2, "a drawn line is wider than the terminal: %q", line)
	}
	mustf(t, strings.Contains(stdout.String(), "succeeded"), "stdout: %s", stdout.String())

	// The same without a terminal.
	r := p.runCLI(t, "", nil, "jobs", "wait", p.predict("slow:3")).expect(t, exitOK)
	mustf(t, controlFree(r.stderr) && strings.Contains(r.stderr, "succeeded"), "stderr without a terminal: %q", r.stderr)
}

func jsonOf(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("not a JSON object: %v: %s", err, s)
	}
	return m
}

// Exit codes as the CLI documents them.
const (
	exitOK          = 0
	exitJobFailed   = 1
	exitUsage       = 2
	exitAuth        = 3
	exitNotFound    = 4
	exitRateLimited = 5
	exitUnavailable = 6
)
