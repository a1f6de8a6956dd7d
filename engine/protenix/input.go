package protenix

import (
	"slices"
	"strings"

	"github.com/chaperone-bio/chaperone/align"
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
	// sources says where the alignment of each protein entity comes from, in entity
	// order, and searched is the search of its chains left to the server, for the run log.
	sources  []alignmentSource
	searched *align.Result
}

// planTarget turns a complex into the tool's JSON entry and writes under dir the
// alignment files it names for every protein chain (planAlignment), with searched the
// alignments the alignment stage searched for the complex (nil when it needed none).
func planTarget(cx *bio.Complex, useServer bool, searched *align.Result, dir string) (*target, error) {
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
				if err := t.planAlignment(i, p, useServer, searched, dir); err != nil {
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
	return t, nil
}
