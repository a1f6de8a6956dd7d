package artifact

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalidPath is wrapped by every error about a malformed artifact path or job id.
var ErrInvalidPath = errors.New("invalid artifact path")

// MaxPathLen bounds an artifact path; upstream tools never come close, and a bound keeps
// a hostile manifest from naming absurd files.
const MaxPathLen = 1024

// CheckPath reports whether p is a safe artifact path: a relative, slash-separated path
// such as "t1.cif" or "t1/confidence_t1_model_0.json" that stays inside the folder it is
// resolved against. Every store checks paths with it, so that what one store accepts the
// others accept too, and nothing a tool or a caller names can reach outside a job.
func CheckPath(p string) error {
	bad := func(why string) error { return fmt.Errorf("%w %q: %s", ErrInvalidPath, p, why) }
	switch {
	case p == "":
		return bad("empty")
	case len(p) > MaxPathLen:
		return bad(fmt.Sprintf("longer than %d bytes", MaxPathLen))
	case strings.HasPrefix(p, "/"):
		return bad("absolute")
	case strings.ContainsRune(p, '\\'):
		return bad("backslash")
	}
	for i := 0; i < len(p); i++ {
		// NUL truncates names in system calls; other control characters have no business
		// in a file name and make logs and archives unreadable.
		if p[i] < 0x20 || p[i] == 0x7f {
			return bad("control character")
		}
	}
	for seg := range strings.SplitSeq(p, "/") {
		switch seg {
		case "":
			return bad("empty segment")
		case ".", "..":
			return bad("dot segment")
		}
	}
	return nil
}

// CheckSharedName checks the name of a Shared file: slash-separated parts of lower-case
// letters, digits, '.', '_' and '-', none empty, "." or "..", at most 512 bytes in all.
func CheckSharedName(name string) error {
	if name == "" || len(name) > 512 {
		return fmt.Errorf("%w: shared name %q is empty or longer than 512 bytes", ErrInvalidPath, name)
	}
	for part := range strings.SplitSeq(name, "/") {
		if part == "" || part == "." || part == ".." {
			return fmt.Errorf("%w: shared name %q has an empty, \".\" or \"..\" part", ErrInvalidPath, name)
		}
		for _, c := range part {
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
				return fmt.Errorf("%w: shared name %q has %q; use lower-case letters, digits, '.', '_' and '-'", ErrInvalidPath, name, c)
			}
		}
	}
	return nil
}

// CheckSharedPrefix checks a prefix that ListShared lists by: empty (every name), or the
// start of a name that CheckSharedName accepts. It may end with '/' ("msa/v1/") or part
// way through a part ("msa/v1/unp"). Stores resolve the parts before its last '/' as
// folders, so every rule that keeps a name inside the shared files keeps a prefix there.
func CheckSharedPrefix(prefix string) error {
	if prefix == "" || CheckSharedName(prefix) == nil || CheckSharedName(prefix+"a") == nil {
		return nil
	}
	return fmt.Errorf("%w: shared prefix %q starts no name that CheckSharedName accepts", ErrInvalidPath, prefix)
}
