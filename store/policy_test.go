package store

import (
	"testing"
	"time"
)

func TestEstimateRetryAfter(t *testing.T) {
	t.Parallel()
	s := time.Second
	tests := []struct {
		name     string
		runtimes []time.Duration
		elapsed  time.Duration
		want     time.Duration
	}{
		{"no history", nil, 10 * s, DefaultRetryAfter},
		{"one runtime", []time.Duration{100 * s}, 40 * s, 60 * s},
		{"median of odd count", []time.Duration{500 * s, 10 * s, 100 * s}, 0, 100 * s},
		{"median of even count", []time.Duration{10 * s, 20 * s, 40 * s, 1000 * s}, 0, 30 * s},
		{"overrun: a tenth of the median", []time.Duration{100 * s}, 150 * s, 10 * s},
		{"nearly done: a tenth of the median", []time.Duration{100 * s}, 99 * s, 10 * s},
		{"short overrun: the floor", []time.Duration{20 * s}, 150 * s, JobRetryFloor},
		{"long runs clamp to the maximum", []time.Duration{time.Hour}, 0, MaxRetryAfter},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := EstimateRetryAfter(tt.runtimes, tt.elapsed); got != tt.want {
				t.Errorf("EstimateRetryAfter(%v, %v) = %v, want %v", tt.runtimes, tt.elapsed, got, tt.want)
			}
		})
	}
}

func TestWorkerLostError(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]string{
		1: "the worker running this job was lost once; giving up",
		2: "the worker running this job was lost 2 times; giving up",
	} {
		if got := WorkerLostError(n); got != want {
			t.Errorf("WorkerLostError(%d) = %q, want %q", n, got, want)
		}
	}
}
