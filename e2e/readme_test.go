package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The README's shell blocks are run as written, so that an example cannot rot: every
// fenced block of shell either runs here against a server with the stand-in tools, or is
// marked in the README, on the line before its fence, with why it does not:
//
//	<!-- README test: not run: REASON -->            (GPU installs, a Slurm cluster, …)
//	<!-- README test: tier: REASON -->               run by the real-package tier instead
//	<!-- README test: runs; allows 409: REASON -->   runs; answers of these statuses are meant
//
// An unmarked block runs, and must exit 0 with no answer of 400 or more.

// readmeBlock is one fenced code block of the README.
type readmeBlock struct {
	line   int    // of the opening fence
	lang   string // as the fence names it: sh, text, go, …
	text   string
	marker string // what follows "README test: " in the comment before the fence; "" when none
}

var readmeMarker = regexp.MustCompile(`^<!-- README test: (.+) -->$`)

// readmeBlocks reads every fenced block of the README, with its marker, and fails the test
// on a marker that stands before no block.
func readmeBlocks(t *testing.T) []readmeBlock {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var blocks []readmeBlock
	var cur *readmeBlock
	marker, markerLine := "", 0
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur != nil && line == "```":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.text += line + "\n"
		case strings.HasPrefix(line, "```"):
			cur = &readmeBlock{line: n, lang: strings.TrimPrefix(line, "```"), marker: marker}
			marker = ""
		case readmeMarker.MatchString(line):
			marker, markerLine = readmeMarker.FindStringSubmatch(line)[1], n
		case marker != "":
			t.Fatalf("README.md:%d: the marker %q stands before no code block", markerLine, marker)
		}
	}
	return blocks
}

// shell reports whether the block is commands for a shell.
func (b readmeBlock) shell() bool { return b.lang == "sh" || b.lang == "bash" || b.lang == "shell" }

// readmeFiles are the files the README's examples name, as each describes them.
func readmeFiles() map[string]string {
	pdb := func(chains ...struct {
		id, res string
		n       int
	}) string {
		var b strings.Builder
		atom := 0
		for _, c := range chains {
			for i := 1; i <= c.n; i++ {
				atom++
				fmt.Fprintf(&b, "ATOM  %5d  CA  %3s %s%4d    %8.3f%8.3f%8.3f  1.00 80.00           C\n", atom, c.res, c.id, i, 3.8*float64(i), 0.0, 0.0)
			}
			b.WriteString("TER\n")
		}
		return b.String() + "END\n"
	}
	type chain = struct {
		id, res string
		n       int
	}
	return map[string]string{
		// "target.pdb: protein chain A with residues 1-150; dna.pdb: DNA chains B and C with residues 1-12"
		"target.pdb":     pdb(chain{"A", "GLU", 150}),
		"dna.pdb":        pdb(chain{"B", " DA", 12}, chain{"C", " DT", 12}),
		"complex.yaml":   "sequences:\n  - protein: {id: A, sequence: MKTAYIAKQRQISFVKSHFSRQ}\n  - ligand: {id: L, ccd: SAH}\n",
		"a.fasta":        ">A\nMKTAYIAKQRQISFVKSHFSRQ\n",
		"b.yaml":         "sequences:\n  - protein: {id: A, sequence: GIVEQCCTSICSLYQLENYCN}\n  - protein: {id: B, sequence: FVNQHLCGSHLVEALYLVCGERGFFYTPKT}\n",
		"binder.yaml":    "sequences:\n  - protein: {id: A, sequence: MKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQ}\n",
		"proteins.fasta": ">alpha\nMKTAYIAKQRQISFVKSHFSRQ\n>beta\nMVHLTPEEKSAVTALWGKVNV\n",
	}
}

// readmeStatuses are the HTTP statuses a marker allows ("runs; allows 409, 404: …").
func readmeStatuses(marker string) map[int]bool {
	allowed := map[int]bool{}
	if m := regexp.MustCompile(`^runs; allows ([0-9, ]+):`).FindStringSubmatch(marker); m != nil {
		for _, s := range strings.Split(m[1], ",") {
			n, _ := strconv.Atoi(strings.TrimSpace(s))
			allowed[n] = true
		}
	}
	return allowed
}

func TestREADMERunsAsWritten(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CHAPERONE_TEST_README") == "required" {
				t.Fatalf("the README's examples need %s (apt-get install curl jq)", tool)
			}
			t.Skipf("the README's examples need %s (apt-get install curl jq)", tool)
		}
	}
	p := startProxied(t, withEveryStandIn(t))
	dir := t.TempDir()
	for name, content := range readmeFiles() {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	server := strings.TrimPrefix(p.URL, "http://")
	env := append(os.Environ(), "PATH="+filepath.Dir(p.bin)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"CHAPERONE_URL="+p.URL, "CHAPERONE_DATA="+p.dir, "CHAPERONE_API_KEY=", "CHAPERONE_RETRY_DELAY=10ms")
	var ran, notRun, tier int
	for _, b := range readmeBlocks(t) {
		if !b.shell() {
			continue
		}
		where := fmt.Sprintf("README.md:%d", b.line)
		switch {
		case strings.HasPrefix(b.marker, "not run: ") && len(strings.Fields(b.marker)) > 4:
			notRun++
			continue
		case strings.HasPrefix(b.marker, "tier: ") && len(strings.Fields(b.marker)) > 4:
			tier++
			continue
		case b.marker != "" && !strings.HasPrefix(b.marker, "runs"):
			t.Errorf("%s: the marker %q says neither that the block runs nor, with a reason, why not", where, b.marker)
			continue
		}
		ran++
		text := strings.NewReplacer("localhost:8080", server, "127.0.0.1:8080", server).Replace(b.text)
		before := len(p.requests())
		start := time.Now()
		out, err := runBlock(t, dir, env, text)
		if err != nil {
			t.Errorf("%s: the block failed (%v):\n%s\noutput:\n%s", where, err, b.text, out)
			continue
		}
		allowed := readmeStatuses(b.marker)
		for _, r := range p.requests()[before:] {
			if r.Status >= 400 && !allowed[r.Status] {
				t.Errorf("%s: %s %s answered %d:\n%s\noutput:\n%s", where, r.Method, r.Path, r.Status, b.text, out)
			}
		}
		t.Logf("%s: ran in %.1f s, %d requests", where, time.Since(start).Seconds(), len(p.requests())-before)
	}
	t.Logf("README: %d shell blocks ran, %d are run by the real-package tier, %d are marked not run with why", ran, tier, notRun)
	mustf(t, ran > 0, "no block of the README ran")
}

// runBlock runs a README block with bash in dir, in a process group of its own that it
// ends afterwards, so that a server the block started in the background does not outlive it.
func runBlock(t *testing.T, dir string, env []string, text string) (string, error) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-e", "-o", "pipefail", "-c", text)
	cmd.Dir, cmd.Env = dir, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// A server the block left running holds the output open: stop reading once bash has
	// exited, rather than wait for it.
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	return string(out), err
}
