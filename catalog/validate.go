package catalog

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/chaperone-bio/chaperone/bio"
	"github.com/chaperone-bio/chaperone/job"
)

// Default models when a request names none (interface §2.4).
const (
	DefaultPredictModel = "boltz2"
	DefaultEmbedModel   = "esmc-600m"
)

// Longest name of a target or embedded sequence: it becomes a file name in the results.
const maxItemName = 64

// NewPredict validates a prediction request and returns the job it creates, without ID,
// owner, status or times. Targets without a name are named target_1, target_2, … by their
// 1-based position in the list. Every target is parsed (FASTA or Boltz YAML, see
// bio.Complexes) and checked against the caps and the model's capabilities; the job keeps the
// input as sent, and with use_msa_server on, the alignment searches its targets need
// (job.Search). Errors are *job.InvalidError.
func (c *Catalog) NewPredict(r *PredictRequest) (*job.Job, error) {
	m, err := c.pickModel(job.PredictKind, r.Model, DefaultPredictModel)
	if err != nil {
		return nil, err
	}
	if err := c.checkName(r.Name); err != nil {
		return nil, err
	}
	if err := exactlyOne(present{"sequence", r.Seq != nil}, present{"input", r.Input != nil}, present{"targets", r.Targets != nil}); err != nil {
		return nil, err
	}
	j := &job.Job{Kind: job.PredictKind, Name: r.Name, Model: m.ID, RunModel: m.ID, Total: 1}
	switch {
	case r.Seq != nil:
		seq, err := c.protein(m, *r.Seq)
		if err != nil {
			return nil, invalid("sequence", err)
		}
		j.Input.Sequence = seq
	case r.Input != nil:
		if err := checkText(*r.Input, c.Limits.MaxContentChars, "max_content_chars"); err != nil {
			return nil, invalid("input", err)
		}
		j.Input.Input = *r.Input
	default:
		targets, err := c.targets(r.Targets)
		if err != nil {
			return nil, err
		}
		j.Input.Targets, j.Total = targets, len(targets)
	}
	if j.Params, err = acceptParams(m, r.Params); err != nil {
		return nil, err
	}
	complexes, err := bio.Complexes(j.Input)
	if err != nil {
		return nil, err
	}
	for i, cx := range complexes {
		if err := c.checkComplex(m, cx, j.Params); err != nil {
			return nil, invalid(inputField(j.Input, i), err)
		}
		chains := cx.SearchChains()
		searched := slices.ContainsFunc(j.Searches, func(s job.Search) bool { return slices.Equal(s.Chains, chains) })
		if j.Params["use_msa_server"] == true && len(chains) > 0 && !searched {
			j.Searches = append(j.Searches, job.Search{Chains: chains, Target: i + 1})
		}
	}
	ext := "cif"
	if j.Params["output_format"] == "pdb" {
		ext = "pdb"
	}
	if err := checkArtifactNames(j.Input.Targets, ext); err != nil {
		return nil, err
	}
	return j, nil
}

// inputField is the request field that holds the i-th target of a prediction.
func inputField(in job.Input, i int) string {
	switch {
	case in.Sequence != "":
		return "sequence"
	case in.Input != "":
		return "input"
	}
	return fmt.Sprintf("targets[%d].content", i)
}

func (c *Catalog) targets(in []job.Target) ([]job.Target, error) {
	switch {
	case len(in) == 0:
		return nil, job.Invalid("targets", "must hold at least one target")
	case len(in) > c.Limits.TargetsPerJob:
		return nil, job.Invalid("targets", "holds %d targets, over the cap of %d (targets_per_job)", len(in), c.Limits.TargetsPerJob)
	}
	out := slices.Clone(in)
	names := make([]string, len(out))
	for i, t := range out {
		if err := checkText(t.Content, c.Limits.MaxContentChars, "max_content_chars"); err != nil {
			return nil, invalid(fmt.Sprintf("targets[%d].content", i), err)
		}
		names[i] = t.Name
	}
	err := nameAll(names, "target_",
		func(i int) string { return fmt.Sprintf("targets[%d].name", i) },
		func(i int) string { return fmt.Sprintf("targets[%d]", i) })
	if err != nil {
		return nil, err
	}
	for i := range out {
		out[i].Name = names[i]
	}
	return out, nil
}

// DecodeDesign decodes a design request body and validates it as NewDesign does, naming an
// unknown protocol before anything else: a request written for a protocol this server
// does not offer (the reference service's pxdesign-binder, with its chains, binder_length
// and hotspots) is refused for its protocol, not for the fields that protocol would take.
func (c *Catalog) DecodeDesign(body []byte) (*job.Job, error) {
	var probe struct {
		Protocol any `json:"protocol"`
	}
	if json.Unmarshal(body, &probe) == nil {
		if id, ok := probe.Protocol.(string); ok && id != "" {
			if _, known := c.Protocol(id); !known {
				return nil, c.unknownProtocol(id)
			}
		}
	}
	var r DesignRequest
	if err := Decode(body, &r); err != nil {
		return nil, err
	}
	return c.NewDesign(&r)
}

func (c *Catalog) unknownProtocol(id string) error {
	return job.Invalid("protocol", "unknown protocol %q; valid protocols are %s", id, strings.Join(c.ProtocolIDs(), ", "))
}

// NewDesign validates a design request and returns the job it creates, without ID, owner,
// status or times. The job's Model stays empty (the interface shows null for designs); its
// RunModel is the protocol's model. The structure is read, a BoltzGen spec parsed against
// it (bio.ParseDesignSpec) and an rfd3 contig checked against it, so that a design that
// names a chain or residue the structure lacks, or is larger than the model's
// max_residues, is refused here. Errors are *job.InvalidError.
func (c *Catalog) NewDesign(r *DesignRequest) (*job.Job, error) {
	if r.Protocol == "" {
		return nil, job.Invalid("protocol", "is required; valid protocols are %s", strings.Join(c.ProtocolIDs(), ", "))
	}
	p, ok := c.Protocol(r.Protocol)
	if !ok {
		return nil, c.unknownProtocol(r.Protocol)
	}
	if r.Model != "" && r.Model != p.Model {
		if dm, ok := c.Model(r.Model); ok && dm.Kind == job.DesignKind {
			return nil, job.Invalid("model", "protocol %s runs on %s, not %s; omit model or send %s", p.ID, p.Model, r.Model, p.Model)
		}
		return nil, job.Invalid("model", "unknown design model %q; valid design models are %s", r.Model, strings.Join(c.ModelIDs(job.DesignKind), ", "))
	}
	m, ok := c.Model(p.Model)
	if !ok {
		return nil, fmt.Errorf("catalog: protocol %s names unknown model %s", p.ID, p.Model)
	}
	if err := c.checkName(r.Name); err != nil {
		return nil, err
	}
	for _, f := range []present{{"spec", r.Spec != nil}, {"structure", r.Structure != nil}, {"contig", r.Contig != nil}} {
		needed := slices.Contains(p.Requires, f.field)
		switch {
		case needed && !f.given:
			return nil, job.Invalid(f.field, "is required by protocol %s, which takes %s", p.ID, strings.Join(p.Requires, " and "))
		case !needed && f.given && !slices.Contains(p.Optional, f.field):
			return nil, job.Invalid(f.field, "is not used by protocol %s, which takes %s", p.ID, strings.Join(p.Requires, " and "))
		}
	}
	j := &job.Job{Kind: job.DesignKind, Name: r.Name, Protocol: p.ID, RunModel: m.ID}
	var structure *bio.Structure
	if r.Structure != nil {
		if err := checkText(*r.Structure, c.Limits.StructureChars, "structure_chars"); err != nil {
			return nil, invalid("structure", err)
		}
		if bio.StructureFormat(*r.Structure) == "" {
			return nil, job.Invalid("structure", "must be PDB text (ATOM or HETATM records) or mmCIF text (a data_ block with _atom_site records)")
		}
		s, err := bio.ReadStructure(*r.Structure)
		if err != nil {
			return nil, invalid("structure", err)
		}
		structure, j.Input.Structure = s, *r.Structure
	}
	if r.Spec != nil {
		if err := c.checkSpec(m, p, *r.Spec, structure); err != nil {
			return nil, invalid("spec", err)
		}
		j.Input.Spec = *r.Spec
	}
	if r.Contig != nil {
		contig, err := c.checkContig(m, p, *r.Contig, structure)
		if err != nil {
			return nil, invalid("contig", err)
		}
		j.Input.Contig = contig
	}
	params, err := acceptParams(m, r.Params)
	if err != nil {
		return nil, err
	}
	j.Params, j.Total = params, params["num_designs"].(int)
	return j, nil
}

// checkSpec parses a BoltzGen spec against the structure sent with it and checks that its
// designs fit the model.
func (c *Catalog) checkSpec(m *Model, p *Protocol, text string, structure *bio.Structure) error {
	if err := checkText(text, c.Limits.MaxContentChars, "max_content_chars"); err != nil {
		return err
	}
	spec, err := bio.ParseDesignSpec(text, structure)
	if err != nil {
		return err
	}
	n := spec.MaxResidues
	if spec.Form == bio.SequencesSpec {
		if p.Binder == "" {
			return fmt.Errorf("protocol %s takes BoltzGen's entities form only (a file entity whose design lists the residues to re-design), "+
				"not a Boltz-style sequences list", p.ID)
		}
		_, longest, err := bio.DesignedLength(p.Binder)
		if err != nil {
			return fmt.Errorf("catalog: protocol %s has the binder %q: %v", p.ID, p.Binder, err)
		}
		n += longest
	}
	if n > m.MaxResidues {
		return fmt.Errorf("describes designs of up to %d residues; %s designs at most %d (max_residues)", n, m.ID, m.MaxResidues)
	}
	return nil
}

// checkContig parses an rfd3 contig, checks it against the structure and the protocol, and
// returns it in the spelling rfd3 reads.
func (c *Catalog) checkContig(m *Model, p *Protocol, s string, structure *bio.Structure) (string, error) {
	if err := checkText(s, c.Limits.MaxContentChars, "max_content_chars"); err != nil {
		return "", err
	}
	contig, err := bio.ParseContig(s)
	if err != nil {
		return "", err
	}
	if !contig.Designs() {
		return "", fmt.Errorf("has no designed segment, so there is nothing to design; add a length such as 60-80")
	}
	if n := contig.MaxResidues(); n > m.MaxResidues {
		return "", fmt.Errorf("describes up to %d residues; %s designs at most %d (max_residues)", n, m.ID, m.MaxResidues)
	}
	if err := contig.CheckAgainst(structure); err != nil {
		return "", err
	}
	kept := contig.KeptKinds(structure)
	switch p.ID {
	case "rfd3-na-binder":
		if !slices.Contains(kept, bio.DNA) && !slices.Contains(kept, bio.RNA) {
			return "", fmt.Errorf("keeps no residue of a DNA or RNA chain, which rfd3-na-binder designs a binder against; "+
				"the structure's chains are %s", structure.Describe())
		}
	case "rfd3-binder", "rfd3-scaffold":
		if len(kept) == 0 {
			what := map[string]string{"rfd3-binder": "target", "rfd3-scaffold": "motif"}[p.ID]
			return "", fmt.Errorf("keeps no residue of the structure, so %s has no %s; add a chain range such as A10-50 "+
				"(the structure's chains are %s)", p.ID, what, structure.Describe())
		}
	}
	return contig.String(), nil
}

// NewEmbed validates an embedding request and returns the job it creates, without ID,
// owner, status or times. Whichever input field was used, the job's Input holds only
// Sequences: each checked and upper-cased, with its given id or, for a bare string, the id
// seq1, seq2, … by 1-based position. A FASTA record's id is the first word of its header.
// Errors are *job.InvalidError.
func (c *Catalog) NewEmbed(r *EmbedRequest) (*job.Job, error) {
	m, err := c.pickModel(job.EmbedKind, r.Model, DefaultEmbedModel)
	if err != nil {
		return nil, err
	}
	if err := c.checkName(r.Name); err != nil {
		return nil, err
	}
	if err := exactlyOne(present{"sequence", r.Sequence != nil}, present{"sequences", r.Sequences != nil}, present{"input", r.Input != nil}); err != nil {
		return nil, err
	}
	var seqs []job.NamedSequence
	switch {
	case r.Sequence != nil:
		seq, err := c.protein(m, *r.Sequence)
		if err != nil {
			return nil, invalid("sequence", err)
		}
		seqs = []job.NamedSequence{{ID: "seq1", Sequence: seq}}
	case r.Sequences != nil:
		if seqs, err = c.embedList(m, r.Sequences); err != nil {
			return nil, err
		}
	default:
		if seqs, err = c.embedFASTA(m, *r.Input); err != nil {
			return nil, err
		}
	}
	j := &job.Job{Kind: job.EmbedKind, Name: r.Name, Model: m.ID, RunModel: m.ID, Total: len(seqs)}
	j.Input.Sequences = seqs
	if j.Params, err = acceptParams(m, r.Params); err != nil {
		return nil, err
	}
	return j, nil
}

func (c *Catalog) embedList(m *Model, in []EmbedSequence) ([]job.NamedSequence, error) {
	if err := c.checkEmbedCount("sequences", len(in)); err != nil {
		return nil, err
	}
	out := make([]job.NamedSequence, len(in))
	ids := make([]string, len(in))
	for i, s := range in {
		seq, err := c.protein(m, s.Sequence)
		if err != nil {
			return nil, invalid(fmt.Sprintf("sequences[%d].sequence", i), err)
		}
		out[i].Sequence, ids[i] = seq, s.ID
	}
	err := nameAll(ids, "seq",
		func(i int) string { return fmt.Sprintf("sequences[%d].id", i) },
		func(i int) string { return fmt.Sprintf("sequences[%d]", i) })
	if err != nil {
		return nil, err
	}
	for i := range out {
		out[i].ID = ids[i]
	}
	return out, nil
}

func (c *Catalog) embedFASTA(m *Model, text string) ([]job.NamedSequence, error) {
	if err := checkText(text, c.Limits.MaxContentChars, "max_content_chars"); err != nil {
		return nil, invalid("input", err)
	}
	records, err := bio.ParseFASTA(text)
	if err != nil {
		return nil, invalid("input", err)
	}
	if err := c.checkEmbedCount("input", len(records)); err != nil {
		return nil, err
	}
	out := make([]job.NamedSequence, len(records))
	ids := make([]string, len(records))
	for i, r := range records {
		seq, err := c.protein(m, r.Sequence)
		if err != nil {
			return nil, job.Invalid("input", "record %d (%s): %v", i+1, r.ID, err)
		}
		out[i].Sequence, ids[i] = seq, r.ID
	}
	err = nameAll(ids, "seq",
		func(int) string { return "input" },
		func(i int) string { return fmt.Sprintf("record %d", i+1) })
	if err != nil {
		return nil, err
	}
	for i := range out {
		out[i].ID = ids[i]
	}
	return out, nil
}

func (c *Catalog) checkEmbedCount(field string, n int) error {
	switch {
	case n == 0:
		return job.Invalid(field, "must hold at least one sequence")
	case n > c.Limits.EmbedSequences:
		return job.Invalid(field, "holds %d sequences, over the cap of %d (embed_sequences_per_job)", n, c.Limits.EmbedSequences)
	}
	return nil
}

// pickModel resolves a request's model: the default when empty, else a model of the kind.
// An unknown id, or one of another kind, lists the valid ones.
func (c *Catalog) pickModel(kind job.Kind, id, def string) (*Model, error) {
	if id == "" {
		id = def
	}
	m, ok := c.Model(id)
	if !ok || m.Kind != kind {
		noun := map[job.Kind]string{job.PredictKind: "prediction", job.EmbedKind: "embedding"}[kind]
		return nil, job.Invalid("model", "unknown %s model %q; valid %s models are %s", noun, id, noun, strings.Join(c.ModelIDs(kind), ", "))
	}
	return m, nil
}

// protein checks a protein sequence for the model and returns it cleaned (see
// bio.CheckProtein).
func (c *Catalog) protein(m *Model, s string) (string, error) {
	if err := checkText(s, c.Limits.MaxContentChars, "max_content_chars"); err != nil {
		return "", err
	}
	seq, err := bio.CheckProtein(s)
	if err != nil {
		return "", err
	}
	if len(seq) > m.MaxResidues {
		return "", fmt.Errorf("has %d residues; %s takes at most %d (max_residues)", len(seq), m.ID, m.MaxResidues)
	}
	if m.Letters != "" {
		if i := strings.IndexFunc(seq, func(r rune) bool { return !strings.ContainsRune(m.Letters, r) }); i >= 0 {
			return "", fmt.Errorf("position %d: %q is a letter %s's tokenizer does not know (it knows %s)", i+1, seq[i], m.ID, m.Letters)
		}
	}
	return seq, nil
}

// checkText checks an input string: not blank, and at most limit characters.
func checkText(s string, limit int, limitName string) error {
	if strings.TrimSpace(s) == "" {
		return fmt.Errorf("must not be empty")
	}
	if n := utf8.RuneCountInString(s); n > limit {
		return fmt.Errorf("is %d characters, over the cap of %d (%s)", n, limit, limitName)
	}
	return nil
}

func (c *Catalog) checkName(name string) error {
	if n := utf8.RuneCountInString(name); n > c.Limits.NameChars {
		return job.Invalid("name", "is %d characters, over the cap of %d (name_chars)", n, c.Limits.NameChars)
	}
	return nil
}

// present is whether one of a request's alternative input fields was sent.
type present struct {
	field string
	given bool
}

// exactlyOne checks that exactly one of the alternative input fields was sent. A field
// sent empty counts as sent; its emptiness is reported on its own.
func exactlyOne(fields ...present) error {
	var names, given []string
	for _, f := range fields {
		names = append(names, f.field)
		if f.given {
			given = append(given, f.field)
		}
	}
	switch len(given) {
	case 1:
		return nil
	case 0:
		return job.Invalid("", "provide exactly one of %s; none was given", strings.Join(names, ", "))
	}
	return job.Invalid("", "provide exactly one of %s; got %s", strings.Join(names, ", "), strings.Join(given, " and "))
}

// nameAll gives every unnamed item the name <prefix><position> (1-based) and checks that all
// names are file-safe and unique ignoring case, since each names result files that may land
// on a case-insensitive disk. Given names are claimed first, so a derived name never takes
// one the caller chose. field(i) is the JSON path blamed for item i; label(i) is how a
// message about another item refers to it.
func nameAll(names []string, prefix string, field, label func(i int) string) error {
	owner := map[string]int{}
	for i, n := range names {
		if n == "" {
			continue
		}
		if err := fileSafe(n); err != nil {
			return job.Invalid(field(i), "%q %v", n, err)
		}
		if j, taken := owner[strings.ToLower(n)]; taken {
			return job.Invalid(field(i), "%q is also the name of %s; names must be unique, ignoring case", n, label(j))
		}
		owner[strings.ToLower(n)] = i
	}
	for i, n := range names {
		if n != "" {
			continue
		}
		n = prefix + strconv.Itoa(i+1)
		if j, taken := owner[strings.ToLower(n)]; taken {
			return job.Invalid(field(i), "is missing, and the default %q is already the name of %s; name this one", n, label(j))
		}
		names[i] = n
		owner[strings.ToLower(n)] = i
	}
	return nil
}

// fileSafe checks that a name can be used as a file name as it is, on any system.
func fileSafe(s string) error {
	if len(s) > maxItemName {
		return fmt.Errorf("is %d characters; names are at most %d", len(s), maxItemName)
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		alnum := 'A' <= b && b <= 'Z' || 'a' <= b && b <= 'z' || '0' <= b && b <= '9'
		if i == 0 && !alnum {
			return fmt.Errorf("must start with a letter or digit (it names result files)")
		}
		if !alnum && b != '.' && b != '_' && b != '-' {
			return fmt.Errorf("may hold only letters, digits, '.', '_' and '-' (it names result files)")
		}
	}
	return nil
}

func invalid(field string, err error) error {
	return &job.InvalidError{Field: field, Reason: err.Error()}
}
