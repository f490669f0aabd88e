package taskservice

import (
	"github.com/taskd/taskd/internal/taskspec"
)

// The sizes a user, a handler or a worker controls have one table
// (contract §10, docs/limits.md): internal/taskspec's limits.go, where
// each is documented and checked; the node exports them under the same
// names. A handler's output is checked here, where its run's outcome is
// committed (limitOutcome).

// Limits of a task and of the requests that name one.
const (
	MaxKindLen           = taskspec.MaxKindLen
	MaxBatch             = taskspec.MaxBatch
	MaxTriggers          = taskspec.MaxTriggers
	MaxCalendarsPerTask  = taskspec.MaxCalendarsPerTask
	MaxTriggerNameLen    = taskspec.MaxTriggerNameLen
	MaxLabels            = taskspec.MaxLabels
	MaxLabelKeyLen       = taskspec.MaxLabelKeyLen
	MaxLabelValueLen     = taskspec.MaxLabelValueLen
	MaxIdempotencyKeyLen = taskspec.MaxIdempotencyKeyLen
	MaxAttemptsLimit     = taskspec.MaxAttemptsLimit
	// MaxTaskBytes bounds a task's spec as encoded (payload and data
	// included), so that its record fits in one etcd request.
	MaxTaskBytes = taskspec.MaxTaskBytes
	// MaxMessage bounds a run's message: a longer one is cut, ending with
	// a marker that says so.
	MaxMessage = taskspec.MaxMessage
	// MaxWorkerKinds bounds the kinds one remote worker's hello names
	// (pkg/workers.MaxKinds) and the kinds a node declares for its
	// workers ahead of them (Config.DeclaredKinds, taskd --kinds).
	MaxWorkerKinds = taskspec.MaxWorkerKinds
	// MaxNodeNameLen bounds a node's name: 1-64 bytes of [A-Za-z0-9._-].
	MaxNodeNameLen = taskspec.MaxNodeNameLen
	// MaxPageTokenLen bounds a ListTasks page token.
	MaxPageTokenLen = taskspec.MaxPageTokenLen
	// MaxCursorLen bounds a WatchEvents cursor ("<revision>.<index>").
	MaxCursorLen = taskspec.MaxCursorLen
)

// MinInstant and MaxInstant bound every instant a request or a handler
// gives (once.at, a trigger's start and end, a preview's from, a snooze):
// any two instants between them are less than a time.Duration (292 years)
// apart, so no arithmetic on them overflows.
var (
	MinInstant = taskspec.MinInstant
	MaxInstant = taskspec.MaxInstant
)

// MinSnooze and MaxHandlerDelay bound a delay that the built-in exec and
// webhook handlers read from what they run (a snooze's duration, a
// Retry-After): a shorter snooze is made MinSnooze, so that a command
// cannot spin its task without pause, and a longer delay MaxHandlerDelay.
const (
	MinSnooze       = taskspec.MinSnooze
	MaxHandlerDelay = taskspec.MaxHandlerDelay
)

// MaxRequestBytes is the largest gRPC request the API must receive: a full
// ScheduleTasks batch of tasks at every limit with payload and data at
// maxPayload. The server's grpc.MaxRecvMsgSize is set to it, so anything
// larger is refused (RESOURCE_EXHAUSTED) before it is read into memory.
func MaxRequestBytes(maxPayload int) int { return taskspec.MaxRequestBytes(maxPayload) }

// MaxRequestBytes is MaxRequestBytes of the node's --max-payload.
func (n *Node) MaxRequestBytes() int { return MaxRequestBytes(n.cfg.MaxPayload) }

// Limit is one row of the limits table: What is limited, Value the limit,
// Field the field an error names (a path inside the request), Where it is
// checked.
type Limit = taskspec.Limit

// Limits is the table of every size limit, with a node's --max-payload;
// docs/limits.md lists the same rows (TestLimitsDocumented).
func Limits(maxPayload int) []Limit { return taskspec.Limits(maxPayload) }
