// Package taskspec is what a request may ask, and how it is named in errors:
// the checks of a task's spec and triggers, of a trigger edit, a preview
// and the filters of a listing or an event stream, against the one table
// of size limits (limits.go, docs/limits.md); the default trigger and the
// times the server fills in (resolve.go); the names of a task's triggers
// (triggernames.go); the comparison of a retried schedule with the task
// its idempotency key names; and the limits of what a handler's outcome
// may ask to store (outcome.go).
//
// Every error about a field is an *InvalidArgumentError naming the field's
// path in the request ("task.triggers[0].cron.expression"), or, from
// Schedule, a *SpecError naming it relative to the spec (SpecError.In
// names it under the request's path). pkg/taskservice aliases these types,
// so errors.As with its names finds them.
//
// It has no lock and no etcd: every function reads only its arguments and
// changes only the spec or record it is handed. What only the node knows
// (whether some node handles a kind, whether a calendar is stored) is
// passed in as functions (NodeView).
package taskspec
