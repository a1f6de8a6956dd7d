package main

import (
	"strings"
	"testing"
	"time"
)

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
