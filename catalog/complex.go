package catalog

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/chaperone-bio/chaperone/bio"
	"github.com/chaperone-bio/chaperone/job"
)

// checkComplex checks one parsed target against the caps and against what the model can
// take; errors are placed in the input where a place exists.
func (c *Catalog) checkComplex(m *Model, cx *bio.Complex, params map[string]any) error {
	l := c.Limits
	switch n := cx.NumChains(); {
	case n > l.ChainsPerComplex:
		return fmt.Errorf("has %d chains, over the cap of %d (chains_per_complex)", n, l.ChainsPerComplex)
	case cx.NumLigands() > l.LigandsPerComplex:
		return fmt.Errorf("has %d ligand chains, over the cap of %d (ligands_per_complex)", cx.NumLigands(), l.LigandsPerComplex)
	case len(cx.Constraints) > l.ConstraintsPerComplex:
		return fmt.Errorf("has %d constraints, over the cap of %d (constraints_per_complex)", len(cx.Constraints), l.ConstraintsPerComplex)
	case cx.NumResidues() > m.MaxResidues:
		return fmt.Errorf("has %d residues over all its chains; %s takes at most %d (max_residues)", cx.NumResidues(), m.ID, m.MaxResidues)
	case m.MaxTokens > 0 && cx.NumTokens() > m.MaxTokens:
		return fmt.Errorf("has %d tokens (a token per residue and per ligand heavy atom); %s takes at most %d (max_tokens)", cx.NumTokens(), m.ID, m.MaxTokens)
	}
	if err := c.checkCapabilities(m, cx); err != nil {
		return err
	}
	if params["output_format"] == "pdb" {
		for _, e := range cx.Entities {
			for _, id := range e.IDs {
				if len(id) > 1 {
					return bio.Errorf(e.Pos, "chain %s: the PDB format holds one character per chain id; "+
						"name the chains with one letter or digit, or send output_format cif", id)
				}
			}
		}
	}
	for _, rule := range m.rules {
		if err := rule(cx, params); err != nil {
			return err
		}
	}
	return nil
}

// checkCapabilities refuses any part of the input the model cannot take, naming the
// models that can.
func (c *Catalog) checkCapabilities(m *Model, cx *bio.Complex) error {
	caps := m.Capabilities
	refuse := func(pos bio.Pos, what string, can func(Capabilities) bool) error {
		return bio.Errorf(pos, "%s, which %s does not take; models that do: %s", what, m.ID, strings.Join(c.predictModelsWith(can), ", "))
	}
	for _, e := range cx.Entities {
		switch {
		case e.Kind == bio.Ligand && !caps.Ligands:
			return refuse(e.Pos, "chain "+e.IDs[0]+" is a ligand", func(c Capabilities) bool { return c.Ligands })
		case (e.Kind == bio.DNA || e.Kind == bio.RNA) && !caps.NucleicAcids:
			return refuse(e.Pos, "chain "+e.IDs[0]+" is "+strings.ToUpper(string(e.Kind)), func(c Capabilities) bool { return c.NucleicAcids })
		case len(e.Modifications) > 0 && !caps.ModifiedResidues:
			return refuse(e.Pos, "chain "+e.IDs[0]+" has modified residues", func(c Capabilities) bool { return c.ModifiedResidues })
		case e.Cyclic && !caps.Cyclic:
			return refuse(e.Pos, "chain "+e.IDs[0]+" is cyclic", func(c Capabilities) bool { return c.Cyclic })
		case e.MSA.Source == bio.MSAInline && !caps.MSA:
			return refuse(e.Pos, "chain "+e.IDs[0]+" has an alignment", func(c Capabilities) bool { return c.MSA })
		}
	}
	switch {
	case len(cx.Constraints) > 0 && !caps.Constraints:
		return refuse(cx.Constraints[0].Pos, "the input has constraints", func(c Capabilities) bool { return c.Constraints })
	case len(cx.Templates) > 0 && !caps.Templates:
		return refuse(cx.Templates[0].Pos, "the input has templates", func(c Capabilities) bool { return c.Templates })
	case cx.Affinity != nil && !caps.Affinity:
		return refuse(cx.Affinity.Pos, "the input asks for affinity", func(c Capabilities) bool { return c.Affinity })
	}
	return nil
}

// predictModelsWith lists the prediction models that have a capability.
func (c *Catalog) predictModelsWith(can func(Capabilities) bool) []string {
	var ids []string
	for _, m := range c.Models {
		if m.Kind == job.PredictKind && can(m.Capabilities) {
			ids = append(ids, m.ID)
		}
	}
	return ids
}

// samplePattern matches the names that extra samples of a target take (<target>_sample_<k>).
var samplePattern = regexp.MustCompile(`^(.+)_sample_[0-9]+$`)

// checkArtifactNames refuses a target name that clashes with another target's artifacts,
// compared without case as paths are: <target>.<ext> is its best structure and
// <target>_sample_<k>.<ext> its further samples (ext as output_format says), and its other
// files lie in the folder <target>/. A target named like another's sample would share a
// file with it; one named like another's structure file would need a folder where that
// file is.
func checkArtifactNames(targets []job.Target, ext string) error {
	names := map[string]int{}
	for i, t := range targets {
		names[strings.ToLower(t.Name)] = i
	}
	for i, t := range targets {
		stem, isFile := strings.CutSuffix(strings.ToLower(t.Name), "."+ext)
		if j, ok := names[stem]; ok && isFile {
			return job.Invalid(fmt.Sprintf("targets[%d].name", i), "%q is the name of the structure file of targets[%d] (%s.%s), "+
				"and the files of a target go in a folder of its name; rename it", t.Name, j, targets[j].Name, ext)
		}
		m := samplePattern.FindStringSubmatch(stem)
		if m == nil {
			continue
		}
		if j, ok := names[m[1]]; ok {
			return job.Invalid(fmt.Sprintf("targets[%d].name", i), "%q is the name of the further samples of targets[%d] (%s_sample_<k>.%s); rename it",
				t.Name, j, targets[j].Name, ext)
		}
	}
	return nil
}
