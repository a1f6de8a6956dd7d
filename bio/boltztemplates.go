package bio

import (
	"math"
	"strings"

	"github.com/goccy/go-yaml/ast"
)

// template reads one item of the templates list.
func (r *yamlReader) template(item ast.Node, path string) error {
	f, err := r.fields(item, path, "cif", "pdb", "chain_id", "template_id", "force", "threshold")
	if err != nil {
		return err
	}
	cf, isCIF := f["cif"]
	pf, isPDB := f["pdb"]
	if isCIF == isPDB {
		return Errorf(nodePos(item), "%s needs exactly one of cif (mmCIF text) and pdb (PDB text)", path)
	}
	t := Template{Format: MMCIF, Pos: cf.pos}
	src := cf
	if isPDB {
		t.Format, t.Pos, src = PDB, pf.pos, pf
	}
	text, pos, err := r.text(src.value, path+"."+src.key)
	if err != nil {
		return err
	}
	if !strings.Contains(text, "\n") {
		return Errorf(pos, "%s.%s %q is a path to a file, and the service never reads files on the server; "+
			"paste the structure itself as text in a YAML block (%s: |)", path, src.key, text, src.key)
	}
	if got := StructureFormat(text); got != t.Format {
		want := map[string]string{MMCIF: "mmCIF text (a data_ block with _atom_site records)", PDB: "PDB text (ATOM or HETATM records)"}
		return Errorf(pos, "%s.%s must be %s", path, src.key, want[t.Format])
	}
	t.Text = text
	if cf, ok := f["chain_id"]; ok {
		ids, poss, err := r.texts(cf.value, path+".chain_id")
		if err != nil {
			return err
		}
		for i, id := range ids {
			e, err := r.chainOf(id, poss[i], path+".chain_id")
			if err != nil {
				return err
			}
			if e.Kind != Protein {
				return Errorf(poss[i], "%s.chain_id: chain %s is a %s; templates are for protein chains", path, id, e.Kind)
			}
		}
		t.ChainIDs = ids
	}
	if tf, ok := f["template_id"]; ok {
		ids, _, err := r.texts(tf.value, path+".template_id")
		if err != nil {
			return err
		}
		if t.ChainIDs != nil && len(ids) != len(t.ChainIDs) {
			return Errorf(tf.pos, "%s: template_id names %d chains and chain_id %d; they pair up one to one", path, len(ids), len(t.ChainIDs))
		}
		t.TemplateIDs = ids
	}
	if ff, ok := f["force"]; ok {
		if t.Force, err = r.boolean(ff.value, path+".force"); err != nil {
			return err
		}
	}
	if tf, ok := f["threshold"]; ok {
		v, pos, err := r.number(tf.value, path+".threshold")
		if err != nil {
			return err
		}
		if !(v > 0) || math.IsInf(v, 0) {
			return Errorf(pos, "%s.threshold must be a positive distance in ångströms", path)
		}
		t.Threshold = v
	}
	if t.Force && t.Threshold == 0 {
		return Errorf(t.Pos, "%s: force needs a threshold, the distance in ångströms the prediction may deviate from the template", path)
	}
	r.c.Templates = append(r.c.Templates, t)
	return nil
}
