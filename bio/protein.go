package bio

import (
	"fmt"
	"strings"
	"unicode"
)

// Residue letters accepted per polymer kind. Protein: the 20 standard amino acids plus
// X (unknown), B (D or N), Z (E or Q), U (selenocysteine) and O (pyrrolysine), the set
// every model of the catalog tokenises. DNA and RNA: the four bases and N (unknown).
const (
	proteinLetters = "ACDEFGHIKLMNPQRSTVWYXBZUO"
	dnaLetters     = "ACGTN"
	rnaLetters     = "ACGUN"
)

var alphabets = map[Kind]struct{ letters, noun, allowed string }{
	Protein: {proteinLetters, "an amino-acid letter", "the 20 standard letters and X, B, Z, U, O"},
	DNA:     {dnaLetters, "a DNA base", "A, C, G, T and N"},
	RNA:     {rnaLetters, "an RNA base", "A, C, G, U and N"},
}

// CheckProtein checks a protein sequence and returns it upper-cased with all whitespace
// removed, so callers may paste wrapped or lower-case text. Anything other than a residue
// letter is an error naming its 1-based residue position (whitespace not counted) and the
// character; so is a sequence with no residue at all.
func CheckProtein(seq string) (string, error) { return CheckSequence(Protein, seq) }

// CheckSequence is CheckProtein for a polymer of any kind, each with its own alphabet.
func CheckSequence(kind Kind, seq string) (string, error) {
	a, ok := alphabets[kind]
	if !ok {
		return "", fmt.Errorf("a %s has no sequence", kind)
	}
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
		if !strings.ContainsRune(a.letters, u) {
			return "", fmt.Errorf("position %d: %q is not %s (allowed: %s)", pos, r, a.noun, a.allowed)
		}
		b.WriteRune(u)
	}
	if pos == 0 {
		return "", fmt.Errorf("has no residues")
	}
	return b.String(), nil
}
