package main

// How the stand-in reads the alignment files an input names, as Boltz's process_input
// does before it predicts (main.py:600-627, data/parse/csv.py, data/parse/a3m.py).

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// msaRow is one sequence of an alignment as Boltz keeps it (data/types.py, MSA): its key,
// which Boltz calls the row's taxonomy and pairs rows of equal key across chains by (-1
// pairs with nothing), and its aligned residues, insertions left out.
type msaRow struct {
	Key      int    `json:"key"`
	Sequence string `json:"sequence"`
}

// protLetters are the residue letters Boltz reads in an alignment (const.py,
// prot_letter_to_token), the gap included.
const protLetters = "ARNDCQEGHILKMFPSTWYVXJBZUO-"

// readMSA reads an alignment file as parse_csv and parse_a3m do: the rows in order, blank
// ones skipped, a row whose residues (without gaps, upper-cased) repeat an earlier row's
// left out, at most maxSeqs rows kept. A CSV row's key is its key column, -1 when empty;
// every row of an A3M has key -1 (Boltz reads no taxonomy for an input's A3M).
func readMSA(path string, maxSeqs int) ([]msaRow, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rows []msaRow
	switch {
	case strings.HasSuffix(path, ".csv"):
		rows, err = csvRows(string(b))
	case strings.HasSuffix(path, ".a3m"):
		rows = a3mRows(string(b))
	default:
		return nil, fmt.Errorf("MSA file %s not supported, only a3m or csv.", path)
	}
	if err != nil {
		return nil, err
	}
	var out []msaRow
	seen := map[string]bool{}
	for _, r := range rows {
		r.Sequence = strings.TrimSpace(r.Sequence)
		if r.Sequence == "" {
			continue
		}
		residues := strings.ToUpper(strings.ReplaceAll(r.Sequence, "-", ""))
		if seen[residues] {
			continue
		}
		seen[residues] = true
		var aligned strings.Builder
		for _, c := range r.Sequence {
			switch {
			case c != '-' && c >= 'a' && c <= 'z': // an insertion, which takes no column
			case strings.ContainsRune(protLetters, c):
				aligned.WriteRune(c)
			default:
				return nil, fmt.Errorf("KeyError: '%c'", c)
			}
		}
		r.Sequence = aligned.String()
		out = append(out, r)
		if len(out) >= maxSeqs {
			break
		}
	}
	return out, nil
}

// csvRows reads Boltz's alignment CSV as pandas.read_csv does for it: a header naming the
// columns key and sequence, in either order, then a row per line.
func csvRows(text string) ([]msaRow, error) {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	header := strings.Split(strings.TrimSpace(lines[0]), ",")
	if len(header) != 2 || !(header[0] == "key" && header[1] == "sequence" || header[0] == "sequence" && header[1] == "key") {
		return nil, fmt.Errorf("Invalid CSV format, expected columns: ['sequence', 'key']")
	}
	keyCol := 0
	if header[0] == "sequence" {
		keyCol = 1
	}
	var rows []msaRow
	for n, line := range lines[1:] {
		if strings.TrimSpace(line) == "" {
			continue
		}
		fields := strings.Split(line, ",")
		if len(fields) != 2 {
			return nil, fmt.Errorf("ParserError: Error tokenizing data. C error: Expected 2 fields in line %d, saw %d", n+2, len(fields))
		}
		key := -1
		if k := strings.TrimSpace(fields[keyCol]); k != "" {
			var err error
			if key, err = strconv.Atoi(k); err != nil {
				return nil, fmt.Errorf("the stand-in reads only integer keys, not %q", k)
			}
		}
		rows = append(rows, msaRow{Key: key, Sequence: fields[1-keyCol]})
	}
	return rows, nil
}

// a3mRows reads an A3M as parse_a3m does: '>' lines are headers, '#' lines comments, and
// every other line is one aligned sequence.
func a3mRows(text string) []msaRow {
	var rows []msaRow
	for line := range strings.Lines(text) {
		t := strings.TrimSpace(line)
		if t == "" || t[0] == '#' || t[0] == '>' {
			continue
		}
		rows = append(rows, msaRow{Key: -1, Sequence: t})
	}
	return rows
}
