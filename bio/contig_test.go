package bio

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseContig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		in          string
		want        Contig
		maxResidues int
	}{
		{"binder against chain A", "A1-150,60-80",
			Contig{{Chain: "A", Min: 1, Max: 150}, {Min: 60, Max: 80, Kind: Protein}}, 230},
		{"fixed length", "70", Contig{{Min: 70, Max: 70, Kind: Protein}}, 70},
		{"chain breaks as rfd3 writes them", "40-120,/0,E6-155",
			Contig{{Min: 40, Max: 120, Kind: Protein}, {Break: true}, {Chain: "E", Min: 6, Max: 155}}, 270},
		{"motif scaffolding", "A1-80,10,/0,B5-12",
			Contig{{Chain: "A", Min: 1, Max: 80}, {Min: 10, Max: 10, Kind: Protein}, {Break: true}, {Chain: "B", Min: 5, Max: 12}}, 98},
		{"spaces around segments", " A1-10 , 5-6 ", Contig{{Chain: "A", Min: 1, Max: 10}, {Min: 5, Max: 6, Kind: Protein}}, 16},
		{"single-residue range and residue 0", "a0-0,3", Contig{{Chain: "a", Min: 0, Max: 0}, {Min: 3, Max: 3, Kind: Protein}}, 4},
		{"a single kept residue, as rfd3's docs write A203", "A40-60,70,A203",
			Contig{{Chain: "A", Min: 40, Max: 60}, {Min: 70, Max: 70, Kind: Protein}, {Chain: "A", Min: 203, Max: 203}}, 92},
		{"the end repeating the chain, as rfd3's docs write B3-B45", "B3-B45", Contig{{Chain: "B", Min: 3, Max: 45}}, 43},
		{"designed DNA and RNA segments", "12D,/0,8-10R",
			Contig{{Min: 12, Max: 12, Kind: DNA}, {Break: true}, {Min: 8, Max: 10, Kind: RNA}}, 22},
		{"a designed segment that may be left out, as rfd3's examples write 0-40", "0-40,A1-10",
			Contig{{Min: 0, Max: 40, Kind: Protein}, {Chain: "A", Min: 1, Max: 10}}, 50},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseContig(tt.in)
			if err != nil {
				t.Fatalf("ParseContig(%q): %v", tt.in, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseContig(%q) = %#v, want %#v", tt.in, got, tt.want)
			}
			if n := got.MaxResidues(); n != tt.maxResidues {
				t.Errorf("MaxResidues = %d, want %d", n, tt.maxResidues)
			}
		})
	}
}

func TestParseContigErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", `segment 1 "": is empty`},
		{"empty segment", "A1-10,,20", `segment 2 "": is empty`},
		{"trailing comma", "20,", `segment 2 "": is empty`},
		{"chain range backwards", "A50-10", `segment 1 "A50-10": start 50 is after end 10`},
		{"length range backwards", "A1-5,80-60", `segment 2 "80-60": minimum length 80 is above maximum 60`},
		{"zero length", "0", "at least 1 residue"},
		{"zero-length range", "0-0", "at least 1 residue"},
		{"range ending on another chain", "A10-B20", "<chain><start>-<end>"},
		{"unknown suffix", "12P", "expected a chain range"},
		{"suffix on a kept range", "A1-10D", "<chain><start>-<end>"},
		{"two-letter chain", "AB1-10", "<chain><start>-<end>"},
		{"negative", "-5", "expected a chain range"},
		{"open range", "10-", "expected a chain range"},
		{"three parts", "1-2-3", "expected a chain range"},
		{"other break", "/1", "expected a chain range"},
		{"huge number", "99999999999999999999", "expected a chain range"},
		{"not a contig", "MKTAYIAK", "<chain><start>-<end>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseContig(tt.in)
			if err == nil {
				t.Fatalf("ParseContig(%q) = %#v, want an error containing %q", tt.in, got, tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

func TestContigDesigns(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]bool{
		"A1-150,60-80":  true,
		"70":            true,
		"A1-150":        false,
		"A1-10,/0,B1-5": false,
	} {
		c, err := ParseContig(in)
		if err != nil {
			t.Fatalf("ParseContig(%q): %v", in, err)
		}
		if got := c.Designs(); got != want {
			t.Errorf("ParseContig(%q).Designs() = %v, want %v", in, got, want)
		}
	}
}

// FuzzParseContig checks that any text either parses or fails cleanly, and that a parsed
// contig written back (String) parses to the same segments.
func FuzzParseContig(f *testing.F) {
	for _, seed := range []string{"A1-150,60-80", "40-120,/0,E6-155", "70", "", ",", "A-1", "1-2-3", " a0-0 , 3 ", "A203,B3-B45,12D,8-10R"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseContig(s)
		if err != nil {
			return
		}
		again, err := ParseContig(c.String())
		if err != nil || !reflect.DeepEqual(again, c) {
			t.Fatalf("round trip of %#v gave %#v, %v", c, again, err)
		}
		if c.MaxResidues() < 0 {
			t.Fatalf("MaxResidues %d < 0", c.MaxResidues())
		}
	})
}
