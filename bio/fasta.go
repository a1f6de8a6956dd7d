package bio

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Record is one FASTA entry.
type Record struct {
	// ID is the first word of the header, the part tools use as the sequence's name.
	ID string
	// Description is the rest of the header line, trimmed; often empty.
	Description string
	// Sequence is every sequence line of the record joined, with all whitespace removed and
	// letters kept as written; CheckProtein decides whether they are residues.
	Sequence string
}

// ParseFASTA reads FASTA text. It accepts LF or CRLF line ends, blank lines anywhere, and
// lines starting with ';' as comments (the old FASTA convention). Lines are trimmed before
// they are read, so an indented '>' still starts a header. Text with no record, invalid
// UTF-8, sequence data before the first header, a header without an id and a record without
// sequence are errors that name their 1-based line.
func ParseFASTA(text string) ([]Record, error) {
	records, _, err := parseFASTA(text)
	return records, err
}

// parseFASTA is ParseFASTA that also returns the line of each record's header.
func parseFASTA(text string) ([]Record, []int, error) {
	var (
		records []Record
		lines   []int
		seq     strings.Builder
		header  int // line of the open record's header; 0 when no record is open
	)
	closeRecord := func() error {
		if header == 0 {
			return nil
		}
		r := &records[len(records)-1]
		if seq.Len() == 0 {
			return fmt.Errorf("line %d: record %q has no sequence", header, r.ID)
		}
		r.Sequence = seq.String()
		seq.Reset()
		return nil
	}
	n := 0 // 1-based number of the current line
	for line := range strings.SplitSeq(text, "\n") {
		n++
		if !utf8.ValidString(line) {
			// Whitespace removal could otherwise join stray bytes into new characters.
			return nil, nil, fmt.Errorf("line %d: not valid UTF-8 text", n)
		}
		line = strings.TrimSpace(line) // also drops the '\r' of CRLF
		switch {
		case line == "" || line[0] == ';':
			continue
		case line[0] == '>':
			if err := closeRecord(); err != nil {
				return nil, nil, err
			}
			rest := strings.TrimSpace(line[1:])
			id, desc := rest, ""
			if k := strings.IndexFunc(rest, unicode.IsSpace); k >= 0 {
				id, desc = rest[:k], strings.TrimSpace(rest[k:])
			}
			if id == "" {
				return nil, nil, fmt.Errorf("line %d: header has no id (write >name before any description)", n)
			}
			records = append(records, Record{ID: id, Description: desc})
			lines = append(lines, n)
			header = n
		default:
			if header == 0 {
				return nil, nil, fmt.Errorf("line %d: sequence data before the first '>' header", n)
			}
			for _, f := range strings.Fields(line) {
				seq.WriteString(f)
			}
		}
	}
	if err := closeRecord(); err != nil {
		return nil, nil, err
	}
	if len(records) == 0 {
		return nil, nil, fmt.Errorf("no FASTA record (a record starts with a '>' header line)")
	}
	return records, lines, nil
}
