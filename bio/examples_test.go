package bio

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The inputs under testdata/inputs are our own, one file per feature of the input
// language. Together they cover every feature that the examples/ folder of Boltz
// (github.com/jwohlwend/boltz) shows:
//
//	prot.yaml, prot.fasta          one protein chain: protein.yaml, boltz_headers.fasta
//	prot_no_msa.yaml               msa: empty: single_sequence.yaml, cyclic_peptide.yaml
//	prot_custom_msa.yaml           a custom MSA: inline_msa.yaml, paired_msa.yaml (content,
//	                               where Boltz names a file; a file name is msa_path.yaml)
//	multimer.yaml                  two protein chains: multimer.yaml, plain.fasta
//	ligand.yaml, ligand.fasta      copies and ligands by CCD and SMILES: ligands.yaml,
//	                               boltz_headers.fasta (MSA file names: msa_path.*)
//	pocket.yaml                    a pocket constraint: pocket_contact.yaml
//	cyclic_prot.yaml               a cyclic chain: cyclic_peptide.yaml
//	affinity.yaml                  affinity with a binder: affinity.yaml
//
// and the rest of the schema of Boltz's docs/prediction.md: contact (pocket_contact.yaml),
// bond (covalent_bond.yaml), modifications (modified_residues.yaml), DNA and RNA
// (boltz_headers.fasta, modified_residues.yaml) and templates (templates.yaml,
// template_path.yaml).

// Features an input can show, as featuresOf finds them in the parsed complex.
const (
	plainFASTA     = "plain FASTA"
	headerFASTA    = "FASTA with Boltz headers"
	proteinYAML    = "YAML of proteins only"
	copies         = "copies of an entity"
	heteromer      = "different protein chains"
	dnaChain       = "DNA"
	rnaChain       = "RNA"
	ccdLigand      = "ligand by CCD code"
	smilesLigand   = "ligand by SMILES"
	a3mMSA         = "inline A3M alignment"
	csvMSA         = "inline CSV alignment"
	noMSA          = "msa: empty"
	pocketRule     = "pocket constraint"
	contactRule    = "contact constraint"
	bondRule       = "bond constraint"
	cyclicChain    = "cyclic chain"
	modification   = "modified residue"
	affinityBinder = "affinity with a binder"
	cifTemplate    = "mmCIF template as content"
	pdbTemplate    = "PDB template as content"
	forcedTemplate = "forced template with a threshold"
)

// allFeatures lists the features in the order featuresOf reports them.
var allFeatures = []string{plainFASTA, headerFASTA, proteinYAML, copies, heteromer, dnaChain, rnaChain,
	ccdLigand, smilesLigand, a3mMSA, csvMSA, noMSA, pocketRule, contactRule, bondRule,
	cyclicChain, modification, affinityBinder, cifTemplate, pdbTemplate, forcedTemplate}

// featuresOf lists the features that a complex read from file shows, in the order of
// allFeatures. A FASTA file shows Boltz's headers when it holds anything a plain FASTA
// read cannot give: a chain that is not a protein, or one folded without an alignment.
func featuresOf(file string, c *Complex) []string {
	has := map[string]bool{}
	proteinsOnly, headers, proteins := true, false, 0
	for _, e := range c.Entities {
		proteinsOnly = proteinsOnly && e.Kind == Protein
		headers = headers || e.Kind != Protein || e.MSA.Source != MSAAuto
		if e.Kind == Protein {
			proteins++
		}
		has[copies] = has[copies] || len(e.IDs) > 1
		has[dnaChain] = has[dnaChain] || e.Kind == DNA
		has[rnaChain] = has[rnaChain] || e.Kind == RNA
		has[ccdLigand] = has[ccdLigand] || len(e.CCD) > 0
		has[smilesLigand] = has[smilesLigand] || e.SMILES != ""
		has[a3mMSA] = has[a3mMSA] || e.MSA.Source == MSAInline && e.MSA.Format == A3M
		has[csvMSA] = has[csvMSA] || e.MSA.Source == MSAInline && e.MSA.Format == CSV
		has[noMSA] = has[noMSA] || e.MSA.Source == MSANone
		has[cyclicChain] = has[cyclicChain] || e.Cyclic
		has[modification] = has[modification] || len(e.Modifications) > 0
	}
	fasta := filepath.Ext(file) == ".fasta"
	has[plainFASTA] = fasta && !headers
	has[headerFASTA] = fasta && headers
	has[proteinYAML] = !fasta && proteinsOnly
	has[heteromer] = proteins > 1
	for _, k := range c.Constraints {
		has[pocketRule] = has[pocketRule] || k.Pocket != nil
		has[contactRule] = has[contactRule] || k.Contact != nil
		has[bondRule] = has[bondRule] || k.Bond != nil
	}
	has[affinityBinder] = c.Affinity != nil && c.Affinity.Binder != ""
	for _, t := range c.Templates {
		has[cifTemplate] = has[cifTemplate] || t.Format == MMCIF && t.Text != ""
		has[pdbTemplate] = has[pdbTemplate] || t.Format == PDB && t.Text != ""
		has[forcedTemplate] = has[forcedTemplate] || t.Force && t.Threshold > 0
	}
	var list []string
	for _, f := range allFeatures {
		if has[f] {
			list = append(list, f)
		}
	}
	return list
}

// inputExamples describes every file under testdata/inputs: what it reads as, or why it is
// refused.
var inputExamples = []struct {
	file             string
	chains, residues int
	features         []string
	refusedFor       string
}{
	{file: "plain.fasta", chains: 2, residues: 62 + 29, features: []string{plainFASTA, heteromer}},
	{file: "boltz_headers.fasta", chains: 6, residues: 45 + 14 + 12 + 12 + 1 + 1,
		features: []string{headerFASTA, heteromer, dnaChain, rnaChain, ccdLigand, smilesLigand, noMSA}},
	{file: "protein.yaml", chains: 1, residues: 58, features: []string{proteinYAML}},
	{file: "multimer.yaml", chains: 3, residues: 2*34 + 33, features: []string{proteinYAML, copies, heteromer}},
	{file: "ligands.yaml", chains: 6, residues: 2*43 + 2 + 2, features: []string{copies, ccdLigand, smilesLigand}},
	{file: "inline_msa.yaml", chains: 1, residues: 20, features: []string{proteinYAML, a3mMSA}},
	{file: "paired_msa.yaml", chains: 2, residues: 11 + 10, features: []string{proteinYAML, heteromer, csvMSA}},
	{file: "single_sequence.yaml", chains: 2, residues: 27 + 17, features: []string{proteinYAML, heteromer, noMSA}},
	{file: "pocket_contact.yaml", chains: 2, residues: 50 + 1, features: []string{ccdLigand, pocketRule, contactRule}},
	{file: "covalent_bond.yaml", chains: 2, residues: 22 + 1, features: []string{ccdLigand, bondRule}},
	{file: "cyclic_peptide.yaml", chains: 1, residues: 10, features: []string{proteinYAML, noMSA, cyclicChain}},
	{file: "modified_residues.yaml", chains: 2, residues: 13 + 10, features: []string{rnaChain, modification}},
	{file: "affinity.yaml", chains: 2, residues: 37 + 1, features: []string{smilesLigand, affinityBinder}},
	{file: "templates.yaml", chains: 3, residues: 2*4 + 3,
		features: []string{proteinYAML, copies, heteromer, cifTemplate, pdbTemplate, forcedTemplate}},
	{file: "msa_path.yaml", refusedFor: `line 6, column 12: sequences[0].protein.msa: "alignments/kinase.a3m" is a path to a file, and the service never reads files on the server`},
	{file: "msa_path.fasta", refusedFor: `line 1: header >A|protein|alignments/kinase.a3m: the MSA field "alignments/kinase.a3m" is a path to a file`},
	{file: "template_path.yaml", refusedFor: `line 7, column 10: templates[0].cif "templates/kinase.cif" is a path to a file, and the service never reads files on the server`},
}

func readInputExample(t testing.TB, file string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "inputs", file))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestInputExamples(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("testdata", "inputs", "*"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(inputExamples) {
		t.Fatalf("testdata/inputs holds %d files; the table describes %d", len(files), len(inputExamples))
	}
	for _, tt := range inputExamples {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			name := strings.TrimSuffix(tt.file, filepath.Ext(tt.file))
			c, err := ParseInput(name, readInputExample(t, tt.file))
			if tt.refusedFor != "" {
				if err == nil || !strings.Contains(err.Error(), tt.refusedFor) {
					t.Fatalf("error = %v, want one containing %q", err, tt.refusedFor)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.NumChains() != tt.chains || c.NumResidues() != tt.residues {
				t.Errorf("chains %d, residues %d; want %d, %d", c.NumChains(), c.NumResidues(), tt.chains, tt.residues)
			}
			if got := featuresOf(tt.file, c); !slices.Equal(got, tt.features) {
				t.Errorf("features %q, want %q", got, tt.features)
			}
		})
	}
}

// TestInputExamplesCoverTheSchema keeps testdata/inputs whole: every feature is shown by
// at least one accepted file.
func TestInputExamplesCoverTheSchema(t *testing.T) {
	t.Parallel()
	shown := map[string]bool{}
	for _, tt := range inputExamples {
		for _, f := range tt.features {
			shown[f] = true
		}
	}
	for _, f := range allFeatures {
		if !shown[f] {
			t.Errorf("no example shows %s", f)
		}
	}
}
