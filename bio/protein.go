package bio

import (
	"fmt"
	"strings"
	"unicode"
)

// proteinLetters are the residue letters accepted in a protein sequence: the 20 standard
// amino acids plus X (unknown), B (D or N), Z (E or Q), U (selenocysteine) and
// O (pyrrolysine), the set every model of the catalog tokenises.
const proteinLetters = "ACDEFGHIKLMNPQRSTVWYXBZUO"

// CheckProtein checks a protein sequence and returns it upper-cased with all whitespace
// removed, so callers may paste wrapped or lower-case text. Anything other than a residue
// letter is an error naming its 1-based residue position (whitespace not counted) and the
// character; so is a sequence with no residue at all.
func CheckProtein(seq string) (string, error) {
	var b strings.Builder
	b.Grow(len(seq))
	pos := 0
	for _, r := range seq {
		if unicode.IsSpace(r) {
			continue
		}
		pos++
		// Upper-case only ASCII: unicode.ToUpper maps some non-ASCII letters (ı, ſ) onto
		// residue letters.
		u := r
		if 'a' <= r && r <= 'z' {
			u = r - 'a' + 'A'
		}
		if !strings.ContainsRune(proteinLetters, u) {
			return "", fmt.Errorf("position %d: %q is not an amino-acid letter (allowed: the 20 standard letters and X, B, Z, U, O)", pos, r)
		}
		b.WriteRune(u)
	}
	if pos == 0 {
		return "", fmt.Errorf("has no residues")
	}
	return b.String(), nil
}
