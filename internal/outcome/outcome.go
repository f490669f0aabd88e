// Package outcome holds the outcomes of a request that a caller can act on
// and that more than one of the node's packages return: the values behind
// taskservice.ErrNotFound, ErrFailedPrecondition, ErrConflict and
// ErrAlreadyExists (taskservice re-exports each as the same value, so
// errors.Is finds it by either name). The write path's own outcomes
// (too large, outcome unknown) are internal/writepath's.
//
// Lock: none; the values never change.
package outcome

import "errors"

// ErrNotFound reports a task, identity or calendar that does not exist.
var ErrNotFound = errors.New("not found")

// ErrFailedPrecondition reports a request that the object's state forbids.
var ErrFailedPrecondition = errors.New("failed precondition")

// ErrConflict reports a write that lost to concurrent changes too many
// times in a row; nothing was written.
var ErrConflict = errors.New("conflicting concurrent changes")

// ErrAlreadyExists reports an idempotency key that already names a task
// whose spec differs, or a calendar that exists.
var ErrAlreadyExists = errors.New("already exists")
