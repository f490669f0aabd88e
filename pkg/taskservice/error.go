package taskservice

import (
	"errors"

	"github.com/taskd/taskd/internal/eventhub"
	"github.com/taskd/taskd/internal/outcome"
	"github.com/taskd/taskd/internal/runs"
	"github.com/taskd/taskd/internal/writepath"
)

// The errors below are the outcomes a caller can act on; test them with
// errors.Is. The gRPC API maps each to its status code.

// ErrNotFound reports a task or identity that does not exist (NOT_FOUND).
var ErrNotFound = outcome.ErrNotFound

// ErrFailedPrecondition reports a request that the object's state forbids
// (FAILED_PRECONDITION).
var ErrFailedPrecondition = outcome.ErrFailedPrecondition

// ErrConflict reports a write that lost to concurrent changes too many times
// in a row: an identity's mapping or a task kept changing under it. Nothing
// was written; the request may be retried (ABORTED).
var ErrConflict = outcome.ErrConflict

// ErrOutcomeUnknown reports a write whose outcome the node does not know:
// etcd may or may not have applied it (a timeout after the request was
// sent). A schedule that fails with it may have stored its tasks: retry it
// with the same idempotency key to be sure of one task (UNAVAILABLE). The
// node itself converges: a task that was stored is run.
var ErrOutcomeUnknown = writepath.ErrOutcomeUnknown

// ErrLeaseNotProven is what a handler returns when LeaseProven told it, at
// the last moment before it would start its work (an exec handler's fork, a
// webhook's request), that the node can no longer prove its lease is live.
// The node records the run as one whose handler did not run, and the fire
// time runs again, here once the lease is proven or on the identity's next
// owner.
var ErrLeaseNotProven = runs.ErrLeaseNotProven

// ErrAlreadyExists reports an idempotency key that already names a task
// whose spec differs from the request's (ALREADY_EXISTS). The message
// names the differing field.
var ErrAlreadyExists = outcome.ErrAlreadyExists

// ErrTooManyStreams refuses a WatchEvents stream past the node's
// Config.MaxEventStreams (RESOURCE_EXHAUSTED): each stream may hold up to
// Config.EventBuffer bytes for its reader, so their number is bounded too.
var ErrTooManyStreams = eventhub.ErrTooManyStreams

// ErrTooLarge reports a write larger than etcd takes in one request (its
// encoded size against --max-request-bytes, Config.MaxRequestBytes, or its
// operations against --max-txn-ops, Config.MaxTxnOps). It was not sent,
// or etcd refused it: nothing was written, and sending it again cannot
// succeed (INVALID_ARGUMENT). The message says what was too large.
var ErrTooLarge = writepath.ErrTooLarge

// errLeaseLost is the cause of a run's context when its node lost its lease:
// the node can no longer commit the run, and a new owner may run it again.
var errLeaseLost = errors.New("the node lost its lease: it can no longer prove that it owns the identity")

// errNodeStopping is the cause of a run's context when its node stops.
var errNodeStopping = errors.New("the node is stopping")
