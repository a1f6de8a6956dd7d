package bio

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// readMMCIF reads the _atom_site loop of the first data block of mmCIF text.
func readMMCIF(text string) (*Structure, error) {
	cols, rows, err := atomSiteLoop(text)
	if err != nil {
		return nil, err
	}
	col := func(names ...string) int {
		for _, n := range names {
			if i := slices.Index(cols, "_atom_site."+strings.ToLower(n)); i >= 0 {
				return i
			}
		}
		return -1
	}
	iComp, iAsym, iSeq := col("auth_comp_id", "label_comp_id"), col("auth_asym_id", "label_asym_id"), col("auth_seq_id", "label_seq_id")
	iLabelAsym, iLabelSeq, iICode := col("label_asym_id"), col("label_seq_id"), col("pdbx_PDB_ins_code")
	iModel, iElement, iGroup := col("pdbx_PDB_model_num"), col("type_symbol"), col("group_PDB")
	for _, need := range []struct {
		i    int
		name string
	}{{iComp, "label_comp_id"}, {iAsym, "auth_asym_id or label_asym_id"}, {iSeq, "auth_seq_id or label_seq_id"}} {
		if need.i < 0 {
			return nil, &Error{Msg: "the _atom_site loop has no _atom_site." + need.name}
		}
	}
	b := newBuilder(MMCIF)
	models := map[string]bool{}
	first := ""
	for _, row := range rows {
		v := func(i int) string {
			if i < 0 {
				return ""
			}
			return unknownAsEmpty(row.values[i])
		}
		if m := v(iModel); m != "" {
			models[m] = true
			if first == "" {
				first = m
			}
			if m != first {
				continue
			}
		}
		if e := strings.ToUpper(v(iElement)); e == "H" || e == "D" {
			continue
		}
		pos := Pos{Line: row.line}
		num, err := strconv.Atoi(v(iSeq))
		if err != nil {
			if v(iSeq) == "" {
				return nil, Errorf(pos, "atom without a residue number (auth_seq_id)")
			}
			return nil, Errorf(pos, "residue number %q is not a number", v(iSeq))
		}
		chain, name := v(iAsym), v(iComp)
		if chain == "" || name == "" {
			return nil, Errorf(pos, "atom without a chain id or residue name")
		}
		r := Residue{Num: num, ICode: v(iICode), Name: name}
		polymer := false
		if s := v(iLabelSeq); s != "" {
			if r.LabelSeq, err = strconv.Atoi(s); err != nil {
				return nil, Errorf(pos, "label_seq_id %q is not a number", s)
			}
			polymer = true
		} else if iLabelSeq < 0 {
			// Without label_seq_id, only the group tells polymer from ligand.
			polymer = v(iGroup) != "HETATM" || knownResidue(name)
		}
		label := v(iLabelAsym)
		if label == "" {
			label = chain
		}
		b.atom(chain, label, r, polymer)
	}
	b.s.Models = max(len(models), 1)
	b.s.PolymerSequences = entityPolySeq.MatchString(text)
	return b.s, nil
}

// entityPolySeq finds a tag of the _entity_poly_seq category at the start of a line.
var entityPolySeq = regexp.MustCompile(`(?mi)^[ \t]*_entity_poly_seq\.`)

// unknownAsEmpty reads CIF's "?" (unknown) and "." (not applicable) as no value.
func unknownAsEmpty(s string) string {
	if s == "?" || s == "." {
		return ""
	}
	return s
}

type cifRow struct {
	line   int
	values []string
}

// atomSiteLoop returns the column names and rows of the first data block's _atom_site
// loop. Values are CIF 1.1 tokens: bare words, 'single' or "double" quoted strings, and
// ;-delimited text fields.
func atomSiteLoop(text string) ([]string, []cifRow, error) {
	t := &cifTokens{text: text, line: 1}
	var (
		cols           []string // the current loop's columns
		rows           []cifRow
		cur            []string // values of the row being read
		curLine        int
		inLoop, header bool // in a loop; still reading its column names
		atomSite       bool // the current loop is _atom_site
		blocks         int
	)
	done := func() bool { return atomSite && (len(rows) > 0 || len(cur) > 0) }
	for {
		tok, quoted, line, err := t.next()
		if err != nil {
			return nil, nil, err
		}
		if tok == "" && !quoted {
			break
		}
		lower := strings.ToLower(tok)
		word := !quoted
		switch {
		case word && (strings.HasPrefix(lower, "data_") || lower == "loop_" || strings.HasPrefix(tok, "_")) && done():
			return finishLoop(cols, rows, cur, curLine)
		case word && strings.HasPrefix(lower, "data_"):
			if blocks++; blocks > 1 {
				return nil, nil, &Error{Msg: "the mmCIF text has no _atom_site loop in its first data block"}
			}
			inLoop, atomSite = false, false
		case word && lower == "loop_":
			inLoop, header, atomSite, cols = true, true, false, nil
		case word && strings.HasPrefix(tok, "_"):
			if !inLoop || !header {
				if strings.HasPrefix(lower, "_atom_site.") {
					return nil, nil, Errorf(Pos{Line: line}, "_atom_site is not a loop; a structure needs one row per atom")
				}
				// A single item: its value follows.
				inLoop = false
				if _, _, _, err := t.next(); err != nil {
					return nil, nil, err
				}
				continue
			}
			if len(cols) == 0 {
				atomSite = strings.HasPrefix(lower, "_atom_site.")
			}
			cols = append(cols, lower)
		case inLoop:
			header = false
			if !atomSite {
				continue
			}
			if len(cur) == 0 {
				curLine = line
			}
			cur = append(cur, tok)
			if len(cur) == len(cols) {
				rows = append(rows, cifRow{line: curLine, values: cur})
				cur = nil
			}
		}
	}
	if !done() {
		return nil, nil, &Error{Msg: "the mmCIF text has no _atom_site rows"}
	}
	return finishLoop(cols, rows, cur, curLine)
}

func finishLoop(cols []string, rows []cifRow, cur []string, curLine int) ([]string, []cifRow, error) {
	if len(cur) > 0 {
		return nil, nil, Errorf(Pos{Line: curLine}, "the _atom_site loop ends inside a row: %d values of the %d columns", len(cur), len(cols))
	}
	return cols, rows, nil
}

// cifTokens splits CIF text into tokens, counting lines.
type cifTokens struct {
	text string
	i    int
	line int
}

// next returns the next token and the line it starts on; ("", false) at the end. A quoted
// token may be empty, so quoted tells it from the end.
func (t *cifTokens) next() (tok string, quoted bool, line int, err error) {
	s := t.text
	for t.i < len(s) {
		c := s[t.i]
		switch {
		case c == '\n':
			t.line++
			t.i++
		case c == ' ' || c == '\t' || c == '\r':
			t.i++
		case c == '#':
			for t.i < len(s) && s[t.i] != '\n' {
				t.i++
			}
		case c == ';' && (t.i == 0 || s[t.i-1] == '\n'):
			start, line := t.i+1, t.line
			end := strings.Index(s[start:], "\n;")
			if end < 0 {
				return "", false, 0, Errorf(Pos{Line: line}, "a text field opened with ; is never closed")
			}
			body := s[start : start+end]
			t.line += strings.Count(body, "\n") + 1
			t.i = start + end + 2
			return strings.TrimRight(body, "\r"), true, line, nil
		case c == '\'' || c == '"':
			// A quote closes only where whitespace or the end follows it (CIF 1.1).
			line := t.line
			for j := t.i + 1; j < len(s); j++ {
				if s[j] == '\n' {
					break
				}
				if s[j] == c && (j+1 == len(s) || s[j+1] == ' ' || s[j+1] == '\t' || s[j+1] == '\r' || s[j+1] == '\n') {
					tok := s[t.i+1 : j]
					t.i = j + 1
					return tok, true, line, nil
				}
			}
			return "", false, 0, Errorf(Pos{Line: line}, "a quoted value (%c) is not closed on its line", c)
		default:
			start := t.i
			for t.i < len(s) && !strings.ContainsRune(" \t\r\n", rune(s[t.i])) {
				t.i++
			}
			return s[start:t.i], false, t.line, nil
		}
	}
	return "", false, t.line, nil
}
