package openfold3

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/chaperone-bio/chaperone/align"
	"github.com/chaperone-bio/chaperone/bio"
)

// OpenFold3 0.5 reads a chain's precomputed alignments from the files its query JSON lists
// (main_msa_file_paths, paired_msa_file_paths), the way its own ColabFold step leaves them
// (core/data/tools/colabfold_msa_server.py:884-890, 979-985, 1020-1063):
//   - A file is read only under a stem of MSASettings.max_seq_counts, and becomes part of
//     the main alignment only under a stem of aln_order, of the paired one only under a
//     stem of paired_msa_order (dataset_config_components.py:80-116,
//     core/data/io/sequence/msa.py:229-287): colabfold_main.a3m and colabfold_paired.a3m,
//     as ColabFold's text.
//   - The folder that holds an .a3m names the chain's alignments (io/sequence/msa.py:
//     616-622, the representative id): chains whose files are in one folder share them.
//   - The main alignment's first row is the query (io/sequence/msa.py:705-708). Main rows
//     are deduplicated, and rows that also appear in the paired alignment are dropped
//     (core/data/pipelines/sample_processing/msa.py:340-390).
//   - Precomputed paired alignments are stacked row for row across the chains, as they
//     are, and must have the same number of rows in every chain that has one; a protein
//     chain without one gets gap rows (sample_processing/msa.py:194-285). Without any,
//     OpenFold3 pairs by species only from files named uniprot_hits or uniprot
//     (msas_to_pair; sample_processing/msa.py:652-681, primitives/sequence/msa.py:
//     632-680), so a complex given ColabFold's main alignments alone would go unpaired.
//
// The model sees the query row, then the paired rows (the whole paired A3M, its query row
// included, as OpenFold3's own ColabFold step writes it), then the main rows
// (core/data/primitives/featurization/msa.py:109-123).

// chainMSA is the alignments one protein entity is folded with.
type chainMSA struct {
	main   string // its unpaired A3M, the query first
	paired string // its paired A3M, the query first; "" for none
	// searched is true for alignments of the alignment stage, false for those the caller
	// sent.
	searched bool
}

// chainMSAs gathers a target's alignments by entity (nil for an entity without): those the
// caller sent and, with res, those the alignment stage searched.
func chainMSAs(cx *bio.Complex, res *align.Result) ([]*chainMSA, error) {
	msas := sentMSAs(cx)
	if res != nil {
		for i, e := range cx.Entities {
			if e.Kind != bio.Protein || e.MSA.Source != bio.MSAAuto {
				continue
			}
			unpaired, paired, ok := res.Chain(e.Sequence)
			if !ok {
				return nil, fmt.Errorf("target %s: the searched alignments lack chain %s", cx.Name, e.IDs[0])
			}
			msas[i] = &chainMSA{main: withNewline(unpaired), paired: withNewline(paired), searched: true}
		}
	}
	joinPairing(cx, msas)
	return msas, nil
}

// sentMSAs are the alignments the caller sent for a target. An A3M is the chain's main
// alignment. Boltz's CSV pairs rows of several chains by key: with two or more CSV chains,
// the keyed rows become each chain's paired alignment, row for row across chains (a gap row
// where a chain lacks a key), and the unkeyed rows its main alignment; a CSV chain alone
// keeps every row in its main alignment.
func sentMSAs(cx *bio.Complex) []*chainMSA {
	msas := make([]*chainMSA, len(cx.Entities))
	var csv []int
	for i, e := range cx.Entities {
		if e.Kind == bio.Protein && e.MSA.Source == bio.MSAInline && e.MSA.Format == bio.CSV {
			csv = append(csv, i)
		}
	}
	var keys []int
	if len(csv) > 1 {
		seen := map[int]bool{}
		for _, i := range csv {
			for _, r := range csvRows(cx.Entities[i].MSA.Text) {
				if r.keyed && !seen[r.key] {
					seen[r.key] = true
					keys = append(keys, r.key)
				}
			}
		}
		slices.Sort(keys)
	}
	for i, e := range cx.Entities {
		if e.Kind != bio.Protein || e.MSA.Source != bio.MSAInline {
			continue
		}
		m := &chainMSA{}
		if e.MSA.Format == bio.A3M {
			m.main = a3m(e.MSA.Text)
		} else {
			m.main, m.paired = splitCSV(e.Sequence, csvRows(e.MSA.Text), keys)
		}
		msas[i] = m
	}
	return msas
}

// joinPairing makes one paired block of a target whose paired alignments come from both
// the search and the caller's CSVs: OpenFold3 stacks every chain's paired A3M row for row
// and refuses ones of different lengths. The search's rows come first, then the CSV's; a
// chain has gap rows where the other source pairs it with nothing. With one source, the
// paired A3Ms are left as they are.
func joinPairing(cx *bio.Complex, msas []*chainMSA) {
	searchedRows, sentRows := -1, -1 // rows after the query row; -1 for no such source
	for _, m := range msas {
		switch {
		case m == nil || m.paired == "":
		case m.searched:
			searchedRows = align.Rows(m.paired) - 1
		default:
			sentRows = align.Rows(m.paired) - 1
		}
	}
	if searchedRows < 0 || sentRows < 0 {
		return
	}
	for i, m := range msas {
		if m == nil || m.paired == "" {
			continue
		}
		width := len(cx.Entities[i].Sequence)
		if m.searched {
			m.paired += gapRows(width, sentRows)
		} else {
			query, rest := splitQueryRow(m.paired)
			m.paired = query + gapRows(width, searchedRows) + rest
		}
	}
}

// gapRows are n A3M rows of gaps only, of a chain of width residues.
func gapRows(width, n int) string {
	var b strings.Builder
	for range n {
		fmt.Fprintf(&b, ">gap\n%s\n", strings.Repeat("-", width))
	}
	return b.String()
}

// splitQueryRow splits an A3M of one record per two lines after its first record.
func splitQueryRow(a3m string) (query, rest string) {
	lines := strings.SplitAfterN(a3m, "\n", 3)
	if len(lines) < 3 {
		return a3m, ""
	}
	return lines[0] + lines[1], lines[2]
}

func withNewline(s string) string {
	if s != "" && !strings.HasSuffix(s, "\n") {
		return s + "\n"
	}
	return s
}

// writeMSAs writes a target's alignments into the run's files folder, one folder per
// entity, and points the target's chains at them.
func writeMSAs(t *target, files string, msas []*chainMSA) error {
	for i, m := range msas {
		if m == nil {
			continue
		}
		a := &alignment{dir: entityDir(files, t.cx.Name, i), main: true, paired: m.paired != ""}
		if err := os.MkdirAll(a.dir, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(a.dir, mainMSA), []byte(m.main), 0o644); err != nil {
			return err
		}
		if a.paired {
			if err := os.WriteFile(filepath.Join(a.dir, pairedMSA), []byte(m.paired), 0o644); err != nil {
				return err
			}
		}
		t.alignments[i] = a
	}
	return nil
}

// alignmentNote says, for the run log, where each protein chain's alignments of a target
// come from.
func alignmentNote(cx *bio.Complex, useServer bool, res *align.Result) string {
	var parts []string
	for _, e := range cx.Entities {
		if e.Kind != bio.Protein {
			continue
		}
		var from string
		switch {
		case e.MSA.Source == bio.MSAInline:
			from = "sent with the input (" + e.MSA.Format + ")"
		case e.MSA.Source == bio.MSANone:
			from = "none, single-sequence (msa: empty)"
		case !useServer:
			from = "none, single-sequence (use_msa_server is off)"
		default:
			from = "searched before the run on " + res.Source.String()
			if res.Paired != nil {
				from += ", paired across its " + fmt.Sprint(len(res.Chains)) + " distinct chains"
			}
		}
		parts = append(parts, "chain "+strings.Join(e.IDs, ",")+" "+from)
	}
	if len(parts) == 0 {
		return "no protein chain, nothing aligned"
	}
	return strings.Join(parts, "; ")
}
