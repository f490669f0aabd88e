package taskspec

import (
	"fmt"
	"time"

	"github.com/taskd/taskd/pkg/calendar"
	"github.com/taskd/taskd/pkg/cron"
	"github.com/taskd/taskd/pkg/identity"
)

// This file is the one table of the sizes a user, a handler or a worker
// controls (contract §10, docs/limits.md). Each is checked where it enters:
// a request's field by the API (INVALID_ARGUMENT naming the field), a
// handler's output where its run's outcome is built (a failed run saying
// what was too large, or, for a message, cut with a marker). The limits of
// other packages are named here too, so that Limits lists every one.
// pkg/taskservice exports each limit under the same name.

// Limits of a task and of the requests that name one.
const (
	MaxKindLen           = 128
	MaxBatch             = 100
	MaxTriggers          = 16
	MaxCalendarsPerTask  = 16
	MaxTriggerNameLen    = 64
	MaxLabels            = 64
	MaxLabelKeyLen       = 128
	MaxLabelValueLen     = 1024
	MaxIdempotencyKeyLen = 256
	MaxAttemptsLimit     = 1000
	// MaxTaskBytes bounds a task's spec as encoded (payload and data
	// included): a task record holding it, with two run messages (its
	// last run and the history entry), still fits in one etcd request of
	// 1.5 MiB. Only a --max-payload above 512 KiB makes it reachable.
	MaxTaskBytes = 1152 << 10
	// MaxMessage bounds a run's message (a handler's error text, an exec
	// command's stdout, a webhook's answer, a worker's message): a longer
	// one is cut, ending with a marker that says so.
	MaxMessage = 64 << 10
	// MaxWorkerKinds bounds the kinds one remote worker's hello names
	// (pkg/workers.MaxKinds) and the kinds a node declares for its
	// workers ahead of them (Config.DeclaredKinds, taskd --kinds).
	MaxWorkerKinds = 64
	// MaxNodeNameLen bounds a node's name: 1-64 bytes of [A-Za-z0-9._-].
	MaxNodeNameLen = 64
	// MaxPageTokenLen bounds a ListTasks page token (a token the node made
	// is the base64 of a key: under 1,200 bytes with a --prefix of 64).
	MaxPageTokenLen = 2048
	// MaxCursorLen bounds a WatchEvents cursor ("<revision>.<index>").
	MaxCursorLen = 64
	maxHorizon   = 100 * 365 * 24 * time.Hour
	// MaxJitter bounds a periodic or cron trigger's jitter (which is also
	// less than a periodic trigger's interval).
	MaxJitter = 24 * time.Hour
	// maxSpecOverhead bounds the encoded size of a spec without its
	// payload and data when every other field is at its limit
	// (TestSpecOverheadBound builds one).
	maxSpecOverhead = 128 << 10
)

// Preview limits.
const (
	DefaultPreviewCount = 10
	MaxPreviewCount     = 1000
)

// MinInstant and MaxInstant bound every instant a request or a handler
// gives (once.at, a trigger's start and end, a preview's from, a snooze):
// any two instants between them are less than a time.Duration (292 years)
// apart, so no arithmetic on them overflows.
var (
	MinInstant = time.Date(1970, time.January, 1, 0, 0, 0, 0, time.UTC)
	MaxInstant = time.Date(2200, time.January, 1, 0, 0, 0, 0, time.UTC)
)

// MaxRequestBytes is the largest gRPC request the API must receive: a full
// ScheduleTasks batch of tasks at every limit with payload and data at
// maxPayload. The server's grpc.MaxRecvMsgSize is set to it, so anything
// larger is refused (RESOURCE_EXHAUSTED) before it is read into memory.
func MaxRequestBytes(maxPayload int) int {
	task := min(2*maxPayload+maxSpecOverhead, MaxTaskBytes)
	return MaxBatch*(task+8) + 64<<10
}

// MinSnooze and MaxHandlerDelay bound a delay that the built-in exec and
// webhook handlers read from what they run (a snooze's duration, a
// Retry-After): a shorter snooze is made MinSnooze, so that a command
// cannot spin its task without pause, and a longer delay MaxHandlerDelay.
const (
	MinSnooze       = time.Second
	MaxHandlerDelay = 24 * time.Hour
)

// Limit is one row of the limits table.
type Limit struct {
	What  string // what is limited
	Value string // the limit
	Field string // the field an error names (a path inside the request)
	Where string // where it is checked
}

// Limits is the table of every size limit, with a node's --max-payload;
// docs/limits.md lists the same rows (TestLimitsDocumented).
func Limits(maxPayload int) []Limit {
	b := func(n int) string { return fmt.Sprintf("%d bytes", n) }
	api := "API (INVALID_ARGUMENT)"
	out := "run outcome (failed run)"
	return []Limit{
		{"identity", fmt.Sprintf("1-%d bytes of UTF-8, no control or bidirectional formatting characters", identity.MaxLen), "task.identity, identity", api},
		{"kind", fmt.Sprintf("1-%d bytes of UTF-8, no control or bidirectional formatting characters", MaxKindLen), "task.kind, kind", api},
		{"payload", b(maxPayload) + " (--max-payload)", "task.payload", api},
		{"data", b(maxPayload) + " (--max-payload)", "task.data", api},
		{"encoded task", b(MaxTaskBytes), "task", api},
		{"tasks per ScheduleTasks", fmt.Sprint(MaxBatch), "tasks", api},
		{"triggers per task", fmt.Sprint(MaxTriggers) + " (also after an update's add_triggers)", "task.triggers, add_triggers", api},
		{"trigger name", b(MaxTriggerNameLen) + "; one beginning with # only for a trigger the task has", "task.triggers[i].name, add_triggers[i].name", api},
		{"trigger names to remove", fmt.Sprintf("%d, each a name of a trigger of the task, of %d bytes at most", MaxTriggers, MaxTriggerNameLen), "remove_triggers, remove_triggers[i]", api},
		{"cron expression", b(cron.MaxLen), "task.triggers[i].cron.expression, calendar.cron.expression", api},
		{"time zone name", b(cron.MaxZoneLen), "task.triggers[i].cron.time_zone, calendar.time_zone", api},
		{"delay and interval", "at most 100 years", "task.triggers[i].once.delay, task.triggers[i].periodic.interval", api},
		{"jitter", fmt.Sprintf("at most %d h, less than a periodic trigger's interval; periodic and cron triggers only", MaxJitter/time.Hour), "task.triggers[i].jitter", api},
		{"instant", fmt.Sprintf("from %s to before %s", MinInstant.Format(time.DateOnly), MaxInstant.Format(time.DateOnly)), "task.triggers[i].once.at, ….start, ….end, from", api},
		{"calendars per task", fmt.Sprint(MaxCalendarsPerTask), "task.calendars", api},
		{"labels per task", fmt.Sprint(MaxLabels), "task.labels", api},
		{"label key", b(MaxLabelKeyLen), "task.labels", api},
		{"label value", b(MaxLabelValueLen), "task.labels[key]", api},
		{"idempotency key", b(MaxIdempotencyKeyLen), "task.idempotency_key", api},
		{"max_attempts", fmt.Sprint(MaxAttemptsLimit), "task.max_attempts", api},
		{"timeout", "7 days", "task.timeout", api},
		{"backoff", "initial 1 day, max 7 days", "task.backoff.initial, task.backoff.max", api},
		{"preview count", fmt.Sprint(MaxPreviewCount), "count", api},
		{"page size", "1000", "page_size", api},
		{"page token", b(MaxPageTokenLen), "page_token", api},
		{"event cursor", b(MaxCursorLen), "cursor", api},
		{"states and event types in a filter", "each known, at most one of each", "states, types", api},
		{"node name", fmt.Sprintf("1-%d bytes of [A-Za-z0-9._-]", MaxNodeNameLen), "node, to_node", api},
		{"calendar name", fmt.Sprintf("1-%d bytes of [A-Za-z0-9._-]", calendar.MaxNameLen), "calendar.name, calendar.base, name", api},
		{"calendar description", b(calendar.MaxDescriptionLen), "calendar.description", api},
		{"calendar entries", fmt.Sprint(calendar.MaxEntries), "calendar.dates.dates, calendar.annual.days, …", api},
		{"calendar chain", fmt.Sprint(calendar.MaxChain), "calendar.base", api},
		{"run message", b(MaxMessage) + ", cut with a marker", "-", "run outcome (cut)"},
		{"new data from a handler", b(maxPayload) + " (--max-payload), and the task within the encoded limit", "-", out},
		{"snooze", "before " + MaxInstant.Format(time.DateOnly), "-", out},
		{"earliest retry (RetryAt)", "before " + MaxInstant.Format(time.DateOnly), "-", out},
		{"delay asked by an exec command or a webhook response (snooze, Retry-After)",
			fmt.Sprintf("at most %d h; a snooze at least %d s", MaxHandlerDelay/time.Hour, MinSnooze/time.Second), "-", "exec and webhook handlers (clamped)"},
		{"gRPC request", fmt.Sprintf("%d bytes (100 tasks at every limit)", MaxRequestBytes(maxPayload)), "-", "gRPC server (RESOURCE_EXHAUSTED)"},
	}
}
