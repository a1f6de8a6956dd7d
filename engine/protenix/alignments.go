package protenix

// How the tools read a protein chain's alignments, Protenix 2.0.0 and OpenDDE 1.2.0 alike:
// its entity in the input JSON names them as files, proteinChain.unpairedMsaPath and
// pairedMsaPath (data/msa/msa_featurizer.py, InferenceMSAFeaturizer.make_msa_feature).
// Before the run, `pred` searches a target on an alignment server when one of its protein
// entities names neither file or names one that is missing (runner/msa_search.py,
// need_msa_search). So every protein entity here names an unpaired file that exists (the
// chain alone when it is folded single-sequence), and the tool never searches.
//
// Paired files count only in a target of two or more distinct protein sequences, and the
// tools pair their rows across chains by the species each row's header gives, not by row
// order (data/msa/msa_utils.py: MSAPairingEngine.get_species_ids, which reads a species
// from a header ^UniRef100_<accession>_<species> with _UNIREF_REGEX, and
// pair_chains_by_species, which lines up the rows of each species shared by two or more
// chains and leaves out rows without one). A search pairs by row order instead: row i of
// every chain's paired A3M comes from one organism (align.Result.Paired), under headers
// that name no species. pairedForTool gives row i of every chain the species row<i>.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/chaperone-bio/chaperone/align"
	"github.com/chaperone-bio/chaperone/bio"
)

// The names of a chain's alignment files, as the tools name theirs.
const (
	pairedFile   = "pairing.a3m"
	unpairedFile = "non_pairing.a3m"
)

// alignmentSource is where a protein entity's alignment comes from.
type alignmentSource int

const (
	fromSearch   alignmentSource = iota // the alignment stage's search
	sentInline                          // the input, inline
	emptyByInput                        // none: msa: empty
	serverOff                           // none: use_msa_server is off
)

// planAlignment writes the alignment files of the protein entity i and names them in p:
// an alignment sent inline as A3M files, a chain folded single-sequence as an A3M of its
// own sequence alone, and a chain left to the server as the alignments searched for it.
func (t *target) planAlignment(i int, p *polymer, useServer bool, searched *align.Result, dir string) error {
	en := t.cx.Entities[i]
	base := filepath.Join(dir, t.cx.Name, fmt.Sprintf("entity%d", i+1))
	write := func(name, text string) (string, error) {
		path := base + "_" + name
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return "", err
		}
		return path, os.WriteFile(path, []byte(text), 0o644)
	}
	var err error
	switch {
	case en.MSA.Source == bio.MSAInline && en.MSA.Format == bio.A3M:
		t.sources = append(t.sources, sentInline)
		p.UnpairedMSAPath, err = write(unpairedFile, en.MSA.Text)
		t.msa = true
	case en.MSA.Source == bio.MSAInline:
		t.sources = append(t.sources, sentInline)
		paired, unpaired := csvToA3M(en.Sequence, en.MSA.Text)
		if paired != "" {
			if p.PairedMSAPath, err = write(pairedFile, paired); err != nil {
				return err
			}
		}
		p.UnpairedMSAPath, err = write(unpairedFile, unpaired)
		t.msa = true
	case en.MSA.Source == bio.MSANone || !useServer:
		source := serverOff
		if en.MSA.Source == bio.MSANone {
			source = emptyByInput
		}
		t.sources = append(t.sources, source)
		p.UnpairedMSAPath, err = write(unpairedFile, ">query\n"+en.Sequence+"\n")
	default:
		var unpaired, paired string
		ok := searched != nil
		if ok {
			unpaired, paired, ok = searched.Chain(en.Sequence)
		}
		if !ok {
			// toolkit.Searched found a result of every chain; this is a bug of ours.
			return errors.New("no alignment of chain " + en.IDs[0] + " among those searched for the target")
		}
		t.sources = append(t.sources, fromSearch)
		t.searched = searched
		// The unpaired A3M goes as searched: its first row is the chain, which is all the
		// tools check of it (msa_utils.py, RawMsa._verify_query: the same length), and they
		// drop repeated rows (RawMsa.from_a3m, dedup), such as the chain heading the
		// environmental block again.
		if p.UnpairedMSAPath, err = write(unpairedFile, withNewline(unpaired)); err != nil {
			return err
		}
		if paired != "" {
			p.PairedMSAPath, err = write(pairedFile, pairedForTool(paired))
		}
		t.msa = true
	}
	return err
}

// pairedForTool is a chain's paired A3M from a search with every row after the first
// under the header UniRef100_searched_row<i>/ followed by a tab and the search's own
// header, so that the tools read species row<i> at row i of every chain and pair the
// rows as the search did (see the top of this file). The first row, the chain itself,
// keeps its header: the tools pair it with the other chains' first rows whatever it says
// (pair_chains_by_species always keeps row 0), and a species would pair it a second time.
// The rows keep their order: the tools rank rows shared by as many chains by the sum of
// the logarithms of their row numbers, which grows with i here.
func pairedForTool(a3m string) string {
	var b strings.Builder
	row := -1
	for line := range strings.Lines(withNewline(a3m)) {
		if header, ok := strings.CutPrefix(line, ">"); ok {
			if row++; row > 0 {
				b.WriteString(">UniRef100_searched_row" + strconv.Itoa(row) + "/\t" + header)
				continue
			}
		}
		b.WriteString(line)
	}
	return b.String()
}

func withNewline(s string) string {
	if s != "" && !strings.HasSuffix(s, "\n") {
		return s + "\n"
	}
	return s
}

// csvToA3M turns Boltz's alignment CSV (key,sequence; rows of several chains with the same
// key are paired) into the tools' two A3M files: rows with a key go to the paired file,
// each under a header whose species is its key (key<k>, which no searched row has), as the
// tools pair rows of one species across chains; rows without one go to the unpaired file.
// Each file starts with the query; a row that is the query itself is left out, as the
// tools' own search leaves it out. paired is empty when no row has a key.
func csvToA3M(query, text string) (paired, unpaired string) {
	var p, u strings.Builder
	head := ">query\n" + query + "\n"
	u.WriteString(head)
	keyCol, seqCol := -1, 1
	n := 0
	for line := range strings.Lines(text) {
		fields := strings.Split(strings.TrimSpace(line), ",")
		if len(fields) != 2 {
			continue
		}
		if keyCol < 0 {
			keyCol = 0
			if fields[0] == "sequence" {
				keyCol, seqCol = 1, 0
			}
			continue
		}
		key, seq := fields[keyCol], fields[seqCol]
		if seq == query {
			continue
		}
		n++
		if k, err := strconv.Atoi(key); err == nil && k >= 0 {
			if p.Len() == 0 {
				p.WriteString(head)
			}
			fmt.Fprintf(&p, ">UniRef100_row%d_key%d/\n%s\n", n, k, seq)
			continue
		}
		fmt.Fprintf(&u, ">row%d\n%s\n", n, seq)
	}
	return p.String(), u.String()
}

// alignmentNote says where the target's alignments come from, chain by chain, for the
// run log; "" for a target without protein chains.
func (t *target) alignmentNote() string {
	var order []string
	ids := map[string][]string{}
	k := 0
	for _, en := range t.cx.Entities {
		if en.Kind != bio.Protein {
			continue
		}
		what := t.describe(t.sources[k])
		k++
		if ids[what] == nil {
			order = append(order, what)
		}
		ids[what] = append(ids[what], en.IDs...)
	}
	parts := make([]string, len(order))
	for i, what := range order {
		parts[i] = chainList(ids[what], "", "") + ": " + what
	}
	return strings.Join(parts, "; ")
}

func (t *target) describe(s alignmentSource) string {
	switch s {
	case sentInline:
		return "as sent with the input"
	case emptyByInput:
		return "single-sequence (msa: empty)"
	case serverOff:
		return "single-sequence (use_msa_server is off)"
	}
	r := t.searched
	pairing := "paired across its chains"
	switch {
	case len(r.Chains) == 1:
		pairing = "unpaired (one distinct chain)"
	case r.Paired == nil:
		pairing = "unpaired (the search gave no pairing)"
	}
	return fmt.Sprintf("searched before the run (%s), %s", r.Source, pairing)
}

// chainList names chains for a message: "chain A" or "chains A, B", followed by the verb
// for one or for several when given.
func chainList(ids []string, one, several string) string {
	s, verb := "chain ", one
	if len(ids) > 1 {
		s, verb = "chains ", several
	}
	s += strings.Join(ids, ", ")
	if verb != "" {
		s += " " + verb
	}
	return s
}
