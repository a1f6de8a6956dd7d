package bio

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Structure formats that StructureFormat recognises.
const (
	PDB   = "pdb"
	MMCIF = "cif"
)

// StructureFormat is a first look at structure text: MMCIF when its first data line opens a
// data_ block and it has _atom_site records, PDB when it has ATOM or HETATM records, and ""
// when it looks like neither. It does not check coordinates; it stops a pasted FASTA, an
// empty file or a binary upload before a design job is queued on it.
func StructureFormat(text string) string {
	first := true
	cif, atomSite, pdb := false, false, false
	for line := range strings.Lines(text) {
		t := strings.TrimSpace(line)
		if t == "" {
			continue
		}
		if first && t[0] != '#' {
			cif = strings.HasPrefix(t, "data_")
			first = false
		}
		switch {
		case strings.HasPrefix(t, "_atom_site."):
			atomSite = true
		case strings.HasPrefix(line, "ATOM ") || strings.HasPrefix(line, "HETATM"):
			pdb = true
		}
	}
	switch {
	case cif && atomSite:
		return MMCIF
	case pdb:
		return PDB
	}
	return ""
}

// Structure is what a design needs to know of a PDB or mmCIF structure: its chains and
// their residues, as the first model has them. Coordinates are not kept.
type Structure struct {
	Format string // PDB or MMCIF
	Models int    // models in the file (MODEL records, pdbx_PDB_model_num); 1 without any
	// Chains are the first model's chains by author chain id, in file order.
	Chains []*StructureChain
	// Waters counts the water residues of the first model, which belong to no chain here.
	Waters int
	// PolymerSequences says an mmCIF has the _entity_poly_seq loop of its polymers'
	// sequences, which some readers need (BoltzGen's, for one).
	PolymerSequences bool
}

// StructureChain is one chain of a structure under its author chain id (the PDB chain
// column, mmCIF's auth_asym_id), which is how RFdiffusion3 contigs name chains.
type StructureChain struct {
	ID string
	// LabelIDs are the mmCIF label_asym_ids whose atoms carry this author id, in file
	// order: the polymer's and its ligands'. For PDB text it is just ID.
	LabelIDs []string
	// Kind is the polymer kind of Residues (Protein, DNA or RNA, by most residues), or
	// Ligand for a chain without polymer residues.
	Kind Kind
	// Residues are the polymer residues in file order: in mmCIF those with a
	// label_seq_id, in PDB those before the chain's TER record (every one without TER)
	// that are not water and, for HETATM records, are a known residue of a polymer.
	Residues []Residue
	// Ligands are the chain's other residues, waters excepted.
	Ligands []Residue
}

// Residue is one residue of a structure chain.
type Residue struct {
	Num   int    // author residue number
	ICode string // insertion code, "" for none
	Name  string // residue (component) name, for example ALA or DG
	// LabelSeq is the 1-based mmCIF label_seq_id of a polymer residue, or for PDB text
	// its 1-based position in the chain's Residues; 0 for a ligand.
	LabelSeq int
}

// String is the residue as a contig names it, with its insertion code: 52 or 52A.
func (r Residue) String() string { return strconv.Itoa(r.Num) + r.ICode }

// Chain returns the chain with the author id.
func (s *Structure) Chain(id string) (*StructureChain, bool) {
	i := slices.IndexFunc(s.Chains, func(c *StructureChain) bool { return c.ID == id })
	if i < 0 {
		return nil, false
	}
	return s.Chains[i], true
}

// ChainByAnyID returns the chain whose author id or one of whose label ids is id, for a
// spec that may name it by either (BoltzGen takes a PDB's author ids and an mmCIF's label
// ids: ParseDesignSpec checks which).
func (s *Structure) ChainByAnyID(id string) (*StructureChain, bool) {
	if c, ok := s.Chain(id); ok {
		return c, true
	}
	for _, c := range s.Chains {
		if slices.Contains(c.LabelIDs, id) {
			return c, true
		}
	}
	return nil, false
}

// Numbered returns the chain's residues (polymer, then ligands) numbered num, with any
// insertion code.
func (c *StructureChain) Numbered(num int) []Residue {
	var out []Residue
	for _, r := range c.Residues {
		if r.Num == num {
			out = append(out, r)
		}
	}
	for _, r := range c.Ligands {
		if r.Num == num {
			out = append(out, r)
		}
	}
	return out
}

// Sequence is the chain's polymer sequence in one-letter codes, X for a residue it does
// not know.
func (c *StructureChain) Sequence() string {
	var b strings.Builder
	for _, r := range c.Residues {
		b.WriteByte(oneLetter(r.Name, c.Kind))
	}
	return b.String()
}

// ReadStructure reads PDB or mmCIF text (see StructureFormat) into its chains. It reads
// the first model only; altloc copies of an atom, hydrogens and waters add no residue.
// Errors name the line. It is written for what callers paste: a whole structure of up to a
// few MB, read once at submit.
func ReadStructure(text string) (*Structure, error) {
	var s *Structure
	var err error
	switch StructureFormat(text) {
	case PDB:
		s, err = readPDB(text)
	case MMCIF:
		s, err = readMMCIF(text)
	default:
		return nil, &Error{Msg: "is neither PDB text (ATOM or HETATM records) nor mmCIF text (a data_ block with _atom_site records)"}
	}
	if err != nil {
		return nil, err
	}
	if len(s.Chains) == 0 {
		return nil, &Error{Msg: "holds no residues other than water"}
	}
	for _, c := range s.Chains {
		c.Kind = polymerKind(c.Residues)
	}
	return s, nil
}

// builder collects atoms, one residue at a time, into the chains of a structure.
type builder struct {
	s      *Structure
	chains map[string]*StructureChain
	labels map[[2]string]bool // (chain, label id) pairs seen
	seen   map[residueKey]bool
}

type residueKey struct {
	chain, icode string
	num          int
	polymer      bool
	water        bool
}

func newBuilder(format string) *builder {
	return &builder{s: &Structure{Format: format, Models: 1}, chains: map[string]*StructureChain{},
		labels: map[[2]string]bool{}, seen: map[residueKey]bool{}}
}

// atom adds one atom's residue: a new residue unless it is the one before, or one the chain
// already has (altloc copies written apart, atoms of a residue interrupted by another).
func (b *builder) atom(chain, label string, r Residue, polymer bool) {
	if isWater(r.Name) {
		k := residueKey{chain: chain, icode: r.ICode, num: r.Num, water: true}
		if !b.seen[k] {
			b.seen[k] = true
			b.s.Waters++
		}
		return
	}
	c, ok := b.chains[chain]
	if !ok {
		c = &StructureChain{ID: chain}
		b.chains[chain] = c
		b.s.Chains = append(b.s.Chains, c)
	}
	if !b.labels[[2]string{chain, label}] {
		b.labels[[2]string{chain, label}] = true
		c.LabelIDs = append(c.LabelIDs, label)
	}
	k := residueKey{chain: chain, icode: r.ICode, num: r.Num, polymer: polymer}
	if b.seen[k] {
		return
	}
	b.seen[k] = true
	if polymer {
		c.Residues = append(c.Residues, r)
	} else {
		r.LabelSeq = 0
		c.Ligands = append(c.Ligands, r)
	}
}

// readPDB reads the ATOM and HETATM records of PDB text (fixed columns of the PDB format
// v3.3: name 13-16, altLoc 17, resName 18-20, chainID 22, resSeq 23-26, iCode 27, element
// 77-78), up to the first ENDMDL.
func readPDB(text string) (*Structure, error) {
	b := newBuilder(PDB)
	ended := map[string]bool{} // chains whose TER record was read
	models, inFirst := 0, true
	n := 0
	for line := range strings.Lines(text) {
		n++
		line = strings.TrimRight(line, "\r\n")
		switch record(line) {
		case "MODEL":
			models++
		case "ENDMDL":
			inFirst = false
		case "TER":
			if inFirst && len(line) >= 22 {
				ended[string(line[21])] = true
			}
		case "ATOM", "HETATM":
			if !inFirst {
				continue
			}
			if len(line) < 27 {
				return nil, Errorf(Pos{Line: n}, "the %s record is %d characters long; the PDB format needs at least 27 (to the insertion code)", record(line), len(line))
			}
			if isHydrogenPDB(line) {
				continue
			}
			num, err := strconv.Atoi(strings.TrimSpace(line[22:26]))
			if err != nil {
				return nil, Errorf(Pos{Line: n, Column: 23}, "residue number %q is not a number", strings.TrimSpace(line[22:26]))
			}
			chain := strings.TrimSpace(line[21:22]) // blank in old files: a chain no contig can name
			name := strings.TrimSpace(line[17:20])
			if name == "" {
				return nil, Errorf(Pos{Line: n, Column: 18}, "the residue name is blank")
			}
			r := Residue{Num: num, ICode: strings.TrimSpace(line[26:27]), Name: name}
			polymer := !ended[chain] && (record(line) == "ATOM" || knownResidue(name))
			if polymer {
				if c, ok := b.chains[chain]; ok {
					r.LabelSeq = len(c.Residues) + 1
				} else {
					r.LabelSeq = 1
				}
			}
			b.atom(chain, chain, r, polymer)
		}
	}
	b.s.Models = max(models, 1)
	return b.s, nil
}

// record is the record name of a PDB line: its first six columns, trimmed.
func record(line string) string {
	return strings.TrimSpace(line[:min(6, len(line))])
}

func isHydrogenPDB(line string) bool {
	if len(line) >= 78 {
		if e := strings.TrimSpace(line[76:78]); e != "" {
			return e == "H" || e == "D"
		}
	}
	name := strings.TrimSpace(line[12:16])
	return name != "" && (name[0] == 'H' || name[0] == 'D') && len(line[12:16]) == 4 && line[12] != ' '
}

func isWater(name string) bool {
	return name == "HOH" || name == "WAT" || name == "DOD" || name == "H2O"
}

// Residue names by polymer kind: the standard residues and the modified ones that PDB
// entries most often carry inside chains.
var (
	aminoAcids = map[string]byte{
		"ALA": 'A', "ARG": 'R', "ASN": 'N', "ASP": 'D', "CYS": 'C', "GLN": 'Q', "GLU": 'E', "GLY": 'G',
		"HIS": 'H', "ILE": 'I', "LEU": 'L', "LYS": 'K', "MET": 'M', "PHE": 'F', "PRO": 'P', "SER": 'S',
		"THR": 'T', "TRP": 'W', "TYR": 'Y', "VAL": 'V', "SEC": 'U', "PYL": 'O', "UNK": 'X',
		"MSE": 'M', "SEP": 'S', "TPO": 'T', "PTR": 'Y', "HYP": 'P', "MLY": 'K', "CSO": 'C', "KCX": 'K',
	}
	deoxyNucleotides = map[string]byte{"DA": 'A', "DC": 'C', "DG": 'G', "DT": 'T', "DI": 'I', "DU": 'U', "DN": 'N'}
	nucleotides      = map[string]byte{"A": 'A', "C": 'C', "G": 'G', "U": 'U', "I": 'I', "N": 'N', "PSU": 'U', "5MC": 'C', "OMG": 'G'}
)

func knownResidue(name string) bool {
	_, aa := aminoAcids[name]
	_, dna := deoxyNucleotides[name]
	_, rna := nucleotides[name]
	return aa || dna || rna
}

// polymerKind is the kind most of the residues are; Ligand when there are none.
func polymerKind(rs []Residue) Kind {
	var protein, dna, rna int
	for _, r := range rs {
		switch {
		case aminoAcids[r.Name] != 0:
			protein++
		case deoxyNucleotides[r.Name] != 0:
			dna++
		case nucleotides[r.Name] != 0:
			rna++
		}
	}
	switch {
	case len(rs) == 0:
		return Ligand
	case dna > protein && dna >= rna:
		return DNA
	case rna > protein && rna > dna:
		return RNA
	}
	return Protein
}

func oneLetter(name string, k Kind) byte {
	var table map[string]byte
	switch k {
	case Protein:
		table = aminoAcids
	case DNA:
		table = deoxyNucleotides
	case RNA:
		table = nucleotides
	}
	if c, ok := table[name]; ok {
		return c
	}
	if k == Protein {
		return 'X'
	}
	return 'N'
}

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

// Describe lists the chains of a structure for an error message: "A (protein, residues
// 1-120), B (dna, residues 1-12)", the first describedChains of them.
func (s *Structure) Describe() string {
	parts := make([]string, 0, len(s.Chains))
	for i, c := range s.Chains {
		if i == describedChains {
			parts = append(parts, fmt.Sprintf("and %d more", len(s.Chains)-i))
			break
		}
		id := c.ID
		if id == "" {
			id = "(no chain id)"
		}
		if len(c.Residues) == 0 {
			parts = append(parts, fmt.Sprintf("%s (ligand)", id))
			continue
		}
		parts = append(parts, fmt.Sprintf("%s (%s, residues %s)", id, c.Kind, c.Spans()))
	}
	return strings.Join(parts, ", ")
}

// describedChains bounds the chains an error message lists.
const describedChains = 12

// Spans are the chain's residue numbers as runs: "1-16, 18-120".
func (c *StructureChain) Spans() string {
	var parts []string
	rs := c.Residues
	for i := 0; i < len(rs); {
		j := i
		for j+1 < len(rs) && rs[j+1].ICode == "" && rs[j].ICode == "" && rs[j+1].Num == rs[j].Num+1 {
			j++
		}
		if i == j {
			parts = append(parts, rs[i].String())
		} else {
			parts = append(parts, rs[i].String()+"-"+rs[j].String())
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}
