package sqlstore

import "testing"

func TestCursorRoundTrip(t *testing.T) {
	t.Parallel()
	for _, seq := range []int64{1, 42, 1 << 53} {
		if got, err := decodeCursor(encodeCursor(seq)); err != nil || got != seq {
			t.Errorf("decodeCursor(encodeCursor(%d)) = %d, %v", seq, got, err)
		}
	}
	for _, bad := range []string{"", "MA", "LTE", "%%"} { // "", "0", "-1", not base64
		if _, err := decodeCursor(bad); err == nil {
			t.Errorf("decodeCursor(%q) accepted", bad)
		}
	}
}
