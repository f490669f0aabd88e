package taskservice

import "github.com/taskd/taskd/internal/taskspec"

// The errors below name the field of a request that is wrong. The checks
// that make them are internal/taskspec's; the types are the same, so
// errors.As with these names finds them.

// InvalidArgumentError names the request field that is wrong
// (INVALID_ARGUMENT): Field is its path in the request, e.g.
// "task.triggers[0].cron.expression", and Reason says what is wrong with
// it; Error is "Field: Reason".
type InvalidArgumentError = taskspec.InvalidArgumentError

// UnimplementedError names a field whose value asks for a feature that
// this release does not have yet (UNIMPLEMENTED): Field and Reason as in
// InvalidArgumentError.
type UnimplementedError = taskspec.UnimplementedError

// SpecError is an error of Schedule about one of the specs it was given.
// It names the wrong field relative to that spec, so that each caller can
// name it as its own request does (In): the gRPC API's ScheduleTask as
// "task.triggers[0].cron.expression", ScheduleTasks as
// "tasks[2].triggers[0].cron.expression". Error names it as ScheduleTasks
// does.
//
// Index is the spec's place in the specs given to Schedule; Field the path
// of the wrong field inside the spec ("" is the spec as a whole); Reason
// what is wrong with it, without naming it; Err the outcome it wraps:
// ErrAlreadyExists (the spec's idempotency key names a task whose spec
// differs) or ErrTooLarge (the task is too large to store), nil for an
// invalid spec (INVALID_ARGUMENT). In(path) is the error as a request
// that holds the spec at path ("task", "tasks[2]") names it.
type SpecError = taskspec.SpecError

// invalid is an *InvalidArgumentError naming field, for the checks that
// need the node's state (a page token, a cursor, a calendar in use).
func invalid(field, format string, args ...any) error {
	return taskspec.Invalid(field, format, args...)
}
