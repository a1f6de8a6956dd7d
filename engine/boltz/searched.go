package boltz

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/chaperone-bio/chaperone/align"
	"github.com/chaperone-bio/chaperone/bio"
)

// Boltz's bounds on the alignment it writes for an entity (const.py of Boltz 2.2.1:
// max_paired_seqs = 8192, max_msa_seqs = 16384).
const (
	maxPairedRows = 8192
	maxRows       = 16384
)

// searchedCSVs writes, for each distinct chain of a search's result (res.Chains, in order),
// the alignment CSV that Boltz's compute_msa (main.py:496-522 of Boltz 2.2.1) writes from
// its own search of the same chains on a ColabFold server, so that Boltz reads the
// alignments chaperone searched exactly as it would have read its own:
//
//   - the paired rows come first, at most maxPairedRows of them counting gap rows; each
//     is keyed by its row index in the chain's paired A3M, which every chain shares, so
//     Boltz pairs the rows of equal key across chains; a row of gaps only (a chain the
//     pairing found no hit for) is left out, and its key with it;
//   - the unpaired rows follow with key -1, which pairs with nothing, cut to what is left of
//     maxRows; when the chain has paired rows the first unpaired row, the query, is left
//     out, since the paired part begins with it;
//   - a chain searched alone, or without pairing, has no paired rows: all its rows are
//     unpaired, the query first.
//
// Every key is raised by keyBase, which is 0 but for a target where the caller sent a CSV
// alignment of another chain: keys then start above the caller's, so that no row of a
// searched chain pairs with one of the caller's (Boltz, which refuses to mix its search with
// a sent alignment, never meets that case).
func searchedCSVs(res align.Result, keyBase int) ([]string, error) {
	if len(res.Unpaired) != len(res.Chains) || res.Paired != nil && len(res.Paired) != len(res.Chains) {
		return nil, fmt.Errorf("a search result of %d chains has %d unpaired and %d paired alignments",
			len(res.Chains), len(res.Unpaired), len(res.Paired))
	}
	out := make([]string, len(res.Chains))
	for i, chain := range res.Chains {
		var keys []int
		var rows []string
		if res.Paired != nil {
			paired, err := a3mRows(res.Paired[i], chain)
			if err != nil {
				return nil, fmt.Errorf("the paired alignment of chain %d: %w", i+1, err)
			}
			for k, row := range paired[:min(len(paired), maxPairedRows)] {
				if row != strings.Repeat("-", len(row)) {
					keys, rows = append(keys, keyBase+k), append(rows, row)
				}
			}
		}
		unpaired, err := a3mRows(res.Unpaired[i], chain)
		if err != nil {
			return nil, fmt.Errorf("the unpaired alignment of chain %d: %w", i+1, err)
		}
		unpaired = unpaired[:max(0, min(len(unpaired), maxRows-len(rows)))]
		if len(rows) > 0 && len(unpaired) > 0 {
			unpaired = unpaired[1:]
		}
		var b strings.Builder
		b.WriteString("key,sequence")
		for k, row := range rows {
			fmt.Fprintf(&b, "\n%d,%s", keys[k], row)
		}
		for _, row := range unpaired {
			fmt.Fprintf(&b, "\n-1,%s", row)
		}
		out[i] = b.String()
	}
	return out, nil
}

// a3mRows returns the aligned sequences of an A3M in order: the text under each '>'
// header. A search writes each on one line, and Boltz takes every second line for them;
// the first must be the chain itself, which Boltz checks only later, silently folding the
// chain without its alignment when it is not.
func a3mRows(a3m, chain string) ([]string, error) {
	var rows []string
	for line := range strings.Lines(a3m) {
		line = strings.TrimSpace(line)
		switch {
		case line == "":
		case line[0] == '>':
			rows = append(rows, "")
		case rows == nil:
			return nil, fmt.Errorf("it begins with %.20q, not a '>' header", line)
		default:
			rows[len(rows)-1] += line
		}
	}
	if len(rows) == 0 || rows[0] != chain {
		return nil, fmt.Errorf("its first row is not the chain's sequence")
	}
	return rows, nil
}

// keyBaseAbove is the first key above every key of the CSV alignments the caller sent for
// the target's chains, or 0 when there is none.
func keyBaseAbove(cx *bio.Complex) int {
	base := 0
	for _, en := range cx.Entities {
		if en.MSA.Source != bio.MSAInline || en.MSA.Format != bio.CSV {
			continue
		}
		keyCol := -1 // bio has checked the header: key,sequence or sequence,key
		for line := range strings.Lines(en.MSA.Text) {
			fields := strings.Split(strings.TrimSpace(line), ",")
			switch {
			case len(fields) != 2:
			case keyCol < 0:
				keyCol = 0
				if fields[0] == "sequence" {
					keyCol = 1
				}
			default:
				if k, err := strconv.Atoi(fields[keyCol]); err == nil && k >= base {
					base = k + 1
				}
			}
		}
	}
	return base
}
