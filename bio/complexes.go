package bio

import (
	"fmt"

	"github.com/chaperone-bio/chaperone/job"
)

// SingleTarget is the name of the one target of a prediction given as sequence or input.
const SingleTarget = "target_1"

// Complexes parses the input of a prediction job into its targets, in order: the one
// target of sequence or input, named SingleTarget, or one per target under its name. Each
// is a checked Complex; errors are *job.InvalidError naming the request field. Parsing is
// deterministic, so an engine calls it again on a stored job rather than the job storing a
// second copy of its input.
func Complexes(in job.Input) ([]*Complex, error) {
	switch {
	case in.Sequence != "":
		cx, err := ProteinComplex(SingleTarget, in.Sequence)
		if err != nil {
			return nil, invalid("sequence", err)
		}
		return []*Complex{cx}, nil
	case in.Input != "":
		cx, err := ParseInput(SingleTarget, in.Input)
		if err != nil {
			return nil, invalid("input", err)
		}
		return []*Complex{cx}, nil
	}
	out := make([]*Complex, len(in.Targets))
	for i, t := range in.Targets {
		cx, err := ParseInput(t.Name, t.Content)
		if err != nil {
			return nil, invalid(fmt.Sprintf("targets[%d].content", i), err)
		}
		out[i] = cx
	}
	return out, nil
}

func invalid(field string, err error) error {
	return &job.InvalidError{Field: field, Reason: err.Error()}
}
