package taskservice

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/taskd/taskd/pkg/calendar"
	"github.com/taskd/taskd/pkg/cron"
	"github.com/taskd/taskd/pkg/identity"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// This file is the one table of the sizes a user, a handler or a worker
// controls (contract §10, docs/limits.md). Each is checked where it enters:
// a request's field by the API (INVALID_ARGUMENT naming the field), a
// handler's output where its run's outcome is built (a failed run saying
// what was too large, or, for a message, cut with a marker). The limits of
// other packages are named here too, so that Limits lists every one.

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
	// maxSpecOverhead bounds the encoded size of a spec without its
	// payload and data when every other field is at its limit
	// (TestSpecOverheadBound builds one).
	maxSpecOverhead = 128 << 10
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

// MaxRequestBytes is MaxRequestBytes of the node's --max-payload.
func (n *Node) MaxRequestBytes() int { return MaxRequestBytes(n.cfg.MaxPayload) }

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

// checkText checks a name-like string: 1 (0 with optional) to max bytes of
// UTF-8 without control or bidirectional formatting characters.
func checkText(field, s string, max int, optional bool) error {
	switch {
	case s == "" && optional:
		return nil
	case s == "":
		return invalid(field, "must not be empty")
	case len(s) > max:
		return invalid(field, "is %d bytes, the limit is %d", len(s), max)
	case !utf8.ValidString(s):
		return invalid(field, "is not valid UTF-8")
	}
	if err := identity.CheckText(s); err != nil {
		return invalid(field, "%s", err.Error())
	}
	return nil
}

// checkLen checks only the length and encoding of s.
func checkLen(field, s string, max int) error {
	if len(s) > max {
		return invalid(field, "is %d bytes, the limit is %d", len(s), max)
	}
	if !utf8.ValidString(s) {
		return invalid(field, "is not valid UTF-8")
	}
	return nil
}

// checkInstant checks an optional instant of a request.
func checkInstant(field string, ts *timestamppb.Timestamp) error {
	if ts == nil {
		return nil
	}
	if err := ts.CheckValid(); err != nil {
		return invalid(field, "%s", err.Error())
	}
	if t := ts.AsTime(); t.Before(MinInstant) || !t.Before(MaxInstant) {
		return invalid(field, "is %s, must be from %s to before %s", t.Format(time.RFC3339), MinInstant.Format(time.DateOnly), MaxInstant.Format(time.DateOnly))
	}
	return nil
}

// checkLabels checks a label map: of a task, or a ListTasks filter.
func checkLabels(field string, labels map[string]string) error {
	if len(labels) > MaxLabels {
		return invalid(field, "has %d labels, the limit is %d", len(labels), MaxLabels)
	}
	for k, v := range labels {
		if k == "" || len(k) > MaxLabelKeyLen || !utf8.ValidString(k) || identity.CheckText(k) != nil {
			return invalid(field, "key %.*q must be 1-%d bytes of UTF-8 without control characters", MaxLabelKeyLen, k, MaxLabelKeyLen)
		}
		if err := checkLen(field+"["+k+"]", v, MaxLabelValueLen); err != nil {
			return err
		}
	}
	return nil
}

// ValidateNodeName checks a node's name: 1-MaxNodeNameLen bytes of
// [A-Za-z0-9._-] (it is used in etcd keys). The error names field.
func ValidateNodeName(field, name string) error {
	if name == "" {
		return invalid(field, "is required")
	}
	if len(name) > MaxNodeNameLen {
		return invalid(field, "is %d bytes, the limit is %d", len(name), MaxNodeNameLen)
	}
	for i := 0; i < len(name); i++ {
		switch b := name[i]; {
		case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9', b == '.', b == '_', b == '-':
		default:
			return invalid(field, "%q has a byte other than A-Z a-z 0-9 . _ - at %d", name, i)
		}
	}
	return nil
}

// checkEnumList checks a filter's list of enum values: each known and not
// UNSPECIFIED, none twice (so the list is bounded by the enum).
func checkEnumList[E ~int32](field string, list []E, names map[int32]string) error {
	if len(list) > len(names) {
		return invalid(field, "has %d values, there are only %d", len(list), len(names)-1)
	}
	seen := map[E]bool{}
	for i, v := range list {
		if _, ok := names[int32(v)]; !ok || v == 0 {
			return invalid(fmt.Sprintf("%s[%d]", field, i), "unknown value %d", v)
		}
		if seen[v] {
			return invalid(fmt.Sprintf("%s[%d]", field, i), "%s is listed twice", names[int32(v)])
		}
		seen[v] = true
	}
	return nil
}

// checkTaskFilter checks the filter fields of a ListTasks request.
func checkTaskFilter(req *taskdv1.ListTasksRequest) error {
	if err := checkEnumList("states", req.States, taskdv1.TaskState_name); err != nil {
		return err
	}
	if err := checkText("kind", req.Kind, MaxKindLen, true); err != nil {
		return err
	}
	if err := checkLabels("labels", req.Labels); err != nil {
		return err
	}
	if req.Node != "" {
		if err := ValidateNodeName("node", req.Node); err != nil {
			return err
		}
	}
	if len(req.PageToken) > MaxPageTokenLen {
		return invalid("page_token", "is %d bytes, the limit is %d: it is not a token from a previous response", len(req.PageToken), MaxPageTokenLen)
	}
	return nil
}

// checkEventFilter checks the filter fields of a WatchEvents request (the
// identity and task id are checked as elsewhere).
func checkEventFilter(req *taskdv1.WatchEventsRequest) error {
	if err := checkEnumList("types", req.Types, taskdv1.EventType_name); err != nil {
		return err
	}
	if err := checkText("kind", req.Kind, MaxKindLen, true); err != nil {
		return err
	}
	if req.Node != "" {
		if err := ValidateNodeName("node", req.Node); err != nil {
			return err
		}
	}
	if len(req.Cursor) > MaxCursorLen {
		return invalid("cursor", "is %d bytes, the limit is %d: it is not a cursor from an earlier event", len(req.Cursor), MaxCursorLen)
	}
	return nil
}

// cleanMessage makes a run's message storable: invalid UTF-8 (a handler's
// error text may be anything) is replaced, and a message over MaxMessage
// is cut on a character boundary and ends with a marker saying how long it
// was, so the whole stays within MaxMessage.
func cleanMessage(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if len(s) <= MaxMessage {
		return s
	}
	marker := fmt.Sprintf(" … [cut: the message was %d bytes, the limit is %d]", len(s), MaxMessage)
	cut := MaxMessage - len(marker)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + marker
}

// limitOutcome turns a run's outcome that asks for what cannot be stored
// into a failed run saying what was too large: new data over --max-payload
// (or making the task's encoded spec pass MaxTaskBytes), or a snooze or an
// earliest retry past MaxInstant. The run is an ERROR, retried after backoff as a handler's
// error is; the task keeps its data. It is the one check of every
// handler's output (Go handlers, exec, webhook, remote workers), made where
// the outcome is committed.
func (n *Node) limitOutcome(res *runResult, rec *storev1.TaskRecord) {
	if res.notCalled || res.encodeFailed || res.stale {
		return
	}
	var why string
	switch {
	case res.dataSet && len(res.data) > n.cfg.MaxPayload:
		why = fmt.Sprintf("data too large: %d bytes > limit %d (--max-payload)", len(res.data), n.cfg.MaxPayload)
	case res.dataSet && specSizeWithData(rec.GetSpec(), res.data) > MaxTaskBytes:
		why = fmt.Sprintf("data too large: the task would be %d bytes encoded > limit %d", specSizeWithData(rec.GetSpec(), res.data), MaxTaskBytes)
	case !res.snooze.IsZero() && !res.snooze.Before(MaxInstant):
		why = fmt.Sprintf("snooze_until too far: %s is not before %s", res.snooze.UTC().Format(time.RFC3339), MaxInstant.Format(time.DateOnly))
	case !res.retryAt.IsZero() && !res.retryAt.Before(MaxInstant):
		why = fmt.Sprintf("retry time too far: %s is not before %s", res.retryAt.UTC().Format(time.RFC3339), MaxInstant.Format(time.DateOnly))
	default:
		return
	}
	n.log.Warn("run outcome refused for its size", "identity", rec.GetSpec().GetIdentity(), "task", rec.GetId(), "reason", why)
	*res = runResult{outcome: taskdv1.Outcome_OUTCOME_ERROR, retry: true,
		message: cleanMessage("the run's outcome was refused: " + why),
		started: res.started, ended: res.ended, fence: res.fence, recovery: res.recovery}
}

// specSizeWithData is the encoded size of spec once its data is data.
func specSizeWithData(spec *taskdv1.TaskSpec, data []byte) int {
	return proto.Size(spec) - sizeOfBytesField(4, len(spec.GetData())) + sizeOfBytesField(4, len(data))
}

// sizeOfBytesField is the encoded size of a proto3 bytes field number num
// of n bytes (nothing when empty).
func sizeOfBytesField(num protowire.Number, n int) int {
	if n == 0 {
		return 0
	}
	return protowire.SizeTag(num) + protowire.SizeBytes(n)
}
