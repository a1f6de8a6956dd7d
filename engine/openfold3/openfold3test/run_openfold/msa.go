package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/chaperone-bio/chaperone/internal/standin"
)

// How OpenFold3 0.5 finds and reads a query's precomputed alignments, far enough to show
// that the engine's files are where the release looks and named as it reads them
// (core/data/io/sequence/msa.py, MsaSampleParserInference and parse_msas_direct;
// core/data/pipelines/sample_processing/msa.py, create_paired_from_precomputed;
// MSASettings of projects/of3_all_atom/config/dataset_config_components.py).

// mainStems and pairedStems are the file stems that enter a chain's main and paired
// alignments: aln_order, and paired_msa_order. A file under another stem is not read.
var (
	mainStems = []string{"uniref90_hits", "bfd_uniclust_hits", "bfd_uniref_hits", "cfdb_uniref30", "cfdb_hits", "mgnify_hits",
		"rfam_hits", "rnacentral_hits", "nt_hits", "nucleotide_collection_hits", "concat_cfdb_uniref100_filtered",
		"mmseqs_colabfold", "colabfold_main", "dummy"}
	pairedStems = []string{"colabfold_paired"}
)

// chainMSA is what the stand-in read for one chain: the folder that names its alignments
// (the representative id), and the rows of its main and paired alignments, lower-case
// insertions removed.
type chainMSA struct {
	rep          string
	main, paired []string
	mainFiles    []string // the main files read, as <folder>/<file>
}

// readAlignments reads the alignments of every protein and RNA chain of a query that
// lists files; a chain without files has none. It fails as the release fails a query: on
// a chain whose files hold no readable alignment, and on paired alignments of different
// lengths. It is stricter than the release in one way: a main alignment whose first row
// is not the chain's sequence is refused, where OpenFold3 would fold the chain with
// another's alignment or fail on its shape.
func readAlignments(q query) (map[string]*chainMSA, error) {
	out := map[string]*chainMSA{}
	pairedRows := map[string]int{}
	for _, c := range q.Chains {
		kind := strings.ToUpper(c.MoleculeType)
		if kind != "PROTEIN" && kind != "RNA" {
			continue
		}
		mainPaths, pairedPaths := slices.Sorted(slices.Values(c.MainMSAFilePaths)), slices.Sorted(slices.Values(c.PairedMSAFilePaths))
		paths := mainPaths
		if len(paths) == 0 {
			paths = pairedPaths
		}
		if len(paths) == 0 {
			continue
		}
		m := &chainMSA{rep: representative(paths)}
		if len(mainPaths) > 0 {
			byStem, err := readA3Ms(mainPaths, mainStems)
			if err != nil {
				return nil, err
			}
			if len(byStem) == 0 {
				// msa.py reads the query from the first file it parsed.
				return nil, fmt.Errorf("IndexError: list index out of range (no readable alignment among %v)", mainPaths)
			}
			for _, stem := range mainStems {
				m.main = append(m.main, byStem[stem]...)
			}
			for _, p := range mainPaths {
				m.mainFiles = append(m.mainFiles, filepath.Base(filepath.Dir(p))+"/"+filepath.Base(p))
			}
			if c.Sequence == nil || m.main[0] != *c.Sequence {
				return nil, fmt.Errorf("ValueError: the first row of the main alignment of chains %s is %q, not the chain", strings.Join(c.ChainIDs, ","), m.main[0])
			}
		}
		if len(pairedPaths) > 0 {
			byStem, err := readA3Ms(pairedPaths, pairedStems)
			if err != nil {
				return nil, err
			}
			m.paired = byStem["colabfold_paired"]
			pairedRows[m.rep] = len(m.paired)
		}
		for _, id := range c.ChainIDs {
			out[id] = m
		}
	}
	counts := map[int]bool{}
	for _, n := range pairedRows {
		counts[n] = true
	}
	if len(counts) > 1 {
		return nil, fmt.Errorf("ValueError: Precomputed paired MSAs have mismatched row counts across representatives after cropping: %v", pairedRows)
	}
	return out, nil
}

// representative names a chain's alignments as msa.py does: an .a3m or .sto file by its
// folder, a folder or .npz file by its own stem; the first in order when they differ.
func representative(paths []string) string {
	var reps []string
	for _, p := range paths {
		switch ext := filepath.Ext(p); {
		case ext == ".a3m" || ext == ".sto":
			reps = append(reps, strings.TrimSuffix(filepath.Base(filepath.Dir(p)), filepath.Ext(filepath.Dir(p))))
		default:
			reps = append(reps, strings.TrimSuffix(filepath.Base(p), ext))
		}
	}
	slices.Sort(reps)
	return reps[0]
}

// readA3Ms reads the A3M files among paths (a folder stands for the files in it) whose stem
// is one of stems, by stem. The stand-in reads A3M only: the engine writes no other format.
func readA3Ms(paths, stems []string) (map[string][]string, error) {
	var files []string
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("FileNotFoundError: %s", p)
		}
		if !info.IsDir() {
			files = append(files, p)
			continue
		}
		entries, _ := os.ReadDir(p)
		for _, e := range entries {
			if !e.IsDir() {
				files = append(files, filepath.Join(p, e.Name()))
			}
		}
	}
	out := map[string][]string{}
	for _, f := range files {
		stem, ext := strings.TrimSuffix(filepath.Base(f), filepath.Ext(f)), filepath.Ext(f)
		if !slices.Contains(stems, stem) {
			continue
		}
		if ext != ".a3m" {
			return nil, fmt.Errorf("NotImplementedError: the stand-in reads .a3m alignments, not %s", f)
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("OSError: %v", err)
		}
		rows, err := a3mRows(string(b))
		if err != nil {
			return nil, fmt.Errorf("%v (%s)", err, f)
		}
		out[stem] = rows
	}
	return out, nil
}

// a3mRows reads an A3M as fasta.py's parse_fasta and msa.py's parse_a3m do: '#' and blank
// lines skipped, a record's lines joined, lower-case insertions dropped; every row must
// then be as long as the first.
func a3mRows(text string) ([]string, error) {
	_, rows, err := standin.ParseA3M(text)
	if err != nil {
		return nil, err
	}
	for i, r := range rows {
		if len(r) != len(rows[0]) {
			return nil, fmt.Errorf("ValueError: row %d of the alignment has %d columns, the query %d", i+1, len(r), len(rows[0]))
		}
	}
	return rows, nil
}

// describe prints how the stand-in read a query's alignments, for tests to check.
func describe(name string, q query, msas map[string]*chainMSA) {
	useMSAs := q.UseMSAs == nil || *q.UseMSAs
	for _, c := range q.Chains {
		what := "no alignment"
		m := msas[c.ChainIDs[0]]
		switch {
		case !useMSAs:
			what = "single-sequence (use_msas false)"
		case m != nil && len(m.main) > 0:
			what = fmt.Sprintf("main %s (%d rows)", strings.Join(m.mainFiles, ","), len(m.main))
			if len(m.paired) > 0 {
				what += fmt.Sprintf(", paired %d rows", len(m.paired))
			}
		}
		fmt.Printf("[run_openfold stand-in] %s chains %s (%s): %s\n", name, strings.Join(c.ChainIDs, ","), strings.ToLower(c.MoleculeType), what)
	}
}
