package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/chaperone-bio/chaperone/job"
)

// Decode parses a request body into v, a pointer to a request type, strictly: unknown
// fields (compared exactly, not case-insensitively as encoding/json does), data after the
// JSON value and values of the wrong type are errors. Every error is a *job.InvalidError
// whose Field is the JSON path of the offending value, such as "targets[1].content", and
// whose Reason says what to send instead. A null value counts as omitted.
//
// The body is first decoded into a generic tree and checked against v's type, because
// encoding/json's own errors neither give array indices nor say which fields are valid.
func Decode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return malformed(data, err)
	}
	if rest := bytes.TrimLeft(data[dec.InputOffset():], " \t\r\n"); len(rest) > 0 {
		return job.Invalid("", "malformed JSON at byte %d: data after the end of the JSON object", len(data)-len(rest))
	}
	if field, key := duplicateKey(data); key != "" {
		return job.Invalid(field, "the key %q appears twice in one object; send each field once", key)
	}
	if err := check("", tree, reflect.TypeOf(v).Elem()); err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		// check accepts only what Unmarshal can store, so this is a bug, not a bad request;
		// it still answers as one rather than failing the server.
		return job.Invalid("", "cannot decode the request: %v", err)
	}
	return nil
}

func malformed(data []byte, err error) error {
	var syntax *json.SyntaxError
	switch {
	case errors.Is(err, io.EOF):
		return job.Invalid("", "the request body is empty; send a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return job.Invalid("", "malformed JSON at byte %d: the body ends in the middle of a value", len(data))
	case errors.As(err, &syntax):
		return job.Invalid("", "malformed JSON at byte %d: %s", syntax.Offset, strings.TrimPrefix(syntax.Error(), "json: "))
	}
	return job.Invalid("", "malformed JSON: %v", err)
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// check reports the first place where the decoded tree val does not fit type t.
func check(path string, val any, t reflect.Type) error {
	if val == nil {
		return nil
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		// A type that decodes itself (json.RawMessage, EmbedSequence) gets its own bytes
		// back; a decoded tree always marshals.
		raw, _ := json.Marshal(val)
		err := reflect.New(t).Interface().(json.Unmarshaler).UnmarshalJSON(raw)
		var inv *job.InvalidError
		if errors.As(err, &inv) {
			return &job.InvalidError{Field: joinPath(path, inv.Field), Reason: inv.Reason}
		}
		if err != nil {
			return job.Invalid(path, "%v", err)
		}
		return nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		return check(path, val, t.Elem())
	case reflect.Interface:
		return nil
	case reflect.String:
		if _, ok := val.(string); !ok {
			return mismatch(path, "a string", val)
		}
	case reflect.Bool:
		if _, ok := val.(bool); !ok {
			return mismatch(path, "true or false", val)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if n, ok := val.(json.Number); !ok {
			return mismatch(path, "an integer", val)
		} else if _, err := strconv.ParseInt(string(n), 10, t.Bits()); err != nil {
			return job.Invalid(path, "must be an integer that fits %d bits, not %s", t.Bits(), n)
		}
	case reflect.Float32, reflect.Float64:
		if _, ok := val.(json.Number); !ok {
			return mismatch(path, "a number", val)
		}
	case reflect.Slice:
		items, ok := val.([]any)
		if !ok {
			return mismatch(path, "an array", val)
		}
		for i, item := range items {
			if err := check(fmt.Sprintf("%s[%d]", path, i), item, t.Elem()); err != nil {
				return err
			}
		}
	case reflect.Map:
		obj, ok := val.(map[string]any)
		if !ok {
			return mismatch(path, "an object", val)
		}
		for _, k := range slices.Sorted(maps.Keys(obj)) {
			if err := check(joinPath(path, k), obj[k], t.Elem()); err != nil {
				return err
			}
		}
	case reflect.Struct:
		obj, ok := val.(map[string]any)
		if !ok {
			return mismatch(path, "an object", val)
		}
		names, types := jsonFields(t)
		for _, k := range slices.Sorted(maps.Keys(obj)) {
			i := slices.Index(names, k)
			if i < 0 {
				return job.Invalid(joinPath(path, k), "unknown field; valid fields are %s", strings.Join(names, ", "))
			}
			if err := check(joinPath(path, k), obj[k], types[i]); err != nil {
				return err
			}
		}
	default:
		return job.Invalid(path, "cannot be decoded into %s", t)
	}
	return nil
}

// jsonFields lists the JSON names of a struct's fields, in declaration order, and their
// types. None of the request types embeds a struct, so embedded fields are not flattened.
func jsonFields(t reflect.Type) (names []string, types []reflect.Type) {
	for f := range t.Fields() {
		if name := jsonName(f); name != "" {
			names = append(names, name)
			types = append(types, f.Type)
		}
	}
	return names, types
}

// jsonName is the name encoding/json gives a struct field, or "" when it skips the field.
func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	switch {
	case !f.IsExported() || name == "-":
		return ""
	case name == "":
		return f.Name
	}
	return name
}

func joinPath(path, field string) string {
	switch {
	case path == "":
		return field
	case field == "":
		return path
	}
	return path + "." + field
}

// mismatch is the error for a value of the wrong JSON type.
func mismatch(path, want string, val any) error {
	if path == "" {
		return job.Invalid("", "the request body must be a JSON object, not %s", jsonType(val))
	}
	return job.Invalid(path, "must be %s, not %s", want, jsonType(val))
}

// jsonType names the JSON type of a decoded value, for error messages.
func jsonType(val any) string {
	switch val.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number, float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	}
	return "an object"
}

// UnmarshalJSON accepts an item of EmbedRequest.Sequences: a bare sequence string, or an
// object with "sequence" and an optional "id". Other keys are errors, as everywhere else.
func (s *EmbedSequence) UnmarshalJSON(data []byte) error {
	*s = EmbedSequence{}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	switch v := v.(type) {
	case nil:
		return nil
	case string:
		s.Sequence = v
		return nil
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			if k != "id" && k != "sequence" {
				return job.Invalid(k, "unknown field; valid fields are id, sequence")
			}
			str, ok := v[k].(string)
			if !ok && v[k] != nil {
				return job.Invalid(k, "must be a string, not %s", jsonType(v[k]))
			}
			if k == "id" {
				s.ID = str
			} else {
				s.Sequence = str
			}
		}
		return nil
	}
	return job.Invalid("", `must be a sequence string or an object {"id": ..., "sequence": ...}, not %s`, jsonType(v))
}

// duplicateKey finds the first object of a well-formed JSON document that names a key
// twice, and returns the object's path and the key, or "" and "". encoding/json keeps the
// last of the two, so a check that read the first (a proxy's, a log's) would see another
// request than the one that runs.
func duplicateKey(data []byte) (field, key string) {
	dec := json.NewDecoder(bytes.NewReader(data))
	field, key, _ = firstDuplicate(dec, "")
	return field, key
}

func firstDuplicate(dec *json.Decoder, path string) (field, key string, err error) {
	tok, err := dec.Token()
	if err != nil {
		return "", "", err
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return "", "", err
			}
			k, _ := kt.(string)
			if seen[k] {
				return path, k, nil
			}
			seen[k] = true
			if field, key, err := firstDuplicate(dec, joinPath(path, k)); key != "" || err != nil {
				return field, key, err
			}
		}
	case json.Delim('['):
		for i := 0; dec.More(); i++ {
			if field, key, err := firstDuplicate(dec, fmt.Sprintf("%s[%d]", path, i)); key != "" || err != nil {
				return field, key, err
			}
		}
	default:
		return "", "", nil
	}
	_, err = dec.Token() // the closing delimiter
	return "", "", err
}
