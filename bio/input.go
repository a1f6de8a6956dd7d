package bio

import (
	"fmt"
	"strings"
)

// ParseInput reads one prediction target into a Complex named name. The text is FASTA
// when its first line that is neither blank nor a ';' comment starts with '>', and a
// Boltz YAML document otherwise. Errors are *Error, placed at the line (and for YAML the
// column) of the problem.
func ParseInput(name, text string) (*Complex, error) {
	for line := range strings.Lines(text) {
		t := strings.TrimSpace(line)
		if t == "" || t[0] == ';' {
			continue
		}
		if t[0] == '>' {
			return parseFASTAComplex(name, text)
		}
		break
	}
	return parseBoltzYAML(name, text)
}

// ProteinComplex is the complex of one protein chain, A, with the given sequence (checked
// and cleaned as CheckProtein does).
func ProteinComplex(name, sequence string) (*Complex, error) {
	seq, err := CheckProtein(sequence)
	if err != nil {
		return nil, err
	}
	return &Complex{Name: name, Entities: []Entity{{Kind: Protein, IDs: []string{"A"}, Sequence: seq}}}, nil
}

// maxChainID is the longest chain id: Boltz stores chain names in five characters.
const maxChainID = 5

// checkChainID checks a chain id: 1 to 5 ASCII letters or digits, as every structure
// format can carry.
func checkChainID(id string) error {
	if id == "" {
		return fmt.Errorf("chain id is empty")
	}
	if len(id) > maxChainID || !alnum(id) {
		return fmt.Errorf("chain id %q must be 1 to %d ASCII letters or digits", id, maxChainID)
	}
	return nil
}

// ccdCode checks a CCD code (1 to 5 letters or digits) and returns it upper-cased, as the
// Chemical Component Dictionary spells them.
func ccdCode(code string) (string, error) {
	if code == "" || len(code) > 5 || !alnum(code) {
		return "", fmt.Errorf("CCD code %q must be 1 to 5 ASCII letters or digits, like SAH", code)
	}
	return strings.ToUpper(code), nil
}

func alnum(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// chainTable remembers which entity owns each chain id while a complex is read, so a
// duplicate names both places and references can be resolved.
type chainTable map[string]chainRef

type chainRef struct {
	entity int // index into Complex.Entities
	pos    Pos // where the id was written
}

// add claims a chain id for an entity, refusing an id that is malformed or taken.
func (t chainTable) add(id string, entity int, pos Pos) error {
	if err := checkChainID(id); err != nil {
		return Errorf(pos, "%v", err)
	}
	if prev, taken := t[id]; taken {
		if prev.pos.Line > 0 {
			return Errorf(pos, "chain id %q is already used at line %d; every chain needs its own id", id, prev.pos.Line)
		}
		return Errorf(pos, "chain id %q is already used; every chain needs its own id", id)
	}
	t[id] = chainRef{entity: entity, pos: pos}
	return nil
}
