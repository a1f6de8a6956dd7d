// Package pdbfile writes a structure of mmCIF as a PDB file, for the engines of tools that
// write only mmCIF while the caller asked for output_format pdb. It reads the _atom_site
// loop of the first data block (every model the file holds, each as a MODEL), the way
// structure readers such as gemmi read it: author chain ids, residue numbers and names
// where the file has them, else the label ones. What the PDB format cannot hold (a chain
// id longer than one character, a residue name longer than three, an atom name longer
// than four, more than 99,999 atoms, residue numbers beyond 9999) is an error that says
// so, rather than a file that would be read differently.
// It imports nothing of chaperone's.
package pdbfile

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// FromMMCIF converts mmCIF text to PDB text.
func FromMMCIF(cif []byte) ([]byte, error) {
	cols, rows, err := atomSite(string(cif))
	if err != nil {
		return nil, err
	}
	col := func(names ...string) int {
		for _, n := range names {
			if i, ok := cols[n]; ok {
				return i
			}
		}
		return -1
	}
	var (
		group   = col("group_PDB")
		element = col("type_symbol")
		atom    = col("auth_atom_id", "label_atom_id")
		alt     = col("label_alt_id")
		resName = col("auth_comp_id", "label_comp_id")
		chain   = col("auth_asym_id", "label_asym_id")
		seq     = col("auth_seq_id", "label_seq_id")
		ins     = col("pdbx_PDB_ins_code")
		x, y, z = col("Cartn_x"), col("Cartn_y"), col("Cartn_z")
		occ     = col("occupancy")
		bFactor = col("B_iso_or_equiv")
		charge  = col("pdbx_formal_charge")
		model   = col("pdbx_PDB_model_num")
	)
	if atom < 0 || resName < 0 || chain < 0 || x < 0 || y < 0 || z < 0 {
		return nil, errors.New("the mmCIF's _atom_site has no atom names, residue names, chain ids or coordinates")
	}
	if len(rows) > 99999 {
		return nil, fmt.Errorf("the structure has %d atoms, and the PDB format holds at most 99,999", len(rows))
	}
	get := func(row []string, i int, def string) string {
		if i < 0 || row[i] == "." || row[i] == "?" {
			return def
		}
		return row[i]
	}
	var b strings.Builder
	models := map[string]bool{}
	multi := false
	if model >= 0 {
		for _, r := range rows {
			models[r[model]] = true
		}
		multi = len(models) > 1
	}
	curModel, lastChain, lastRecord, serial := "", "", "", 0
	ter := func() {
		if lastChain != "" && lastRecord == "ATOM" {
			serial++
			fmt.Fprintf(&b, "TER   %5d\n", serial)
		}
		lastChain = ""
	}
	for _, r := range rows {
		if multi && r[model] != curModel {
			if curModel != "" {
				ter()
				b.WriteString("ENDMDL\n")
			}
			curModel, serial = r[model], 0
			n, _ := strconv.Atoi(curModel)
			fmt.Fprintf(&b, "MODEL     %4d\n", n)
		}
		record := get(r, group, "ATOM")
		if record != "ATOM" && record != "HETATM" {
			record = "ATOM"
		}
		ch, name, res := get(r, chain, ""), get(r, atom, ""), get(r, resName, "")
		switch {
		case len(ch) != 1:
			return nil, fmt.Errorf("chain %q: the PDB format holds one character per chain id", ch)
		case len(res) > 3:
			return nil, fmt.Errorf("residue %s of chain %s: the PDB format holds residue names of up to 3 characters", res, ch)
		case len(name) > 4 || name == "":
			return nil, fmt.Errorf("atom %q of chain %s: the PDB format holds atom names of 1 to 4 characters", name, ch)
		}
		if ch != lastChain {
			ter()
		}
		resSeq, err := strconv.Atoi(get(r, seq, "1"))
		if err != nil || resSeq < -999 || resSeq > 9999 {
			return nil, fmt.Errorf("residue number %q of chain %s does not fit the PDB format", get(r, seq, ""), ch)
		}
		coords := [3]float64{}
		for i, c := range []int{x, y, z} {
			if coords[i], err = strconv.ParseFloat(r[c], 64); err != nil {
				return nil, fmt.Errorf("coordinate %q of atom %s: %v", r[c], name, err)
			}
		}
		o, _ := strconv.ParseFloat(get(r, occ, "1"), 64)
		bf, _ := strconv.ParseFloat(get(r, bFactor, "0"), 64)
		el := strings.ToUpper(get(r, element, ""))
		q := ""
		if c, err := strconv.Atoi(get(r, charge, "0")); err == nil && c != 0 {
			q = strconv.Itoa(abs(c)) + map[bool]string{true: "+", false: "-"}[c > 0]
		}
		serial++
		fmt.Fprintf(&b, "%-6s%5d %-4s%1s%3s %1s%4d%1s   %8.3f%8.3f%8.3f%6.2f%6.2f          %2s%2s\n",
			record, serial%100000, atomName(name, el), get(r, alt, ""), res, ch, resSeq, get(r, ins, ""),
			coords[0], coords[1], coords[2], o, bf, el, q)
		lastChain, lastRecord = ch, record
	}
	ter()
	if multi {
		b.WriteString("ENDMDL\n")
	}
	b.WriteString("END\n")
	return []byte(b.String()), nil
}

// atomName places an atom name in columns 13-16 as the PDB format does: a name of fewer
// than four characters whose element is one letter starts in column 14.
func atomName(name, element string) string {
	if len(name) < 4 && len(element) <= 1 {
		return " " + name
	}
	return name
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// atomSite reads the _atom_site loop of the first data block: its column names (without
// the category) by position, and its rows.
func atomSite(text string) (map[string]int, [][]string, error) {
	toks, err := tokens(text)
	if err != nil {
		return nil, nil, err
	}
	for i := 0; i < len(toks); i++ {
		if strings.ToLower(toks[i].text) != "loop_" || toks[i].quoted {
			continue
		}
		cols := map[string]int{}
		j := i + 1
		for ; j < len(toks) && !toks[j].quoted && strings.HasPrefix(toks[j].text, "_"); j++ {
			tag := toks[j].text
			if !strings.HasPrefix(strings.ToLower(tag), "_atom_site.") {
				cols = nil
				break
			}
			cols[tag[len("_atom_site."):]] = len(cols)
		}
		if cols == nil || len(cols) == 0 {
			continue
		}
		var rows [][]string
		for ; j+len(cols) <= len(toks) && !endOfLoop(toks[j]); j += len(cols) {
			row := make([]string, len(cols))
			for k := range row {
				row[k] = toks[j+k].text
			}
			rows = append(rows, row)
		}
		if j < len(toks) && !endOfLoop(toks[j]) {
			return nil, nil, errors.New("the mmCIF's _atom_site loop ends in the middle of a row")
		}
		return cols, rows, nil
	}
	return nil, nil, errors.New("the mmCIF has no _atom_site loop")
}

// endOfLoop reports whether a token ends a loop's values: a tag, loop_, data_ or save_.
func endOfLoop(t token) bool {
	if t.quoted {
		return false
	}
	l := strings.ToLower(t.text)
	return strings.HasPrefix(l, "_") || l == "loop_" || strings.HasPrefix(l, "data_") || strings.HasPrefix(l, "save_")
}

type token struct {
	text   string
	quoted bool
}

// tokens splits CIF text into tokens: whitespace-separated words, quoted strings (a quote
// ends a string only before whitespace), and text fields between lines that start with
// ';'. Comments are dropped. Only the first data block is read.
func tokens(text string) ([]token, error) {
	var toks []token
	blocks := 0
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	for n := 0; n < len(lines); n++ {
		line := lines[n]
		if strings.HasPrefix(line, ";") {
			var field []string
			field = append(field, line[1:])
			for n++; n < len(lines) && !strings.HasPrefix(lines[n], ";"); n++ {
				field = append(field, lines[n])
			}
			if n == len(lines) {
				return nil, errors.New("the mmCIF has a text field that does not end")
			}
			toks = append(toks, token{text: strings.Join(field, "\n"), quoted: true})
			continue
		}
		for i := 0; i < len(line); {
			c := line[i]
			switch {
			case c == ' ' || c == '\t':
				i++
			case c == '#':
				i = len(line)
			case c == '\'' || c == '"':
				end := i + 1
				for end < len(line) && !(line[end] == c && (end+1 == len(line) || line[end+1] == ' ' || line[end+1] == '\t')) {
					end++
				}
				if end == len(line) {
					return nil, fmt.Errorf("the mmCIF has a quoted value that does not end on line %d", n+1)
				}
				toks = append(toks, token{text: line[i+1 : end], quoted: true})
				i = end + 1
			default:
				end := i
				for end < len(line) && line[end] != ' ' && line[end] != '\t' {
					end++
				}
				word := line[i:end]
				if strings.HasPrefix(strings.ToLower(word), "data_") {
					blocks++
					if blocks > 1 {
						return toks, nil
					}
				}
				toks = append(toks, token{text: word})
				i = end
			}
		}
	}
	return toks, nil
}
