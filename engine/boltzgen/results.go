package boltzgen

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/chaperone-bio/chaperone/engine"
	"github.com/chaperone-bio/chaperone/engine/toolkit"
	"github.com/chaperone-bio/chaperone/job"
)

// Columns of BoltzGen's metrics tables (task/filter/filter.py) that a design entry holds
// outside its metrics.
const (
	colID            = "id"
	colFinalRank     = "final_rank"
	colFileName      = "file_name"
	colSequence      = "designed_sequence"
	colChainSequence = "designed_chain_sequence"
)

// Artifacts of a run besides the designs' structures.
const (
	finalTable = "final_designs_metrics.csv"
	allTable   = "all_designs_metrics.csv"
	tables     = "tables" // the target of the tables
)

// readDesigns reads the final ranked set of a run: final_<budget>_designs/ holds each
// kept design as rank<final_rank>_<file_name>, and final_designs_metrics_<budget>.csv its
// row. Designs come rank 1 first, each with BoltzGen's pass_filters among its metrics: a
// design that fails the filters is still in the set, ranked after those that pass. The job
// fails with BoltzGen's own message when the set is missing or empty.
func readDesigns(dir string, budget int, mon *monitor, exit error) (*engine.Output, error) {
	table := filepath.Join(dir, fmt.Sprintf("final_designs_metrics_%d.csv", budget))
	rows, err := readTable(table)
	if err != nil {
		return nil, missing(mon, exit, err)
	}
	if len(rows) == 0 {
		// BoltzGen's filtering keeps its budget of designs whether they pass its filters or
		// not (task/filter/filter.py:396-630), so an empty set means it was given none.
		return nil, missing(mon, exit, fmt.Errorf("%s lists no design: BoltzGen's earlier steps gave its filtering none", filepath.Base(table)))
	}
	sort.SliceStable(rows, func(i, j int) bool { return rankOf(rows[i]) < rankOf(rows[j]) })
	kept := filepath.Join(dir, fmt.Sprintf("final_%d_designs", budget))
	out := &engine.Output{}
	for i, row := range rows {
		local, err := designFile(kept, row)
		if err != nil {
			return nil, missing(mon, exit, err)
		}
		rank := i + 1
		id := row[colID]
		sequence := row[colChainSequence]
		if sequence == "" {
			sequence = row[colSequence]
		}
		path := fmt.Sprintf("designs/rank%02d_%s.cif", rank, safeName(id))
		out.Designs = append(out.Designs, job.Design{ID: id, Rank: &rank, Sequence: sequence, File: path, Metrics: metrics(row)})
		out.Files = append(out.Files, toolkit.Artifact(path, id, job.ArtifactStructure, local))
	}
	out.Files = append(out.Files, toolkit.Artifact(finalTable, tables, job.ArtifactTable, table))
	if all := filepath.Join(dir, allTable); exists(all) {
		out.Files = append(out.Files, toolkit.Artifact(allTable, tables, job.ArtifactTable, all))
	}
	return out, nil
}

// missing is the error of a run without its final designs, in BoltzGen's words where it
// printed any.
func missing(mon *monitor, exit error, err error) error {
	why := mon.failure()
	switch {
	case exit != nil && why != "":
		// Exec's error repeats the output's end; the log has it all.
		return fmt.Errorf("boltzgen failed: %s", why)
	case exit != nil:
		return fmt.Errorf("boltzgen failed: %w", exit)
	case mon.lastError != "":
		return fmt.Errorf("boltzgen wrote no final designs: %s (%v)", mon.lastError, err)
	}
	return fmt.Errorf("boltzgen wrote no final designs: %v", err)
}

// readTable reads a CSV with a header into one map per row.
func readTable(path string) ([]map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s is missing", filepath.Base(path))
		}
		return nil, err
	}
	defer f.Close()
	records, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", filepath.Base(path), err)
	}
	if len(records) == 0 {
		return nil, fmt.Errorf("%s is empty", filepath.Base(path))
	}
	header := records[0]
	for _, need := range []string{colID, colFinalRank, colFileName} {
		if !slices.Contains(header, need) {
			return nil, fmt.Errorf("%s has no %s column", filepath.Base(path), need)
		}
	}
	rows := make([]map[string]string, 0, len(records)-1)
	for _, rec := range records[1:] {
		row := make(map[string]string, len(header))
		for i, h := range header {
			if i < len(rec) {
				row[h] = rec[i]
			}
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// rankOf is a row's final_rank, BoltzGen's rank by quality among all designs.
func rankOf(row map[string]string) float64 {
	r, err := strconv.ParseFloat(row[colFinalRank], 64)
	if err != nil {
		return math.Inf(1)
	}
	return r
}

// designFile finds a row's structure: BoltzGen names it rank<final_rank>_<file_name>,
// the rank zero-padded to the digits of the number of designs.
func designFile(dir string, row map[string]string) (string, error) {
	name := row[colFileName]
	rank, err := strconv.Atoi(strings.TrimSuffix(row[colFinalRank], ".0"))
	if err != nil || name == "" || strings.ContainsAny(name, `/\`) {
		return "", fmt.Errorf("design %s has the final_rank %q and file_name %q", row[colID], row[colFinalRank], name)
	}
	matches, err := filepath.Glob(filepath.Join(dir, "rank*_"+globQuote(name)))
	if err != nil {
		return "", err
	}
	for _, m := range matches {
		digits := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(m), "rank"), "_"+name)
		if n, err := strconv.Atoi(digits); err == nil && n == rank {
			return m, nil
		}
	}
	return "", fmt.Errorf("the structure of design %s (rank%d_%s) is missing from %s", row[colID], rank, name, filepath.Base(dir))
}

var globSpecial = regexp.MustCompile(`[*?\[\\]`)

func globQuote(s string) string { return globSpecial.ReplaceAllString(s, `\$0`) }

// metrics are a row's values but its id, sequences and file name: numbers as numbers,
// True and False as booleans, empty and NaN as null, anything else as text.
func metrics(row map[string]string) map[string]any {
	m := make(map[string]any, len(row))
	for k, v := range row {
		switch k {
		case colID, colFileName, colSequence, colChainSequence:
			continue
		}
		m[k] = value(v)
	}
	return m
}

func value(v string) any {
	switch v {
	case "", "nan", "NaN", "inf", "-inf":
		return nil
	case "True", "true":
		return true
	case "False", "false":
		return false
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
		return f
	}
	return v
}

// safeName keeps the letters, digits, '.', '_' and '-' of a design id for a file name.
func safeName(id string) string {
	s := strings.Map(func(r rune) rune {
		if 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '.' || r == '_' || r == '-' {
			return r
		}
		return '_'
	}, id)
	if len(s) > 64 {
		s = s[:64]
	}
	return strings.TrimLeft(s, ".")
}

func exists(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.Mode().IsRegular()
}

// passing counts the designs whose pass_filters is true.
func passing(designs []job.Design) int {
	n := 0
	for _, d := range designs {
		if d.Metrics["pass_filters"] == true {
			n++
		}
	}
	return n
}
