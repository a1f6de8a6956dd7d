package standin

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"

	"github.com/goccy/go-yaml"
)

// What the stand-ins read and write in the tools' formats, and the made-up numbers they
// fill them with.

// WriteJSON writes v as compact JSON.
func WriteJSON(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// WriteJSONIndent writes v as JSON indented by four spaces, as the tools' json.dump(…,
// indent=4) does.
func WriteJSONIndent(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "    ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// AppendFile adds text to the end of the file, which it makes when there is none, as a
// tool's log handler does.
func AppendFile(path, text string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// AtomSiteLoop is the head of an mmCIF file named name whose atom_site loop has these
// columns, as "group_PDB"; the rows follow it.
func AtomSiteLoop(name string, columns ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "data_%s\n#\nloop_\n", name)
	for _, c := range columns {
		b.WriteString("_atom_site." + c + "\n")
	}
	return b.String()
}

// ThreeLetter is the residue name of each of the twenty amino acids' letters.
var ThreeLetter = map[byte]string{'A': "ALA", 'R': "ARG", 'N': "ASN", 'D': "ASP", 'C': "CYS", 'Q': "GLN", 'E': "GLU",
	'G': "GLY", 'H': "HIS", 'I': "ILE", 'L': "LEU", 'K': "LYS", 'M': "MET", 'F': "PHE", 'P': "PRO", 'S': "SER", 'T': "THR",
	'W': "TRP", 'Y': "TYR", 'V': "VAL"}

// Random gives made-up numbers in [0, 1) for a name, the same each time: the i-th of 32.
func Random(name string) func(i int) float64 {
	h := sha256.Sum256([]byte(name))
	return func(i int) float64 { return float64(h[i%32]) / 256 }
}

// Round keeps four decimals of a made-up number, so that it reads as the tools write one.
func Round(f float64) float64 { return math.Round(f*10000) / 10000 }

// Ranked is the order the tools rank samples in: the indices of scores, highest first,
// equal scores in their own order (Python's stable sort).
func Ranked(scores []float64) []int {
	order := make([]int, len(scores))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return scores[order[a]] > scores[order[b]] })
	return order
}

// ParseA3M reads an A3M alignment: the header of each record (without its '>') and its
// sequence lines joined, with the lower-case letters of insertions left out, so that every
// row is aligned to the query. Blank lines and '#' comments are passed over, and so is a
// sequence line before any header, which err then reports.
func ParseA3M(text string) (headers, rows []string, err error) {
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, ">"):
			headers = append(headers, line[1:])
			rows = append(rows, "")
		case len(rows) == 0:
			err = fmt.Errorf("IndexError: list index out of range (a sequence line before any header)")
		default:
			rows[len(rows)-1] += strings.Map(func(r rune) rune {
				if r >= 'a' && r <= 'z' {
					return -1
				}
				return r
			}, line)
		}
	}
	return headers, rows, err
}

// ReadYAML reads a YAML file as a document of keys.
func ReadYAML(path string) (map[string]any, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("yaml: %v", err)
	}
	return doc, nil
}
