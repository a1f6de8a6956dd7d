package boltz

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/chaperone-bio/chaperone/align"
	"github.com/chaperone-bio/chaperone/bio"
)

// entityKey is how Boltz groups the entries of its sequences list into entities
// (schema.py, parse_boltz_schema): by type and by the sequence, SMILES or CCD text as
// Python's str() prints it. Entity ids number the groups in order of first appearance.
func entityKey(e *bio.Entity) string {
	text := e.Sequence
	switch {
	case e.SMILES != "":
		text = e.SMILES
	case len(e.CCD) == 1:
		text = e.CCD[0]
	case len(e.CCD) > 1:
		quoted := make([]string, len(e.CCD))
		for i, c := range e.CCD {
			quoted[i] = "'" + c + "'"
		}
		text = "[" + strings.Join(quoted, ", ") + "]"
	}
	kind := string(e.Kind)
	if !e.Kind.Polymer() {
		kind = "ligand"
	}
	return kind + "\x00" + text
}

// boltzEntities returns, for each entity of the complex, the id Boltz gives its group.
func boltzEntities(cx *bio.Complex) []int {
	ids := make([]int, len(cx.Entities))
	seen := map[string]int{}
	for i := range cx.Entities {
		k := entityKey(&cx.Entities[i])
		id, ok := seen[k]
		if !ok {
			id = len(seen)
			seen[k] = id
		}
		ids[i] = id
	}
	return ids
}

// target is one complex of the job as this engine runs it.
type target struct {
	cx *bio.Complex
	// msas holds, per entity of the complex, the alignment file Boltz reads, "empty" for
	// single-sequence, or "" for an entity that is not a protein.
	msas []string
	msa  bool // some chain uses an alignment
	// The protein chains by where their alignment comes from: searched ahead of the run
	// (on source), sent with the input, or none.
	searched, sent, single []string
	source                 align.Source
}

// msaNote says where the target's alignments come from, for the run log.
func (t *target) msaNote() string {
	var parts []string
	if len(t.searched) > 0 {
		parts = append(parts, fmt.Sprintf("of %s searched by chaperone's alignment stage (%s)", chains(t.searched), t.source))
	}
	if len(t.sent) > 0 {
		parts = append(parts, fmt.Sprintf("of %s sent with the input", chains(t.sent)))
	}
	if len(t.single) > 0 {
		parts = append(parts, fmt.Sprintf("none for %s (single-sequence: msa: empty, or use_msa_server off)", chains(t.single)))
	}
	if len(parts) == 0 {
		return "none (no protein chain)"
	}
	return strings.Join(parts, "; ")
}

// chains names chain ids for the run log: "chain A", "chains A, B".
func chains(ids []string) string {
	if len(ids) == 1 {
		return "chain " + ids[0]
	}
	return "chains " + strings.Join(ids, ", ")
}

// q quotes a string as a YAML double-quoted scalar: JSON's string syntax is YAML's too,
// and quoting every string keeps PyYAML from reading an id such as NO or 1 as a boolean or
// a number.
func q(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func qs(ss []string) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = q(s)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// num writes a number so that PyYAML reads it as a float: YAML 1.1 floats need a dot.
func num(f float64) string {
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

// writeYAML writes the Boltz input of a target to dir/<name>.yaml; Boltz names the target
// after the file's stem. Alignments and templates the caller sent inline are written to
// files under files, which the YAML points at.
func writeYAML(dir, files string, t *target) error {
	cx := t.cx
	var b strings.Builder
	b.WriteString("version: 1\nsequences:\n")
	for i, e := range cx.Entities {
		fmt.Fprintf(&b, "  - %s:\n      id: %s\n", e.Kind, qs(e.IDs))
		switch {
		case e.Kind.Polymer():
			fmt.Fprintf(&b, "      sequence: %s\n", q(e.Sequence))
		case e.SMILES != "":
			fmt.Fprintf(&b, "      smiles: %s\n", q(e.SMILES))
		case len(e.CCD) == 1:
			fmt.Fprintf(&b, "      ccd: %s\n", q(e.CCD[0]))
		default:
			fmt.Fprintf(&b, "      ccd: %s\n", qs(e.CCD))
		}
		if e.Kind == bio.Protein && t.msas[i] != "" {
			fmt.Fprintf(&b, "      msa: %s\n", q(t.msas[i]))
		}
		if len(e.Modifications) > 0 {
			b.WriteString("      modifications:\n")
			for _, m := range e.Modifications {
				fmt.Fprintf(&b, "        - position: %d\n          ccd: %s\n", m.Position, q(m.CCD))
			}
		}
		if e.Cyclic {
			b.WriteString("      cyclic: true\n")
		}
	}
	if len(cx.Constraints) > 0 {
		b.WriteString("constraints:\n")
	}
	for _, k := range cx.Constraints {
		switch {
		case k.Bond != nil:
			atom := func(a bio.Atom) string {
				return fmt.Sprintf("[%s, %d, %s]", q(a.Chain), a.Residue, q(a.Name))
			}
			fmt.Fprintf(&b, "  - bond:\n      atom1: %s\n      atom2: %s\n", atom(k.Bond.Atom1), atom(k.Bond.Atom2))
		case k.Pocket != nil:
			contacts := make([]string, len(k.Pocket.Contacts))
			for i, t := range k.Pocket.Contacts {
				contacts[i] = token(t)
			}
			fmt.Fprintf(&b, "  - pocket:\n      binder: %s\n      contacts: [%s]\n", q(k.Pocket.Binder), strings.Join(contacts, ", "))
			distanceForce(&b, k.Pocket.MaxDistance, k.Pocket.Force)
		case k.Contact != nil:
			fmt.Fprintf(&b, "  - contact:\n      token1: %s\n      token2: %s\n", token(k.Contact.Token1), token(k.Contact.Token2))
			distanceForce(&b, k.Contact.MaxDistance, k.Contact.Force)
		}
	}
	if len(cx.Templates) > 0 {
		b.WriteString("templates:\n")
	}
	for i, tm := range cx.Templates {
		format, text, ids, err := templateFile(tm)
		if err != nil {
			return fmt.Errorf("template %d: %w", i+1, err)
		}
		// Boltz names a template after its file's stem, so each gets its own.
		path := filepath.Join(files, fmt.Sprintf("%s_template%d.%s", cx.Name, i+1, format))
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(&b, "  - %s: %s\n", format, q(path))
		if tm.ChainIDs != nil {
			fmt.Fprintf(&b, "    chain_id: %s\n", qs(tm.ChainIDs))
		}
		if ids != nil {
			fmt.Fprintf(&b, "    template_id: %s\n", qs(ids))
		}
		if tm.Force {
			fmt.Fprintf(&b, "    force: true\n    threshold: %s\n", num(tm.Threshold))
		}
	}
	if cx.Affinity != nil {
		fmt.Fprintf(&b, "properties:\n  - affinity:\n      binder: %s\n", q(cx.Affinity.Binder))
	}
	return os.WriteFile(filepath.Join(dir, cx.Name+".yaml"), []byte(b.String()), 0o644)
}

// token writes [CHAIN, RESIDUE] for a polymer residue or [CHAIN, ATOM] for a ligand atom.
func token(t bio.Token) string {
	if t.Atom != "" {
		return fmt.Sprintf("[%s, %s]", q(t.Chain), q(t.Atom))
	}
	return fmt.Sprintf("[%s, %d]", q(t.Chain), t.Residue)
}

func distanceForce(b *strings.Builder, d float64, force bool) {
	if d != 0 {
		fmt.Fprintf(b, "      max_distance: %s\n", num(d))
	}
	if force {
		b.WriteString("      force: true\n")
	}
}
