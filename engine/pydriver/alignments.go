package pydriver

import (
	"errors"
	"fmt"
	"strings"

	"github.com/chaperone-bio/chaperone/align"
	"github.com/chaperone-bio/chaperone/bio"
	"github.com/chaperone-bio/chaperone/engine/toolkit"
)

// How esm 3.4 reads the alignment of a chain, which decides what ESMFold2 is handed here
// (esm/models/esmfold2/prepare_input.py compute_msa_features and paired_msa.py
// construct_paired_msa):
//
//   - A chain has one alignment, read with MSA.from_a3m; its first row is the query. The
//     rows of all chains are laid side by side on the rows of one MSA feature.
//   - Rows whose headers hold the same token key=N, in several chains, go on the same row:
//     that is how esm pairs a complex's chains (it reads N as a taxonomy id). Every other
//     row goes, chain by chain in file order, on the rows after the paired ones. So the
//     search's paired alignment is handed over too: its row i, in every chain, is headed
//     key=N for the same N.
//   - Nothing removes a repeated row, and ColabFold's unpaired A3M holds its query twice
//     (the environmental block begins with it again): a repeat is dropped here, as
//     ColabFold's AlphaFold pipeline and Boltz drop theirs.
//   - esm bounds the rows itself (16384 in all, and a fresh 1024 of them, the query among
//     them, for each recycling loop), so no row is dropped here for their number.

// searched is what the alignment stage found for one target's searched chains.
type searched struct {
	source align.Source
	a3m    map[string]esmAlignment // by sequence
}

// esmAlignment is a chain's A3M as ESMFold2 reads it, and how many of its rows, the query
// besides, are paired with the target's other chains and how many are not.
type esmAlignment struct {
	text           string
	paired, others int
}

// searchedAlignments finds, among the run's alignments, those of the chains of cx that
// the alignment stage searched (bio.Complex.SearchChains, when use_msa_server is on). It
// returns nil when none is searched, and an error when the search's result is not there.
func searchedAlignments(cx *bio.Complex, useServer bool, results []align.Result) (*searched, error) {
	res, err := toolkit.Searched(cx, useServer, results, "esm")
	if err != nil || res == nil {
		return nil, err
	}
	a3ms, err := esmAlignments(*res)
	if err != nil {
		return nil, fmt.Errorf("target %s: the alignments searched for it: %w", cx.Name, err)
	}
	s := &searched{source: res.Source, a3m: map[string]esmAlignment{}}
	for i, seq := range res.Chains {
		s.a3m[seq] = a3ms[i]
	}
	return s, nil
}

// errMalformedResult is a search's result that is not what the align package gives.
var errMalformedResult = errors.New("malformed")

// esmAlignments gives each chain of a search's result, in order, the A3M ESMFold2 reads
// (see the top of this file): the query row once; then, for a complex of several distinct
// chains, its paired rows, each headed with the key of its row number; then its unpaired
// rows, each row only once.
func esmAlignments(res align.Result) ([]esmAlignment, error) {
	if len(res.Unpaired) != len(res.Chains) || (len(res.Paired) > 0 && len(res.Paired) != len(res.Chains)) {
		return nil, fmt.Errorf("%w: %d chains, %d unpaired and %d paired alignments", errMalformedResult,
			len(res.Chains), len(res.Unpaired), len(res.Paired))
	}
	paired := make([][]a3mRow, len(res.Paired))
	for c, text := range res.Paired {
		paired[c] = parseA3M(text)
		if len(paired[c]) != len(paired[0]) {
			return nil, fmt.Errorf("%w: paired alignments of %d and %d rows", errMalformedResult, len(paired[c]), len(paired[0]))
		}
	}
	out := make([]esmAlignment, len(res.Chains))
	for c, seq := range res.Chains {
		unpaired := parseA3M(res.Unpaired[c])
		if len(unpaired) == 0 || unpaired[0].seq != seq {
			return nil, fmt.Errorf("%w: the unpaired alignment of chain %d does not begin with the chain", errMalformedResult, c+1)
		}
		rows := []a3mRow{unpaired[0]}
		seen := map[string]bool{seq: true}
		var a esmAlignment
		if len(paired) > 0 {
			for i := 1; i < len(paired[0]); i++ {
				row := paired[c][i]
				// A row that is every chain's query begins the next block of a paired A3M
				// (ColabFold's -env pairing has two); the first row already pairs them.
				if everyQuery(paired, res.Chains, i) || gapsOnly(row.seq) {
					continue
				}
				rows = append(rows, a3mRow{header: pairKey(i) + " " + row.header, seq: row.seq})
				seen[row.seq] = true
				a.paired++
			}
		}
		for _, row := range unpaired[1:] {
			if !seen[row.seq] {
				seen[row.seq] = true
				rows = append(rows, row)
				a.others++
			}
		}
		a.text = formatA3M(rows)
		out[c] = a
	}
	return out, nil
}

// pairKey is the header token that puts row i of every chain's paired alignment on one
// row of ESMFold2's MSA (paired_msa.py _taxonomy_from_header reads the first key=N of a
// header). The keys are negative, and not -1, which esm takes for "unpaired": a taxonomy
// id is positive, so they never meet the keys of an alignment the caller sent.
func pairKey(i int) string { return fmt.Sprintf("key=%d", -(i + 1)) }

// everyQuery reports whether row i of every chain's paired alignment is the chain itself.
func everyQuery(paired [][]a3mRow, chains []string, i int) bool {
	for c, rows := range paired {
		if rows[i].seq != chains[c] {
			return false
		}
	}
	return true
}

// gapsOnly reports whether a row aligns no residue: a chain without a hit of the row's
// organism in a greedy pairing.
func gapsOnly(seq string) bool { return strings.Trim(seq, "-") == "" }

// a3mRow is one sequence of an A3M: its header line without the '>', and its aligned
// residues (upper case, '-' for a gap, lower case for an insertion).
type a3mRow struct{ header, seq string }

// parseA3M reads the rows of an A3M; a sequence may span lines.
func parseA3M(text string) []a3mRow {
	var rows []a3mRow
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, ">"):
			rows = append(rows, a3mRow{header: strings.TrimSpace(line[1:])})
		case len(rows) > 0:
			rows[len(rows)-1].seq += line
		}
	}
	return rows
}

func formatA3M(rows []a3mRow) string {
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, ">%s\n%s\n", r.header, r.seq)
	}
	return b.String()
}
