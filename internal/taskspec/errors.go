package taskspec

import (
	"errors"
	"fmt"
	"strings"
)

// InvalidArgumentError names the request field that is wrong.
type InvalidArgumentError struct {
	Field  string
	Reason string
	// refersTo is the path of another field of the request that Reason
	// ends with (the trigger whose name a trigger repeats), so that
	// SpecError.In names it under the spec's path as it does Field.
	refersTo string
}

func (e *InvalidArgumentError) Error() string { return e.Field + ": " + e.Reason }

// UnimplementedError names a field whose value asks for a feature that
// this release does not have yet.
type UnimplementedError struct {
	Field  string
	Reason string
}

func (e *UnimplementedError) Error() string { return e.Field + ": " + e.Reason }

// Invalid is an *InvalidArgumentError naming field, its reason formatted
// as by fmt.Sprintf.
func Invalid(field, format string, args ...any) error {
	return &InvalidArgumentError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// Subfield is the path of the field name inside the field parent: "" is
// the request itself, or, in Schedule, the spec (whose fields SpecError
// names relative to it).
func Subfield(parent, name string) string {
	switch {
	case parent == "":
		return name
	case name == "":
		return parent
	}
	return parent + "." + name
}

// SpecError is an error of Schedule about one of the specs it was given.
// It names the wrong field relative to that spec, so that each caller can
// name it as its own request does (In): the gRPC API's ScheduleTask as
// "task.triggers[0].cron.expression", ScheduleTasks as
// "tasks[2].triggers[0].cron.expression". Error names it as ScheduleTasks
// does.
type SpecError struct {
	// Index is the spec's place in the specs given to Schedule.
	Index int
	// Field is the path of the wrong field inside the spec, e.g.
	// "triggers[0].cron.expression"; "" is the spec as a whole.
	Field string
	// Reason says what is wrong with the field, without naming it.
	Reason string
	// Err is the outcome the error wraps: ErrAlreadyExists (the spec's
	// idempotency key names a task whose spec differs) or ErrTooLarge (the
	// task is too large to store); nil for an invalid spec (INVALID_ARGUMENT).
	Err error
	// refersTo is the path inside the spec of another field that Reason
	// ends with ("" if none): In names it under the spec's path too.
	refersTo string
}

func (e *SpecError) Error() string { return e.In(fmt.Sprintf("tasks[%d]", e.Index)).Error() }

func (e *SpecError) Unwrap() error { return e.Err }

// In is the error as a request that holds the spec at the path spec
// ("task", "tasks[2]") names it: an *InvalidArgumentError whose Field is
// spec's Field, or, for an error with an Err, an error that begins with
// that field and wraps Err.
func (e *SpecError) In(spec string) error {
	field := Subfield(spec, e.Field)
	reason := e.Reason
	if e.refersTo != "" {
		reason = strings.TrimSuffix(reason, e.refersTo) + Subfield(spec, e.refersTo)
	}
	if e.Err == nil {
		return &InvalidArgumentError{Field: field, Reason: reason}
	}
	return fmt.Errorf("%s: %s: %w", field, reason, e.Err)
}

// ErrorAt is err, an error of checking or resolving specs[i] that names
// its field relative to the spec, as a *SpecError; an error that names no
// field is returned as it is.
func ErrorAt(i int, err error) error {
	var ia *InvalidArgumentError
	if !errors.As(err, &ia) {
		return err
	}
	return &SpecError{Index: i, Field: ia.Field, Reason: ia.Reason, refersTo: ia.refersTo}
}
