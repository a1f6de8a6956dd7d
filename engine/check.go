package engine

import "errors"

// CheckError is why an engine cannot run on this machine, said twice: Public for anyone
// who asks the API (the kind of thing that is missing, naming no path or output of this
// machine), Detail for the operator's log (the paths, the tool's own words).
type CheckError struct {
	Public string
	Detail string
}

func (e *CheckError) Error() string { return e.Detail }

// PublicReason is what an API caller may read of a Check error: its Public text, or, for
// an error that does not say what is public, only that the self-check failed.
func PublicReason(err error) string {
	var ce *CheckError
	if errors.As(err, &ce) && ce.Public != "" {
		return ce.Public
	}
	return "self-check failed"
}
