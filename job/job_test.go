package job

import "testing"

func ptr(f float64) *float64 { return &f }

func TestProgressValue(t *testing.T) {
	tests := []struct {
		name string
		p    Progress
		want *float64
	}{
		{"indeterminate", Progress{}, nil},
		{"counted", Progress{Done: 1, Total: 4}, ptr(0.25)},
		{"engine fraction wins", Progress{Done: 1, Total: 4, Fraction: ptr(0.6)}, ptr(0.6)},
		{"fraction clamped above", Progress{Fraction: ptr(1.7)}, ptr(1)},
		{"fraction clamped below", Progress{Fraction: ptr(-0.2)}, ptr(0)},
		{"done past total", Progress{Done: 5, Total: 4}, ptr(1)},
	}
	for _, tt := range tests {
		got := tt.p.Value()
		if (got == nil) != (tt.want == nil) || got != nil && *got != *tt.want {
			t.Errorf("%s: Value() = %v, want %v", tt.name, deref(got), deref(tt.want))
		}
	}
}

func deref(f *float64) any {
	if f == nil {
		return nil
	}
	return *f
}

func TestIDs(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := NewID()
		if !ValidID(id) || seen[id] {
			t.Fatalf("NewID gave %q (valid %v, repeated %v)", id, ValidID(id), seen[id])
		}
		seen[id] = true
	}
	for _, bad := range []string{"", "0123456789ABCDEF0123456789abcdef", "0123456789abcdef0123456789abcde", "../../../etc/passwd000000000000000"} {
		if ValidID(bad) {
			t.Errorf("ValidID(%q) = true", bad)
		}
	}
}

func TestOwnerRoundTrip(t *testing.T) {
	for _, o := range []Owner{{OwnerKey, "key_1"}, {OwnerSession, "abc"}, {OwnerIP, "::1"}, {OwnerIP, "10.0.0.1"}} {
		got, ok := ParseOwner(o.String())
		if !ok || got != o {
			t.Errorf("ParseOwner(%q) = %v, %v", o.String(), got, ok)
		}
	}
	for _, bad := range []string{"", "ip:", "user:x", "nocolon"} {
		if _, ok := ParseOwner(bad); ok {
			t.Errorf("ParseOwner(%q) accepted", bad)
		}
	}
}

func TestStatus(t *testing.T) {
	for s, want := range map[Status][2]bool{Queued: {false, true}, Running: {false, true},
		Succeeded: {true, false}, Failed: {true, false}, Canceled: {true, false}} {
		if s.Terminal() != want[0] || s.Active() != want[1] {
			t.Errorf("%s: Terminal %v Active %v", s, s.Terminal(), s.Active())
		}
	}
}
