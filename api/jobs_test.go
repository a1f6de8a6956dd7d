package api

import (
	"testing"
	"time"
)

func TestPreferWait(t *testing.T) {
	t.Parallel()
	const def, maxSeconds = 25, 60
	tests := []struct {
		prefer []string
		want   time.Duration
		held   bool
	}{
		{nil, 0, false},
		{[]string{"wait"}, 25 * time.Second, true},
		{[]string{"wait=10"}, 10 * time.Second, true},
		{[]string{`wait="10"`}, 10 * time.Second, true},
		{[]string{"respond-async, wait=5"}, 5 * time.Second, true},
		{[]string{"respond-async", "Wait=5"}, 5 * time.Second, true},
		{[]string{"wait=600"}, 60 * time.Second, true},
		{[]string{"wait=99999999999999999999"}, 60 * time.Second, true}, // beyond int, still a number
		{[]string{"wait=0"}, 0, false},
		{[]string{"wait=-1"}, 0, false},
		{[]string{"wait=-99999999999999999999"}, 0, false},
		{[]string{"wait=soon"}, 0, false},
		{[]string{"wait=1.5"}, 0, false},
		{[]string{"respond-async"}, 0, false},
	}
	for _, tt := range tests {
		got, held := preferWait(tt.prefer, def, maxSeconds)
		if got != tt.want || held != tt.held {
			t.Errorf("Prefer %q: hold %v (%v), want %v (%v)", tt.prefer, got, held, tt.want, tt.held)
		}
	}
}
