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
//	prot.yaml, prot.fasta          one protein chain: protein.yaml, and in FASTA with
//	                               Boltz's headers boltz_headers.fasta
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
	showsPlainFASTA     = "plain FASTA"
	showsHeaderFASTA    = "FASTA with Boltz headers"
	showsProteinYAML    = "YAML of proteins only"
	showsCopies         = "copies of an entity"
	showsHeteromer      = "different protein chains"
	showsDNA            = "DNA"
	showsRNA            = "RNA"
	showsCCD            = "ligand by CCD code"
	showsSMILES         = "ligand by SMILES"
	showsA3M            = "inline A3M alignment"
	showsCSV            = "inline CSV alignment"
	showsNoMSA          = "msa: empty"
	showsPocket         = "pocket constraint"
	showsContact        = "contact constraint"
	showsBond           = "bond constraint"
	showsCyclic         = "cyclic chain"
	showsModification   = "modified residue"
	showsAffinity       = "affinity with a binder"
	showsCIFTemplate    = "mmCIF template as content"
	showsPDBTemplate    = "PDB template as content"
	showsForcedTemplate = "forced template with a threshold"
)

// allFeatures lists the features in the order featuresOf reports them.
var allFeatures = []string{showsPlainFASTA, showsHeaderFASTA, showsProteinYAML, showsCopies, showsHeteromer, showsDNA, showsRNA,
	showsCCD, showsSMILES, showsA3M, showsCSV, showsNoMSA, showsPocket, showsContact, showsBond,
	showsCyclic, showsModification, showsAffinity, showsCIFTemplate, showsPDBTemplate, showsForcedTemplate}

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
		has[showsCopies] = has[showsCopies] || len(e.IDs) > 1
		has[showsDNA] = has[showsDNA] || e.Kind == DNA
		has[showsRNA] = has[showsRNA] || e.Kind == RNA
		has[showsCCD] = has[showsCCD] || len(e.CCD) > 0
		has[showsSMILES] = has[showsSMILES] || e.SMILES != ""
		has[showsA3M] = has[showsA3M] || e.MSA.Source == MSAInline && e.MSA.Format == A3M
		has[showsCSV] = has[showsCSV] || e.MSA.Source == MSAInline && e.MSA.Format == CSV
		has[showsNoMSA] = has[showsNoMSA] || e.MSA.Source == MSANone
		has[showsCyclic] = has[showsCyclic] || e.Cyclic
		has[showsModification] = has[showsModification] || len(e.Modifications) > 0
	}
	fasta := filepath.Ext(file) == ".fasta"
	has[showsPlainFASTA] = fasta && !headers
	has[showsHeaderFASTA] = fasta && headers
	has[showsProteinYAML] = !fasta && proteinsOnly
	has[showsHeteromer] = proteins > 1
	for _, k := range c.Constraints {
		has[showsPocket] = has[showsPocket] || k.Pocket != nil
		has[showsContact] = has[showsContact] || k.Contact != nil
		has[showsBond] = has[showsBond] || k.Bond != nil
	}
	has[showsAffinity] = c.Affinity != nil && c.Affinity.Binder != ""
	for _, t := range c.Templates {
		has[showsCIFTemplate] = has[showsCIFTemplate] || t.Format == MMCIF && t.Text != ""
		has[showsPDBTemplate] = has[showsPDBTemplate] || t.Format == PDB && t.Text != ""
		has[showsForcedTemplate] = has[showsForcedTemplate] || t.Force && t.Threshold > 0
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
	{file: "plain.fasta", chains: 2, residues: 62 + 29, features: []string{showsPlainFASTA, showsHeteromer}},
	{file: "boltz_headers.fasta", chains: 6, residues: 45 + 14 + 12 + 12 + 1 + 1,
		features: []string{showsHeaderFASTA, showsHeteromer, showsDNA, showsRNA, showsCCD, showsSMILES, showsNoMSA}},
	{file: "protein.yaml", chains: 1, residues: 58, features: []string{showsProteinYAML}},
	{file: "multimer.yaml", chains: 3, residues: 2*34 + 33, features: []string{showsProteinYAML, showsCopies, showsHeteromer}},
	{file: "ligands.yaml", chains: 6, residues: 2*43 + 2 + 2, features: []string{showsCopies, showsCCD, showsSMILES}},
	{file: "inline_msa.yaml", chains: 1, residues: 20, features: []string{showsProteinYAML, showsA3M}},
	{file: "paired_msa.yaml", chains: 2, residues: 11 + 10, features: []string{showsProteinYAML, showsHeteromer, showsCSV}},
	{file: "single_sequence.yaml", chains: 2, residues: 27 + 17, features: []string{showsProteinYAML, showsHeteromer, showsNoMSA}},
	{file: "pocket_contact.yaml", chains: 2, residues: 50 + 1, features: []string{showsCCD, showsPocket, showsContact}},
	{file: "covalent_bond.yaml", chains: 2, residues: 22 + 1, features: []string{showsCCD, showsBond}},
	{file: "cyclic_peptide.yaml", chains: 1, residues: 10, features: []string{showsProteinYAML, showsNoMSA, showsCyclic}},
	{file: "modified_residues.yaml", chains: 2, residues: 13 + 10, features: []string{showsRNA, showsModification}},
	{file: "affinity.yaml", chains: 2, residues: 37 + 1, features: []string{showsSMILES, showsAffinity}},
	{file: "templates.yaml", chains: 3, residues: 2*4 + 3,
		features: []string{showsProteinYAML, showsCopies, showsHeteromer, showsCIFTemplate, showsPDBTemplate, showsForcedTemplate}},
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
