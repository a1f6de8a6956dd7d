package bio

import (
	"strings"
	"testing"
)

func TestCheckProtein(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{"standard letters", "ACDEFGHIKLMNPQRSTVWY", "ACDEFGHIKLMNPQRSTVWY"},
		{"ambiguous and rare letters", "XBZUO", "XBZUO"},
		{"lower case is upper-cased", "mktayiak", "MKTAYIAK"},
		{"whitespace and line breaks are removed", " MKT AYI\r\n\tAK \n", "MKTAYIAK"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := CheckProtein(tt.in)
			if err != nil || got != tt.want {
				t.Errorf("CheckProtein(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestCheckProteinErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{"a digit", "MKT1", `position 4: '1'`},
		{"position ignores whitespace", "MK TA\nJ", `position 5: 'J'`},
		{"gap", "MK-T", `position 3: '-'`},
		{"stop codon", "MKT*", `position 4: '*'`},
		{"chain break", "MK|TA", `position 3: '|'`},
		{"lower-case bad letter is shown as sent", "mkj", `position 3: 'j'`},
		{"non-ASCII letter that upper-cases to I", "Mı", `position 2: 'ı'`},
		{"empty", "", "has no residues"},
		{"only whitespace", " \n\t", "has no residues"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := CheckProtein(tt.in)
			if err == nil {
				t.Fatalf("CheckProtein(%q) = %q, want an error containing %q", tt.in, got, tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}
