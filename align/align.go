package align

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Searcher finds the alignments of a target's protein chains.
type Searcher interface {
	// Search returns the alignments of q's chains.
	Search(ctx context.Context, q Query) (Result, error)
	// Source is what, besides the sequences, determines every result of this searcher:
	// the part of a cache key that names where and how it searches, known before searching.
	Source() Source
}

// Query is the protein chains of one target: their sequences in upper-case one-letter
// code, in order. A chain may repeat (a homodimer is one sequence twice).
type Query struct {
	Chains []string
}

// distinct checks q's sequences and returns them without repeats (Distinct).
func (q Query) distinct() ([]string, error) {
	if len(q.Chains) == 0 {
		return nil, errors.New("align: a query without chains")
	}
	for i, s := range q.Chains {
		if s == "" {
			return nil, fmt.Errorf("align: chain %d is empty", i+1)
		}
		for j := 0; j < len(s); j++ {
			if s[j] < 'A' || s[j] > 'Z' {
				return nil, fmt.Errorf("align: chain %d has %q at %d; a protein sequence is upper-case letters", i+1, s[j], j+1)
			}
		}
	}
	return Distinct(q.Chains), nil
}

// Distinct returns chains without repeats, in the order they first appear: the order in
// which a search numbers them 101, 102, …, and that of Result.Chains.
func Distinct(chains []string) []string {
	var out []string
	for _, s := range chains {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// Result is the alignments of a Query.
type Result struct {
	// Chains is the query's distinct sequences, in the order they first appear; the
	// alignments below are in the same order.
	Chains []string `json:"chains"`
	// Unpaired holds each chain's A3M, whose first row is the chain itself. It depends on
	// the chain and on Source but its Pairing, not on the chain's partners.
	Unpaired []string `json:"unpaired"`
	// Paired holds, for two or more distinct chains, each chain's paired A3M: its row i
	// comes, in every chain, from the same organism, so they are read side by side. It
	// depends on all of Chains, in order, and Source.Pairing. It is nil for one distinct
	// chain, and for a local search without taxonomy.
	Paired []string `json:"paired,omitempty"`
	// Source is what else determined the result.
	Source Source `json:"source"`
}

// Chain returns the alignments of one of the query's sequences: its unpaired A3M and its
// paired one ("" when the result has none); ok is false for a sequence not in the query.
func (r Result) Chain(seq string) (unpaired, paired string, ok bool) {
	for i, s := range r.Chains {
		if s == seq {
			if r.Paired != nil {
				paired = r.Paired[i]
			}
			return r.Unpaired[i], paired, true
		}
	}
	return "", "", false
}

// Find returns the result, among results, of a search of chains: the one whose Chains
// are chains' distinct sequences in the order they first appear. ok is false when none is.
func Find(results []Result, chains []string) (r Result, ok bool) {
	want, err := Query{Chains: chains}.distinct()
	if err != nil {
		return Result{}, false
	}
	for _, r := range results {
		if slices.Equal(r.Chains, want) {
			return r, true
		}
	}
	return Result{}, false
}

// Source is what determines a search's result besides the sequences: a cache key holds
// it whole, since a change of any part changes the alignments.
type Source struct {
	// Server is the URL of the server a Remote searches on; "" for Local.
	Server string `json:"server,omitempty"`
	// Database names the databases a Local searches and the mmseqs version, by content
	// (names and file sizes) rather than by folder, so that copies of the same databases
	// on several machines share it; "" for Remote.
	Database string `json:"database,omitempty"`
	// Mode shapes every unpaired A3M: the server's mode (env or env-nofilter), or for
	// Local env with an environmental database and all without, as ColabFold names them.
	Mode string `json:"mode"`
	// Pairing shapes every paired A3M: the server's pair mode (pairgreedy, paircomplete,
	// either with -env), or paircomplete for Local; "" when the searcher never pairs.
	Pairing string `json:"pairing,omitempty"`
}

// String gives every part of s on one line.
func (s Source) String() string {
	where := "server " + s.Server
	if s.Server == "" {
		where = "local " + s.Database
	}
	pairing := s.Pairing
	if pairing == "" {
		pairing = "none"
	}
	return fmt.Sprintf("%s; mode %s; pairing %s", where, s.Mode, pairing)
}

// queryID is the number a search gives the distinct chain i, as ColabFold numbers them.
func queryID(i int) int { return 101 + i }

// queryFASTA is the query of a search: the distinct chains, numbered.
func queryFASTA(chains []string) string {
	var b strings.Builder
	for i, s := range chains {
		fmt.Fprintf(&b, ">%d\n%s\n", queryID(i), s)
	}
	return b.String()
}

// errMalformed marks an alignment file that is not what a search writes.
var errMalformed = errors.New("malformed alignments")

// blocks splits an alignment file of several queries, as mmseqs result2msa writes it (the
// server's archive holds the same file): every query's block ends with a NUL byte and
// begins with the query's row, headed by its number. Blocks of the same number are joined
// in order, as ColabFold joins them.
func blocks(data []byte) (map[int]string, error) {
	out := map[int]string{}
	for chunk := range bytes.SplitSeq(data, []byte{0}) {
		if len(bytes.TrimSpace(chunk)) == 0 {
			continue
		}
		header, _, _ := bytes.Cut(chunk, []byte{'\n'})
		id, err := strconv.Atoi(string(bytes.TrimSpace(bytes.TrimPrefix(header, []byte{'>'}))))
		if len(header) == 0 || header[0] != '>' || err != nil {
			return nil, fmt.Errorf("%w: a block begins with %q, not a query's number", errMalformed, firstLine(chunk))
		}
		text := string(chunk)
		if !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		out[id] += text
	}
	return out, nil
}

// assemble gives each chain its alignment from files of blocks (blocks), joined in the
// order of files, checking that every block of a chain begins with the chain itself.
func assemble(chains []string, files map[string][]byte, order []string) ([]string, error) {
	out := make([]string, len(chains))
	for _, name := range order {
		byID, err := blocks(files[name])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		for i, seq := range chains {
			text, ok := byID[queryID(i)]
			if !ok {
				return nil, fmt.Errorf("%w: %s has no block of query %d", errMalformed, name, queryID(i))
			}
			if err := checkQueryRows(text, queryID(i), seq); err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			out[i] += text
		}
		if len(byID) > len(chains) {
			return nil, fmt.Errorf("%w: %s has %d blocks for %d queries", errMalformed, name, len(byID), len(chains))
		}
	}
	return out, nil
}

// checkQueryRows checks that each query row of a chain's blocks (a row headed by the
// chain's number) is the chain itself, so that no chain is given another's alignment.
func checkQueryRows(text string, id int, seq string) error {
	header := ">" + strconv.Itoa(id)
	lines := strings.Split(text, "\n")
	for i, line := range lines {
		if strings.TrimSpace(line) == header && (i+1 >= len(lines) || strings.TrimSpace(lines[i+1]) != seq) {
			return fmt.Errorf("%w: the row of query %d is not its sequence", errMalformed, id)
		}
	}
	return nil
}

// checkPaired checks that the paired alignments have the same number of rows, since row i
// of each is read with row i of the others.
func checkPaired(paired []string) error {
	for i, a3m := range paired {
		if n, m := Rows(a3m), Rows(paired[0]); n != m {
			return fmt.Errorf("%w: paired alignments of %d and %d rows (chains %d and 1)", errMalformed, n, m, i+1)
		}
	}
	return nil
}

// Rows counts the rows of an A3M: its header lines.
func Rows(a3m string) int {
	n := 0
	for line := range strings.Lines(a3m) {
		if strings.HasPrefix(line, ">") {
			n++
		}
	}
	return n
}

func firstLine(b []byte) string {
	line, _, _ := bytes.Cut(b, []byte{'\n'})
	if len(line) > 60 {
		line = line[:60]
	}
	return string(line)
}
