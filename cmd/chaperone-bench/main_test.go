package main

import (
	"bytes"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary be the bench's servers too: the bench re-executes its own
// binary for each.
func TestMain(m *testing.M) {
	if raw := os.Getenv(serveEnv); raw != "" {
		serveChild(raw)
		return
	}
	os.Exit(m.Run())
}

// TestTheBenchHoldsMoreWaitsThanOneClientMay: all of make bench's load comes from one
// address. With more long-polls than a client may hold by default (64 connections, 16
// held waits), every phase still measures, each wait held until released, instead of the
// bench stopping at a 429.
func TestTheBenchHoldsMoreWaitsThanOneClientMay(t *testing.T) {
	o := options{duration: 200 * time.Millisecond, warmup: 50 * time.Millisecond, rounds: 1, clients: 4, owners: 4,
		samples: 5, gap: time.Millisecond, waiters: 100, hold: 100 * time.Millisecond, dataDir: t.TempDir(),
		logLevel: slog.LevelWarn, synchronous: "FULL"}
	var out bytes.Buffer
	if err := run(o, &out); err != nil {
		t.Fatalf("the bench stopped: %v\n%s", err, &out)
	}
	// The report wraps its prose: compare words.
	words := strings.Join(strings.Fields(out.String()), " ")
	for _, want := range []string{"server RSS added by 100 held waits", "0 long-polls ended early"} {
		if !strings.Contains(words, want) {
			t.Errorf("the bench's report lacks %q:\n%s", want, &out)
		}
	}
}

func TestPercentileIsNearestRank(t *testing.T) {
	t.Parallel()
	var d []time.Duration
	for i := 1; i <= 200; i++ {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	for _, tc := range []struct {
		p    float64
		want time.Duration
	}{
		{50, 100 * time.Millisecond},
		{99, 198 * time.Millisecond},
		{100, 200 * time.Millisecond},
		{0, time.Millisecond},
	} {
		if got := percentile(d, tc.p); got != tc.want {
			t.Errorf("percentile(1..200 ms, %v) = %v, want %v", tc.p, got, tc.want)
		}
	}
	if got := percentile(nil, 50); got != 0 {
		t.Errorf("percentile(nil) = %v, want 0", got)
	}
}

func TestWrapKeepsWordsAndWidth(t *testing.T) {
	t.Parallel()
	text := strings.Repeat("chaperone measures ", 20)
	got := wrap(text, 30, "  ")
	if strings.Join(strings.Fields(got), " ") != strings.TrimSpace(text) {
		t.Fatalf("wrap changed the words: %q", got)
	}
	for i, line := range strings.Split(strings.TrimSuffix(got, "\n"), "\n") {
		if len(line) > 30 {
			t.Errorf("line %d is %d wide: %q", i, len(line), line)
		}
		if i > 0 && !strings.HasPrefix(line, "  ") {
			t.Errorf("line %d is not indented: %q", i, line)
		}
	}
}
