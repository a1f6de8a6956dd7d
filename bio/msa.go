package bio

import (
	"fmt"
	"strconv"
	"strings"
)

// alignedLetters are the match-state letters an alignment row may hold: Boltz's protein
// letters (J included, read as unknown) and '-' for a gap. Lower-case letters are
// insertions and take no column.
const alignedLetters = "ACDEFGHIKLMNPQRSTVWYXBZUOJ-"

// inlineMSA reads an alignment sent inline for a protein chain: A3M when its first line
// that is not blank or a '#' comment is a '>' header, Boltz's CSV when it is the header
// row "key,sequence". It returns the format.
func inlineMSA(text, query string) (string, error) {
	for line := range strings.Lines(text) {
		t := strings.TrimSpace(line)
		switch {
		case t == "" || strings.HasPrefix(t, "#"):
			continue
		case strings.HasPrefix(t, ">"):
			return A3M, checkA3M(text, query)
		case t == "key,sequence" || t == "sequence,key":
			return CSV, checkMSACSV(text, query)
		}
		break
	}
	return "", fmt.Errorf("an inline alignment is A3M (starting with a '>' header line) or CSV (starting with the row key,sequence)")
}

// checkA3M checks A3M text as Boltz reads it: '>' lines are headers, '#' lines comments,
// and every other line is one aligned sequence, so a sequence must not be wrapped.
func checkA3M(text, query string) error {
	n, rows := 0, 0
	for line := range strings.Lines(text) {
		n++
		t := strings.TrimSpace(line)
		if t == "" || t[0] == '#' || t[0] == '>' {
			continue
		}
		if err := checkAlignedRow(t, query, rows == 0); err != nil {
			return fmt.Errorf("alignment line %d: %v", n, err)
		}
		rows++
	}
	if rows == 0 {
		return fmt.Errorf("the alignment has no sequence")
	}
	return nil
}

// checkMSACSV checks Boltz's alignment CSV: a header naming the key and sequence
// columns, then one row per aligned sequence; rows of several chains with the same
// integer key are paired, and an empty key pairs with nothing.
func checkMSACSV(text, query string) error {
	n, rows := 0, 0
	keyCol := -1
	for line := range strings.Lines(text) {
		n++
		t := strings.TrimSpace(line)
		if t == "" {
			continue
		}
		fields := strings.Split(t, ",")
		if keyCol < 0 {
			keyCol = 0
			if fields[0] == "sequence" {
				keyCol = 1
			}
			continue
		}
		if len(fields) != 2 {
			return fmt.Errorf("alignment line %d: has %d fields; each row is key,sequence", n, len(fields))
		}
		// pandas, which reads the file for Boltz, would keep spaces as part of a field.
		if strings.ContainsAny(t, " \t") {
			return fmt.Errorf("alignment line %d: CSV fields take no spaces", n)
		}
		key, seq := fields[keyCol], fields[1-keyCol]
		if _, err := strconv.Atoi(key); key != "" && err != nil {
			return fmt.Errorf("alignment line %d: key %q is not an integer", n, key)
		}
		if err := checkAlignedRow(seq, query, rows == 0); err != nil {
			return fmt.Errorf("alignment line %d: %v", n, err)
		}
		rows++
	}
	if rows == 0 {
		return fmt.Errorf("the alignment has no sequence")
	}
	return nil
}

// checkAlignedRow checks one aligned sequence against the chain's sequence: the first row
// must be the chain's sequence itself, and every row must have one column per residue.
func checkAlignedRow(row, query string, first bool) error {
	cols := 0
	for i := 0; i < len(row); i++ {
		c := row[i]
		switch {
		case 'a' <= c && c <= 'z':
		case strings.IndexByte(alignedLetters, c) >= 0:
			cols++
		default:
			return fmt.Errorf("%q is not an aligned residue (upper-case letters and '-' are columns, lower-case letters insertions)", c)
		}
	}
	if first && row != query {
		return fmt.Errorf("the first aligned sequence must be the chain's own sequence (the query), without gaps or insertions")
	}
	if cols != len(query) {
		return fmt.Errorf("the aligned sequence has %d columns and the chain %d residues; each aligned sequence must be on one line", cols, len(query))
	}
	return nil
}
