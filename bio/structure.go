package bio

import (
	"fmt"
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
