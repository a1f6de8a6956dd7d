package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/chaperone-bio/chaperone/job"
)

// acceptParams checks a request's params against the model's and returns the params the job
// runs with: every given value checked and clamped into range, enum aliases resolved, and
// every omitted param that has a default filled in, so the Job shows exactly what ran.
func acceptParams(m *Model, raw map[string]json.RawMessage) (map[string]any, error) {
	out := make(map[string]any, len(m.Params))
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		p := m.param(k)
		if reason, refused := m.Refused[k]; p == nil && refused {
			return nil, job.Invalid("params."+k, "%s takes no %s: %s; omit %s", m.ID, k, reason, k)
		}
		if p == nil {
			return nil, job.Invalid("params."+k, "unknown param for %s; valid params are %s", m.ID, strings.Join(m.paramNames(), ", "))
		}
		v, err := p.accept(raw[k])
		if err != nil {
			return nil, job.Invalid("params."+k, "%v", err)
		}
		if v != nil {
			out[k] = v
		}
	}
	for _, p := range m.Params {
		if _, given := out[p.Name]; !given && p.Default != nil {
			out[p.Name] = p.Default
		}
	}
	for _, p := range m.Params {
		if p.NotAbove == "" {
			continue
		}
		if v, limit := out[p.Name].(int), out[p.NotAbove].(int); v > limit {
			out[p.Name] = limit
		}
	}
	if out["use_msa_server"] == true && !m.Capabilities.MSA {
		return nil, job.Invalid("params.use_msa_server", "%s is single-sequence only and cannot use an MSA server; omit use_msa_server or send false", m.ID)
	}
	if out["write_pae"] == true && !m.Capabilities.PAE {
		return nil, job.Invalid("params.write_pae", "%s writes no PAE matrix (it lacks the pae capability); omit write_pae or send false", m.ID)
	}
	return out, nil
}

func (m *Model) param(name string) *Param {
	i := slices.IndexFunc(m.Params, func(p Param) bool { return p.Name == name })
	if i < 0 {
		return nil
	}
	return &m.Params[i]
}

func (m *Model) paramNames() []string {
	names := make([]string, len(m.Params))
	for i, p := range m.Params {
		names[i] = p.Name
	}
	return names
}

// accept checks one raw value and returns it as the job stores it (bool, int, float64 or
// string), or nil for JSON null, which counts as omitted.
func (p *Param) accept(raw json.RawMessage) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("malformed JSON: %v", err)
	}
	if v == nil {
		return nil, nil
	}
	switch p.Type {
	case Boolean:
		if _, ok := v.(bool); !ok {
			return nil, fmt.Errorf("must be true or false, not %s", jsonType(v))
		}
		return v, nil
	case Integer, Number:
		want := "a number"
		if p.Type == Integer {
			want = "an integer"
		}
		n, ok := v.(json.Number)
		if !ok {
			return nil, fmt.Errorf("must be %s, not %s", want, jsonType(v))
		}
		// A valid JSON number fails to parse only when it overflows, and then f is ±Inf,
		// which clamps like any other out-of-range value.
		f, _ := n.Float64()
		if p.Type == Integer && f != math.Trunc(f) {
			return nil, fmt.Errorf("must be an integer, not %s", n)
		}
		if p.Min != nil {
			f = max(f, *p.Min)
		}
		if p.Max != nil {
			f = min(f, *p.Max)
		}
		if p.Type == Integer {
			return int(f), nil
		}
		return f, nil
	case String:
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("must be a string, not %s", jsonType(v))
		}
		if len(p.Enum) == 0 {
			return s, nil
		}
		key := strings.ToLower(s)
		if a, ok := p.Aliases[key]; ok {
			key = a
		}
		if !slices.Contains(p.Enum, key) {
			return nil, fmt.Errorf("must be one of %s, not %q", p.choices(), s)
		}
		return key, nil
	}
	return nil, fmt.Errorf("has unsupported type %s", p.Type)
}

// choices lists an enum's values and aliases for error messages.
func (p *Param) choices() string {
	s := strings.Join(p.Enum, ", ")
	for _, a := range slices.Sorted(maps.Keys(p.Aliases)) {
		s += fmt.Sprintf(" (%s is accepted as %s)", a, p.Aliases[a])
	}
	return s
}
