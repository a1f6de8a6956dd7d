package bio

import (
	"fmt"
	"strings"
)

// CheckSMILES checks the syntax of a SMILES string (OpenSMILES, with RDKit's %(nnn) ring
// numbers): atoms outside brackets from the organic subset, bracket atoms with a real
// element symbol, balanced branches, paired ring-closure numbers, and bonds, branches and
// dots only where an atom can follow. It is a syntax check, not chemistry: valences and
// aromaticity are left to the model's toolkit. Errors name the 1-based character.
func CheckSMILES(s string) error {
	_, err := parseSMILES(s)
	return err
}

// smilesHeavyAtoms counts the atoms of a valid SMILES string that are not hydrogen, as
// RDKit does once it removes hydrogens.
func smilesHeavyAtoms(s string) int {
	n, _ := parseSMILES(s)
	return n
}

// smilesState is what the last token of a SMILES string allows next.
type smilesState int

const (
	needAtom    smilesState = iota // at the start or after '.': an atom must come
	afterAtom                      // after an atom, ring closure or ')': anything may come
	branchStart                    // just after '(': a bond, an atom or '.'
	afterBond                      // after a bond symbol: an atom or a ring closure
)

// Atoms that may be written without brackets, two-letter ones first.
var organicSubset = []string{"Cl", "Br", "B", "C", "N", "O", "P", "S", "F", "I", "b", "c", "n", "o", "p", "s", "*"}

var elements = func() map[string]bool {
	m := map[string]bool{}
	for _, e := range strings.Fields(`H He Li Be B C N O F Ne Na Mg Al Si P S Cl Ar K Ca Sc Ti V Cr Mn
		Fe Co Ni Cu Zn Ga Ge As Se Br Kr Rb Sr Y Zr Nb Mo Tc Ru Rh Pd Ag Cd In Sn Sb Te I Xe Cs Ba La Ce
		Pr Nd Pm Sm Eu Gd Tb Dy Ho Er Tm Yb Lu Hf Ta W Re Os Ir Pt Au Hg Tl Pb Bi Po At Rn Fr Ra Ac Th
		Pa U Np Pu Am Cm Bk Cf Es Fm Md No Lr Rf Db Sg Bh Hs Mt Ds Rg Cn Nh Fl Mc Lv Ts Og`) {
		m[e] = true
	}
	// Aromatic forms, allowed in brackets: OpenSMILES's, plus te and si that RDKit reads.
	for _, e := range []string{"b", "c", "n", "o", "p", "s", "se", "as", "te", "si", "*"} {
		m[e] = true
	}
	return m
}()

func parseSMILES(s string) (heavy int, err error) {
	if s == "" {
		return 0, fmt.Errorf("SMILES is empty")
	}
	fail := func(i int, format string, args ...any) (int, error) {
		return 0, fmt.Errorf("SMILES character %d: %s", i+1, fmt.Sprintf(format, args...))
	}
	state := needAtom
	var branches []int     // positions of open '('
	rings := map[int]int{} // open ring number → position
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			return fail(i, "whitespace inside SMILES")
		case c == '(':
			if state != afterAtom {
				return fail(i, "'(' must follow an atom")
			}
			branches = append(branches, i)
			state = branchStart
			i++
		case c == ')':
			if len(branches) == 0 {
				return fail(i, "')' closes no branch")
			}
			if state != afterAtom {
				return fail(i, "branch opened at character %d ends without an atom", branches[len(branches)-1]+1)
			}
			branches = branches[:len(branches)-1]
			i++
		case strings.IndexByte("-=#$:/\\", c) >= 0:
			if state != afterAtom && state != branchStart {
				return fail(i, "bond %q must follow an atom", c)
			}
			state = afterBond
			i++
		case c == '.':
			if state != afterAtom && state != branchStart {
				return fail(i, "'.' must follow an atom")
			}
			state = needAtom
			i++
		case c == '%' || '0' <= c && c <= '9':
			num, next, perr := ringNumber(s, i)
			if perr != nil {
				return fail(i, "%v", perr)
			}
			if state != afterAtom && state != afterBond {
				return fail(i, "ring closure %d must follow an atom", num)
			}
			if _, open := rings[num]; open {
				delete(rings, num)
			} else {
				rings[num] = i
			}
			state = afterAtom
			i = next
		case c == '[':
			end := strings.IndexByte(s[i:], ']')
			if end < 0 {
				return fail(i, "'[' is never closed by ']'")
			}
			sym, berr := bracketAtom(s[i+1 : i+end])
			if berr != nil {
				return fail(i, "bracket atom %q: %v", s[i:i+end+1], berr)
			}
			if sym != "H" {
				heavy++
			}
			state = afterAtom
			i += end + 1
		default:
			atom := ""
			for _, a := range organicSubset {
				if strings.HasPrefix(s[i:], a) {
					atom = a
					break
				}
			}
			if atom == "" {
				if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' {
					return fail(i, "%q is not an atom outside brackets (only B, C, N, O, P, S, F, Cl, Br, I and aromatic b, c, n, o, p, s are; write others in brackets, like [Na+])", c)
				}
				return fail(i, "%q is not part of SMILES syntax", c)
			}
			heavy++
			state = afterAtom
			i += len(atom)
		}
	}
	switch {
	case len(branches) > 0:
		return 0, fmt.Errorf("SMILES character %d: '(' is never closed", branches[len(branches)-1]+1)
	case len(rings) > 0:
		num, at := 0, len(s)
		for n, p := range rings {
			if p < at {
				num, at = n, p
			}
		}
		return 0, fmt.Errorf("SMILES character %d: ring bond %d is opened but never closed", at+1, num)
	case state != afterAtom:
		return 0, fmt.Errorf("SMILES ends with a bond, '(' or '.' and no atom after it")
	}
	return heavy, nil
}

// ringNumber reads a ring-closure number at s[i]: a digit, %nn, or RDKit's %(n...).
func ringNumber(s string, i int) (num, next int, err error) {
	if s[i] != '%' {
		return int(s[i] - '0'), i + 1, nil
	}
	digits := func(t string) (int, bool) {
		if t == "" || len(t) > 5 {
			return 0, false
		}
		n := 0
		for j := 0; j < len(t); j++ {
			if t[j] < '0' || t[j] > '9' {
				return 0, false
			}
			n = n*10 + int(t[j]-'0')
		}
		return n, true
	}
	if strings.HasPrefix(s[i:], "%(") {
		end := strings.IndexByte(s[i:], ')')
		if n, ok := digits(s[i+2 : i+max(end, 2)]); end > 0 && ok {
			return n, i + end + 1, nil
		}
		return 0, 0, fmt.Errorf("'%%(' must hold a ring number and be closed by ')'")
	}
	if i+3 <= len(s) {
		if n, ok := digits(s[i+1 : i+3]); ok {
			return n, i + 3, nil
		}
	}
	return 0, 0, fmt.Errorf("'%%' must be followed by two digits")
}

// chiralClasses are the letters of OpenSMILES's extended chirality, as in @TH1 or @OH12.
var chiralClasses = map[string]bool{"TH": true, "AL": true, "SP": true, "TB": true, "OH": true}

// bracketAtom checks the inside of a bracket atom, [isotope? symbol chiral? hcount?
// charge? class?], and returns its element symbol.
func bracketAtom(t string) (string, error) {
	i := 0
	for i < len(t) && '0' <= t[i] && t[i] <= '9' {
		i++
	}
	sym := ""
	for _, l := range []int{2, 1} {
		if i+l <= len(t) && elements[t[i:i+l]] {
			sym = t[i : i+l]
			break
		}
	}
	if sym == "" {
		if i == len(t) {
			return "", fmt.Errorf("has no element symbol")
		}
		return "", fmt.Errorf("%q does not start an element symbol", t[i:])
	}
	i += len(sym)
	if i < len(t) && t[i] == '@' {
		i++
		switch {
		case i < len(t) && t[i] == '@':
			i++
		case i+2 <= len(t) && chiralClasses[t[i:i+2]]:
			i += 2
			for i < len(t) && '0' <= t[i] && t[i] <= '9' {
				i++
			}
		}
	}
	if i < len(t) && t[i] == 'H' {
		i++
		if i < len(t) && '0' <= t[i] && t[i] <= '9' {
			i++
		}
	}
	if i < len(t) && (t[i] == '+' || t[i] == '-') {
		sign := t[i]
		i++
		switch {
		case i < len(t) && t[i] == sign: // ++ and the like, which RDKit still reads
			for i < len(t) && t[i] == sign {
				i++
			}
		default:
			for i < len(t) && '0' <= t[i] && t[i] <= '9' {
				i++
			}
		}
	}
	if i < len(t) && t[i] == ':' {
		i++
		start := i
		for i < len(t) && '0' <= t[i] && t[i] <= '9' {
			i++
		}
		if i == start {
			return "", fmt.Errorf("':' must be followed by an atom class number")
		}
	}
	if i != len(t) {
		return "", fmt.Errorf("unexpected %q after the element", t[i:])
	}
	return sym, nil
}
