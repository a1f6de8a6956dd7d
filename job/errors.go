package job

import (
	"errors"
	"fmt"
	"time"
)

// Sentinel errors that any layer may return and the HTTP layer maps to a status.
var (
	ErrNotFound = errors.New("not found")
	// ErrLeaseLost means a worker no longer holds the job it is reporting on: it was
	// canceled, deleted, or its lease expired and another attempt took over.
	ErrLeaseLost = errors.New("lease lost")
	// ErrIdempotencyReused means an Idempotency-Key came back with a different request body.
	ErrIdempotencyReused = errors.New("idempotency key reused with a different request")
)

// InvalidError is a request the caller must fix; Field names what is wrong.
type InvalidError struct {
	Field  string
	Reason string
}

func (e *InvalidError) Error() string {
	if e.Field == "" {
		return e.Reason
	}
	return e.Field + ": " + e.Reason
}

// Invalid builds an InvalidError with a formatted reason.
func Invalid(field, format string, args ...any) error {
	return &InvalidError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// ConflictError is an action that the job's current state does not allow.
type ConflictError struct{ Reason string }

func (e *ConflictError) Error() string { return e.Reason }

// LimitError is a quota or capacity refusal; the caller may retry after RetryAfter.
type LimitError struct {
	// Capacity is true when the service as a whole is full, false for a per-owner quota.
	Capacity   bool
	Reason     string
	RetryAfter time.Duration
}

func (e *LimitError) Error() string { return e.Reason }

// UnavailableError means no live worker can run the model now.
type UnavailableError struct{ Reason string }

func (e *UnavailableError) Error() string { return e.Reason }
