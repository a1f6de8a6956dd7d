package bio

import (
	"fmt"
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
}

// Contig is a parsed contig string.
type Contig []Segment

// maxContigNumber bounds every number in a contig so that sums cannot overflow; no residue
// number or length of a real design comes near it.
const maxContigNumber = 1_000_000

// ParseContig checks and parses a contig in the grammar rfd3 documents (foundry
// docs/input.md): comma-separated segments, each one of
//
//	A10-50   residues 10 to 50 of chain A of the input structure, kept fixed (start ≤ end)
//	60-80    a designed segment whose length is drawn from 60..80 (min ≤ max, min ≥ 1)
//	70       a designed segment of exactly 70 residues
//	/0       a chain break
//
// Spaces around segments are ignored. A chain is one ASCII letter. Anything else is an
// error naming the 1-based segment and its text.
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
		lo, hi, isRange, ok := cutRange(s[1:])
		if !ok || !isRange {
			return Segment{}, fmt.Errorf("a chain range is <chain><start>-<end>, for example A10-50")
		}
		if lo > hi {
			return Segment{}, fmt.Errorf("start %d is after end %d", lo, hi)
		}
		return Segment{Chain: s[:1], Min: lo, Max: hi}, nil
	default:
		lo, hi, _, ok := cutRange(s)
		if !ok {
			return Segment{}, fmt.Errorf("expected a chain range such as A10-50, a length range such as 60-80, a length such as 70, or /0")
		}
		if lo < 1 {
			return Segment{}, fmt.Errorf("a designed length must be at least 1")
		}
		if lo > hi {
			return Segment{}, fmt.Errorf("minimum length %d is above maximum %d", lo, hi)
		}
		return Segment{Min: lo, Max: hi}, nil
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
