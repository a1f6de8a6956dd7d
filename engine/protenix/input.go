package protenix

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/chaperone-bio/chaperone/bio"
)

// inputJob is one entry of the tool's input JSON list (docs/infer_json_format.md,
// protenix/data/inference/json_to_feature.py): a target, named for its output folder.
type inputJob struct {
	Name      string     `json:"name"`
	Sequences []sequence `json:"sequences"`
}

// sequence is one entity of a job; exactly one field is set.
type sequence struct {
	ProteinChain *polymer  `json:"proteinChain,omitempty"`
	DNASequence  *polymer  `json:"dnaSequence,omitempty"`
	RNASequence  *polymer  `json:"rnaSequence,omitempty"`
	Ligand       *molecule `json:"ligand,omitempty"`
	Ion          *molecule `json:"ion,omitempty"`
}

// polymer is a proteinChain, dnaSequence or rnaSequence: count copies named by id (the
// caller's chain ids, which the tools keep in their mmCIF).
type polymer struct {
	Sequence        string         `json:"sequence"`
	Count           int            `json:"count"`
	ID              []string       `json:"id"`
	Modifications   []modification `json:"modifications,omitempty"`
	PairedMSAPath   string         `json:"pairedMsaPath,omitempty"`
	UnpairedMSAPath string         `json:"unpairedMsaPath,omitempty"`
}

// modification is spelled per kind as json_parser.py reads it: ptmType and ptmPosition on
// a protein, modificationType and basePosition on DNA and RNA, the code as CCD_<code>.
type modification struct {
	PTMType          string `json:"ptmType,omitempty"`
	PTMPosition      int    `json:"ptmPosition,omitempty"`
	ModificationType string `json:"modificationType,omitempty"`
	BasePosition     int    `json:"basePosition,omitempty"`
}

// molecule is a ligand (CCD_<code>[_<code>...] or SMILES in Ligand) or an ion (its CCD
// code without prefix in Ion).
type molecule struct {
	Ligand string   `json:"ligand,omitempty"`
	Ion    string   `json:"ion,omitempty"`
	Count  int      `json:"count"`
	ID     []string `json:"id"`
}

// ions are the CCD codes of single-atom ions, which the tools take as ion entities.
var ions = []string{"LI", "NA", "K", "RB", "CS", "MG", "CA", "SR", "BA", "MN", "FE", "FE2", "CO", "NI", "CU",
	"CU1", "ZN", "CD", "HG", "AG", "AU", "PT", "PB", "AL", "GA", "F", "CL", "BR", "IOD", "YB", "LA", "TB", "GD", "SM", "EU"}

// target is one complex of the job as this engine runs it.
type target struct {
	cx    *bio.Complex
	entry inputJob
	msa   bool // some chain is folded with an alignment
	// search: the tool searches this target's protein chains on the server in this run;
	// cacheKey names that search in the alignment cache, and seqs are the sequences it
	// sends, in its order (runner/msa_search.py, update_seq_msa: sorted).
	search   bool
	cached   bool
	cacheKey string
	seqs     []string
}

// planTarget turns a complex into the tool's JSON entry and writes the alignment files
// it names under dir: an alignment sent inline as A3M files, a chain folded
// single-sequence as an A3M of its own sequence alone (so the tool neither searches it
// nor mixes in another chain's search), and alignments found in the cache. A target whose
// chains are left to the server names no alignment file, and the tool searches them.
func planTarget(cx *bio.Complex, useServer bool, f *flavor, server string, cache getter, dir string) (*target, error) {
	t := &target{cx: cx, entry: inputJob{Name: cx.Name}}
	for i, en := range cx.Entities {
		count := len(en.IDs)
		switch en.Kind {
		case bio.Protein, bio.DNA, bio.RNA:
			p := &polymer{Sequence: en.Sequence, Count: count, ID: en.IDs}
			for _, m := range en.Modifications {
				if en.Kind == bio.Protein {
					p.Modifications = append(p.Modifications, modification{PTMType: "CCD_" + m.CCD, PTMPosition: m.Position})
				} else {
					p.Modifications = append(p.Modifications, modification{ModificationType: "CCD_" + m.CCD, BasePosition: m.Position})
				}
			}
			switch en.Kind {
			case bio.Protein:
				t.entry.Sequences = append(t.entry.Sequences, sequence{ProteinChain: p})
				if err := t.planAlignment(i, p, useServer, dir); err != nil {
					return nil, err
				}
			case bio.DNA:
				t.entry.Sequences = append(t.entry.Sequences, sequence{DNASequence: p})
			default:
				t.entry.Sequences = append(t.entry.Sequences, sequence{RNASequence: p})
			}
		default:
			m := &molecule{Count: count, ID: en.IDs}
			switch {
			case en.SMILES != "":
				m.Ligand = en.SMILES
				t.entry.Sequences = append(t.entry.Sequences, sequence{Ligand: m})
			case len(en.CCD) == 1 && slices.Contains(ions, en.CCD[0]):
				m.Ion = en.CCD[0]
				t.entry.Sequences = append(t.entry.Sequences, sequence{Ion: m})
			default:
				m.Ligand = "CCD_" + strings.Join(en.CCD, "_")
				t.entry.Sequences = append(t.entry.Sequences, sequence{Ligand: m})
			}
		}
	}
	if !t.search {
		return t, nil
	}
	t.msa = true
	t.cacheKey = cacheKey(f, server, t.seqs)
	files := map[string]string{}
	for i := range distinct(t.seqs) {
		for _, name := range []string{pairedFile, unpairedFile} {
			files[strconv.Itoa(i)+"/"+name] = filepath.Join(dir, cx.Name, "cached", strconv.Itoa(i), name)
		}
	}
	if !cache.Get(t.cacheKey, files) {
		return t, nil
	}
	t.search, t.cached = false, true
	for _, sq := range t.entry.Sequences {
		if p := sq.ProteinChain; p != nil {
			i := slices.Index(distinct(t.seqs), p.Sequence)
			p.PairedMSAPath = files[strconv.Itoa(i)+"/"+pairedFile]
			p.UnpairedMSAPath = files[strconv.Itoa(i)+"/"+unpairedFile]
		}
	}
	return t, nil
}

// The names of a search's alignment files in a cache entry, as the tools name theirs.
const (
	pairedFile   = "pairing.a3m"
	unpairedFile = "non_pairing.a3m"
)

// getter is the alignment cache as planTarget reads it.
type getter interface {
	Get(key string, files map[string]string) bool
}

// planAlignment decides where the alignment of the protein entity i comes from.
func (t *target) planAlignment(i int, p *polymer, useServer bool, dir string) error {
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
		p.UnpairedMSAPath, err = write(unpairedFile, en.MSA.Text)
		t.msa = true
	case en.MSA.Source == bio.MSAInline:
		paired, unpaired := csvToA3M(en.Sequence, en.MSA.Text)
		if paired != "" {
			if p.PairedMSAPath, err = write(pairedFile, paired); err != nil {
				return err
			}
		}
		p.UnpairedMSAPath, err = write(unpairedFile, unpaired)
		t.msa = true
	case en.MSA.Source == bio.MSANone || !useServer:
		p.UnpairedMSAPath, err = write(unpairedFile, ">query\n"+en.Sequence+"\n")
	default:
		t.search = true
		t.seqs = append(t.seqs, en.Sequence)
		slices.Sort(t.seqs)
	}
	return err
}

// csvToA3M turns Boltz's alignment CSV (key,sequence; rows of several chains with the same
// key are paired) into the tools' two A3M files: rows with a key go to the paired file,
// each under a header whose species is its key, as the tools pair rows of one species
// across chains (protenix/data/msa/msa_utils.py, _UNIREF_REGEX); rows without one go to
// the unpaired file. Each file starts with the query; a row that is the query itself is
// left out, as the tools' own search leaves it out. paired is empty when no row has a key.
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

// distinct is the sorted sequences without repeats.
func distinct(seqs []string) []string {
	return slices.Compact(slices.Clone(seqs))
}
