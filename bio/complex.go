package bio

import (
	"fmt"
	"slices"
	"strings"
)

// Kind is what an entity of a complex is made of.
type Kind string

const (
	Protein Kind = "protein"
	DNA     Kind = "dna"
	RNA     Kind = "rna"
	Ligand  Kind = "ligand"
)

// Polymer reports whether entities of the kind are chains of residues with a sequence.
func (k Kind) Polymer() bool { return k == Protein || k == DNA || k == RNA }

// Complex is one prediction target, in the form that every prediction engine translates
// from: which molecules, how many copies of each, and what the caller says about them.
// The parsers return it checked: ids unique, residues valid for their kind, every
// constraint, template and affinity naming chains and residues that exist.
type Complex struct {
	Name        string
	Entities    []Entity
	Constraints []Constraint
	Templates   []Template
	Affinity    *Affinity // nil unless an affinity prediction was asked for
}

// Entity is one distinct molecule and the chain ids of its copies: an entry of Boltz's
// sequences list, an mmCIF entity.
type Entity struct {
	Kind Kind
	IDs  []string // one chain id per copy, at least one
	// Sequence holds a polymer's residues, one upper-case letter each.
	Sequence string
	// A ligand is given either as SMILES or as CCD codes; several codes make one ligand
	// chain of several residues.
	SMILES string
	CCD    []string
	// MSA says where a protein's alignment comes from.
	MSA MSA
	// Modifications and Cyclic apply to polymers only.
	Modifications []Modification
	Cyclic        bool
	Pos           Pos // where the entity was written
}

// Residues is the number of residues of one copy: the sequence length of a polymer, the
// number of CCD codes of a ligand given by CCD, and 1 for a SMILES ligand.
func (e *Entity) Residues() int {
	switch {
	case e.Kind.Polymer():
		return len(e.Sequence)
	case len(e.CCD) > 0:
		return len(e.CCD)
	}
	return 1
}

// Tokens is what one copy counts against a model's size cap when the model tokenizes as
// Boltz, Protenix and OpenFold3 do: one token per residue of a polymer, one per heavy atom
// of a ligand. A ligand by CCD code counts its heavy atoms when the code is one of the
// common ones of ccdHeavyAtoms, else one per code.
func (e *Entity) Tokens() int {
	switch {
	case e.Kind.Polymer():
		return len(e.Sequence)
	case e.SMILES != "":
		return max(1, smilesHeavyAtoms(e.SMILES))
	}
	n := 0
	for _, code := range e.CCD {
		n += max(1, ccdHeavyAtoms[strings.ToUpper(code)])
	}
	return n
}

// ccdHeavyAtoms are the heavy-atom counts of the ligands most often given by CCD code
// (from the PDB's Chemical Component Dictionary). Ions, and codes not listed, count one.
var ccdHeavyAtoms = map[string]int{
	"ATP": 31, "ADP": 27, "AMP": 23, "ANP": 31, "GTP": 32, "GDP": 28, "GNP": 32, "UTP": 29, "CTP": 29,
	"NAD": 44, "NAP": 48, "NDP": 48, "FAD": 53, "FMN": 31, "HEM": 43, "HEC": 43, "SAM": 27, "SAH": 26,
	"COA": 48, "ACO": 51, "PLP": 16, "TPP": 26, "BTN": 16, "NAG": 15, "MAN": 12, "GLC": 12, "BGC": 12,
	"BMA": 12, "GAL": 12, "FUC": 11, "SIA": 21, "CLR": 28, "PLM": 18, "OLA": 20, "GOL": 6, "EDO": 4,
	"PEG": 7, "PG4": 13, "SO4": 5, "PO4": 5, "ACT": 4, "FMT": 3, "DMS": 4, "MPD": 8, "TRS": 8, "EPE": 15,
	"MES": 12, "IMD": 5, "CIT": 13, "SF4": 8, "FES": 4, "HOH": 1,
}

// SearchChains lists the protein chains whose alignment the MSA server gives when the
// job allows it (MSAAuto): one sequence per chain copy, entity by entity, copies in order.
// They are searched together (job.Search), so that a complex's chains are also paired.
func (cx *Complex) SearchChains() []string {
	var out []string
	for _, en := range cx.Entities {
		if en.Kind == Protein && en.MSA.Source == MSAAuto {
			for range en.IDs {
				out = append(out, en.Sequence)
			}
		}
	}
	return out
}

// MSASource says where a protein's multiple sequence alignment comes from.
type MSASource string

const (
	// MSAAuto is the default: the chain is aligned on the operator's MSA server when the
	// job allows it (use_msa_server), and folded single-sequence otherwise.
	MSAAuto MSASource = ""
	// MSANone folds the chain single-sequence (Boltz's "msa: empty").
	MSANone MSASource = "empty"
	// MSAInline is an alignment the caller sent in the request: MSA.Text, in MSA.Format.
	MSAInline MSASource = "inline"
)

// Alignment formats of an inline MSA: A3M, or Boltz's CSV with key and sequence columns
// (rows of several chains with the same key are paired).
const (
	A3M = "a3m"
	CSV = "csv"
)

// MSA is a protein's alignment setting.
type MSA struct {
	Source MSASource
	Format string // A3M or CSV, for MSAInline
	Text   string // the alignment, for MSAInline
}

// Modification replaces one residue of a polymer by a modified one.
type Modification struct {
	Position int    // 1-based residue index
	CCD      string // CCD code of the modified residue
}

// Constraint is one of Boltz's constraints; exactly one of its fields is set.
type Constraint struct {
	Bond    *Bond
	Pocket  *Pocket
	Contact *Contact
	Pos     Pos
}

// Bond is a covalent bond between two atoms.
type Bond struct{ Atom1, Atom2 Atom }

// Atom names one atom: a chain, a 1-based residue index in it (1 for a single-residue
// ligand), and the atom's name.
type Atom struct {
	Chain   string
	Residue int
	Name    string
}

// Token names a residue of a polymer chain (Residue, 1-based) or an atom of a ligand chain
// (Atom); one of the two is set, as the chain's kind requires.
type Token struct {
	Chain   string
	Residue int
	Atom    string
}

// Pocket asks that the binder chain sit within MaxDistance of every contact.
type Pocket struct {
	Binder   string
	Contacts []Token
	// MaxDistance is in ångströms; 0 means the model's default.
	MaxDistance float64
	Force       bool // enforce with a potential rather than only condition on it
}

// Contact asks that two tokens be within MaxDistance of each other.
type Contact struct {
	Token1, Token2 Token
	MaxDistance    float64 // ångströms; 0 means the model's default
	Force          bool
}

// Template is a structure that guides the prediction of some protein chains.
type Template struct {
	Format string // MMCIF or PDB
	Text   string // the structure, sent in the request
	// ChainIDs are the complex's protein chains to template; empty means all of them.
	ChainIDs []string
	// TemplateIDs, when set, are the template's chains for ChainIDs, pairwise; else the
	// model matches chains by sequence.
	TemplateIDs []string
	Force       bool
	Threshold   float64 // ångströms the prediction may deviate when Force is set
	Pos         Pos
}

// Affinity asks for the binding affinity of one ligand chain to the rest of the complex.
type Affinity struct {
	Binder string
	Pos    Pos
}

// NumChains counts the chains of the complex, every copy of an entity counting once.
func (c *Complex) NumChains() int {
	n := 0
	for _, e := range c.Entities {
		n += len(e.IDs)
	}
	return n
}

// NumResidues counts the residues of the complex, over every copy (see Entity.Residues).
func (c *Complex) NumResidues() int {
	n := 0
	for _, e := range c.Entities {
		n += len(e.IDs) * e.Residues()
	}
	return n
}

// NumTokens counts the tokens of the complex, over every copy (see Entity.Tokens).
func (c *Complex) NumTokens() int {
	n := 0
	for _, e := range c.Entities {
		n += len(e.IDs) * e.Tokens()
	}
	return n
}

// NumLigands counts the ligand chains of the complex, every copy counting once.
func (c *Complex) NumLigands() int {
	n := 0
	for _, e := range c.Entities {
		if e.Kind == Ligand {
			n += len(e.IDs)
		}
	}
	return n
}

// Entity returns the entity that has the chain id.
func (c *Complex) Entity(chain string) (*Entity, bool) {
	for i := range c.Entities {
		if slices.Contains(c.Entities[i].IDs, chain) {
			return &c.Entities[i], true
		}
	}
	return nil, false
}

// Pos is where something was written in an input text: 1-based line and column, or zero
// when it has no place (a bare sequence).
type Pos struct{ Line, Column int }

// Error is a problem in an input text, located where the text allows.
type Error struct {
	Pos
	Msg string
}

func (e *Error) Error() string {
	switch {
	case e.Line > 0 && e.Column > 0:
		return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Column, e.Msg)
	case e.Line > 0:
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}
	return e.Msg
}

// Errorf returns an *Error at pos.
func Errorf(pos Pos, format string, args ...any) error {
	return &Error{Pos: pos, Msg: fmt.Sprintf(format, args...)}
}
