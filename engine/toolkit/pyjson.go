package toolkit

import (
	"bytes"
	"encoding/json"
	"os"
)

// ReadPythonJSON reads a JSON file that Python's json module wrote into v.
func ReadPythonJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return UnmarshalPythonJSON(b, v)
}

// UnmarshalPythonJSON is json.Unmarshal for what Python's json.dump writes: it writes NaN,
// Infinity and -Infinity for numbers that are not finite, which JSON lacks. They read as
// null: a pointer or interface is nil, and any other value is left as it was (a float64
// field keeps zero), so decode into *float64 to tell a missing score from a real zero.
func UnmarshalPythonJSON(b []byte, v any) error {
	return json.Unmarshal(finiteJSON(b), v)
}

// finiteJSON replaces NaN, Infinity and -Infinity outside strings by null.
func finiteJSON(b []byte) []byte {
	if !bytes.Contains(b, []byte("NaN")) && !bytes.Contains(b, []byte("Infinity")) {
		return b
	}
	out := make([]byte, 0, len(b))
	inString := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inString {
			out = append(out, c)
			if c == '\\' && i+1 < len(b) {
				i++
				out = append(out, b[i])
			} else if c == '"' {
				inString = false
			}
			continue
		}
		word := ""
		switch {
		case c == '"':
			inString = true
		case bytes.HasPrefix(b[i:], []byte("NaN")):
			word = "NaN"
		case bytes.HasPrefix(b[i:], []byte("-Infinity")):
			word = "-Infinity"
		case bytes.HasPrefix(b[i:], []byte("Infinity")):
			word = "Infinity"
		}
		if word != "" {
			out = append(out, "null"...)
			i += len(word) - 1
			continue
		}
		out = append(out, c)
	}
	return out
}
