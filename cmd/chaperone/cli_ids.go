package main

import (
	"context"
	"fmt"
	"strings"
)

const (
	// idLength is the length of a job id: 32 hexadecimal characters.
	idLength = 32
	// minPrefix is the shortest start of an id the commands take: what the progress line
	// shows ("job 3f2a1b2c …"), 4 billion values, which an owner's jobs (a thousand are
	// kept) seldom share.
	minPrefix = 8
)

// jobID is the job the user means by arg: a whole id as it is, or the one job of the
// caller's whose id starts with arg, found by listing the caller's jobs. A start that no
// job of the caller's has goes to the server as it is, which answers 404 as for any
// unknown id; a start shared by several of the caller's jobs is a usage error naming them.
func (cl *cli) jobID(ctx context.Context, arg string) (string, error) {
	arg = strings.ToLower(arg)
	if len(arg) >= idLength {
		return arg, nil
	}
	if len(arg) < minPrefix {
		return "", usageError{fmt.Errorf("job id %q is too short: give the whole id, or its first %d characters or more "+
			"(chaperone jobs list shows the ids)", arg, minPrefix)}
	}
	var matches []string
	for j, err := range cl.c.Jobs(ctx, 100) {
		if err != nil {
			return "", err
		}
		if strings.HasPrefix(j.ID, arg) {
			matches = append(matches, j.ID)
		}
	}
	switch len(matches) {
	case 0:
		return arg, nil
	case 1:
		return matches[0], nil
	}
	return "", usageError{fmt.Errorf("%d of your jobs have ids that start with %s (%s): give more of the id",
		len(matches), arg, strings.Join(matches, ", "))}
}
