package bio

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Segment is one comma-separated part of an rfd3 contig string.
type Segment struct {
	// Chain is set for a range of the input structure that is kept fixed, "A" in "A10-50";
	// Min and Max are then its first and last residue numbers. For a designed segment
	// Chain is empty and Min..Max is its length range (Min == Max for a fixed length).
	Chain    string
	Min, Max int
	// Break marks "/0", a chain break between the segments on either side.
	Break bool
	// Kind is what a designed segment is made of: Protein, or DNA or RNA for rfd3's
	// nucleic-acid segments (a length with the suffix D or R, "12D"). Empty for the others.
	Kind Kind
}

// Contig is a parsed contig string.
type Contig []Segment

// maxContigNumber bounds every number in a contig so that sums cannot overflow; no residue
// number or length of a real design comes near it.
const maxContigNumber = 1_000_000

// ParseContig checks and parses a contig in the grammar rfd3 documents (foundry
// docs/input.md, and foundry.utils.components, which reads it): comma-separated
// segments, each one of
//
//	A10-50   residues 10 to 50 of chain A of the input structure, kept fixed (start ≤ end);
//	         RFdiffusion3's docs also spell it A10-A50
//	A203     residue 203 of chain A alone
//	60-80    a designed protein segment whose length is drawn from 60..80 (min ≤ max, max ≥ 1;
//	         0-40 may leave it out)
//	70       a designed protein segment of exactly 70 residues
//	12D 8-10R  a designed DNA or RNA segment
//	/0       a chain break
//
// Spaces around segments are ignored. A chain is one ASCII letter, as rfd3 reads the first
// character as the chain. Anything else is an error naming the 1-based segment and its text.
func ParseContig(s string) (Contig, error) {
	var c Contig
	for i, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		seg, err := parseSegment(part)
		if err != nil {
			return nil, fmt.Errorf("segment %d %q: %v", i+1, part, err)
		}
		c = append(c, seg)
	}
	return c, nil
}

func parseSegment(s string) (Segment, error) {
	switch {
	case s == "":
		return Segment{}, fmt.Errorf("is empty")
	case s == "/0":
		return Segment{Break: true}, nil
	case isLetter(s[0]):
		chain := s[:1]
		// A10-A50: the end may repeat the chain, as RFdiffusion3's docs write it.
		rest := s[1:]
		if a, b, ok := strings.Cut(rest, "-"); ok && strings.HasPrefix(b, chain) {
			rest = a + "-" + b[1:]
		}
		lo, hi, _, ok := cutRange(rest)
		if !ok {
			return Segment{}, fmt.Errorf("a chain range is <chain><start>-<end> or <chain><residue>, for example A10-50 or A203")
		}
		if lo > hi {
			return Segment{}, fmt.Errorf("start %d is after end %d", lo, hi)
		}
		return Segment{Chain: chain, Min: lo, Max: hi}, nil
	default:
		kind := Protein
		switch s[len(s)-1] {
		case 'D':
			kind, s = DNA, s[:len(s)-1]
		case 'R':
			kind, s = RNA, s[:len(s)-1]
		}
		lo, hi, _, ok := cutRange(s)
		if !ok {
			return Segment{}, fmt.Errorf("expected a chain range such as A10-50, a residue such as A203, a length range such as 60-80, " +
				"a length such as 70 (12D or 12R for DNA or RNA), or /0")
		}
		if lo > hi {
			return Segment{}, fmt.Errorf("minimum length %d is above maximum %d", lo, hi)
		}
		// A designed segment may be left out (0-40, as rfd3's own examples and
		// foundry.utils.components read it), but one of at most 0 residues designs nothing.
		if hi < 1 {
			return Segment{}, fmt.Errorf("a designed length must allow at least 1 residue")
		}
		return Segment{Min: lo, Max: hi, Kind: kind}, nil
	}
}

// cutRange parses "<n>-<m>", or "<n>" as the range n..n.
func cutRange(s string) (lo, hi int, isRange, ok bool) {
	a, b, isRange := strings.Cut(s, "-")
	if lo, ok = number(a); !ok {
		return 0, 0, false, false
	}
	if !isRange {
		return lo, lo, false, true
	}
	if hi, ok = number(b); !ok {
		return 0, 0, false, false
	}
	return lo, hi, true, true
}

// number parses a plain decimal number: digits only, no sign, at most maxContigNumber.
func number(s string) (int, bool) {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	if err != nil || n > maxContigNumber {
		return 0, false
	}
	return n, true
}

func isLetter(b byte) bool { return 'A' <= b && b <= 'Z' || 'a' <= b && b <= 'z' }

// MaxResidues is the largest number of residues a design of this contig can have: every
// kept range in full plus every designed segment at its maximum length.
func (c Contig) MaxResidues() int {
	n := 0
	for _, s := range c {
		switch {
		case s.Break:
		case s.Chain != "":
			n += s.Max - s.Min + 1
		default:
			n += s.Max
		}
	}
	return n
}

// Designs reports whether the contig has at least one designed segment; a contig of kept
// ranges only gives the model nothing to design.
func (c Contig) Designs() bool {
	for _, s := range c {
		if !s.Break && s.Chain == "" {
			return true
		}
	}
	return false
}

// String writes the contig in the spelling rfd3 reads: A10-50, A203, 60-80, 70, 12D, /0.
func (c Contig) String() string {
	parts := make([]string, len(c))
	for i, s := range c {
		switch {
		case s.Break:
			parts[i] = "/0"
		case s.Min == s.Max:
			parts[i] = s.Chain + strconv.Itoa(s.Min)
		default:
			parts[i] = s.Chain + strconv.Itoa(s.Min) + "-" + strconv.Itoa(s.Max)
		}
		switch s.Kind {
		case DNA:
			parts[i] += "D"
		case RNA:
			parts[i] += "R"
		}
	}
	return strings.Join(parts, ",")
}

// KeptKinds are the polymer kinds of the structure chains the contig keeps residues of.
func (c Contig) KeptKinds(s *Structure) []Kind {
	var kinds []Kind
	for _, seg := range c {
		if seg.Chain == "" {
			continue
		}
		if ch, ok := s.Chain(seg.Chain); ok && !slices.Contains(kinds, ch.Kind) {
			kinds = append(kinds, ch.Kind)
		}
	}
	return kinds
}

// CheckAgainst checks that every residue the contig keeps is in the structure, as rfd3
// looks each one up by author chain id and residue number: a chain or residue the
// structure lacks is an error naming it and what the structure has. A number that several
// residues share through insertion codes (52, 52A) is an error too, since rfd3 would take
// them all as one.
func (c Contig) CheckAgainst(s *Structure) error {
	for i, seg := range c {
		if seg.Chain == "" {
			continue
		}
		ch, ok := s.Chain(seg.Chain)
		if !ok {
			return fmt.Errorf("segment %d %s: the structure has no chain %s; its chains are %s", i+1, Contig{seg}, seg.Chain, s.Describe())
		}
		for n := seg.Min; n <= seg.Max; n++ {
			switch rs := ch.Numbered(n); {
			case len(rs) == 0:
				return fmt.Errorf("segment %d %s: chain %s has no residue %d; its residues are %s", i+1, Contig{seg}, seg.Chain, n, describeResidues(ch))
			case len(rs) > 1:
				return fmt.Errorf("segment %d %s: chain %s has %d residues numbered %d (insertion codes %s), which rfd3 cannot tell apart; "+
					"renumber the structure", i+1, Contig{seg}, seg.Chain, len(rs), n, insertionCodes(rs))
			}
		}
	}
	return nil
}

func describeResidues(ch *StructureChain) string {
	if len(ch.Residues) == 0 {
		return "none of a polymer (it holds only ligands)"
	}
	return ch.Spans()
}

func insertionCodes(rs []Residue) string {
	codes := make([]string, len(rs))
	for i, r := range rs {
		codes[i] = r.ICode
		if codes[i] == "" {
			codes[i] = "none"
		}
	}
	return strings.Join(codes, ", ")
}
