package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/taskd/taskd/internal/specdefaults"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// outputFormat is the value of -o/--output.
type outputFormat string

// The output formats.
const (
	formatTable outputFormat = "table" // human tables
	formatJSON  outputFormat = "json"  // protojson of the response message
)

// String returns the format's name.
func (f *outputFormat) String() string { return string(*f) }

// Set accepts table or json.
func (f *outputFormat) Set(v string) error {
	switch outputFormat(v) {
	case formatTable, formatJSON:
		*f = outputFormat(v)
		return nil
	}
	return fmt.Errorf("want table or json")
}

// messageWidth is how much of a run's message a table shows.
const messageWidth = 60

// writeJSON writes m as multiline protojson with lowerCamelCase field names,
// followed by a newline.
func writeJSON(w io.Writer, m proto.Message) error {
	b, err := protojson.MarshalOptions{Multiline: true, Indent: "  ", UseProtoNames: false}.Marshal(m)
	if err != nil {
		return fmt.Errorf("encoding JSON: %w", err)
	}
	b = append(b, '\n')
	_, err = w.Write(b)
	return err
}

// newTable returns a tabwriter for aligned columns; the caller flushes it.
func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
}

// row writes one tab-separated row, making each cell safe for a table.
func row(tw io.Writer, cells ...string) {
	for i, c := range cells {
		cells[i] = cell(c)
	}
	fmt.Fprintln(tw, strings.Join(cells, "\t"))
}

// cell replaces control characters (tabs, newlines) with spaces and an empty
// value with "-".
func cell(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	if s == "" {
		return "-"
	}
	return s
}

// formatTime renders a timestamp in RFC3339 UTC, or "-" when unset.
func formatTime(ts *timestamppb.Timestamp) string {
	if ts == nil {
		return "-"
	}
	return ts.AsTime().UTC().Format(time.RFC3339)
}

// humanDuration renders d rounded to a precision that suits its size:
// 850µs, 250ms, 1.23s, 5m3s, 2h5m.
func humanDuration(d time.Duration) string {
	neg := d < 0
	if neg {
		d = -d
	}
	switch {
	case d < time.Microsecond:
	case d < time.Millisecond:
		d = d.Round(time.Microsecond)
	case d < time.Second:
		d = d.Round(time.Millisecond)
	case d < time.Minute:
		d = d.Round(10 * time.Millisecond)
	case d < time.Hour:
		d = d.Round(time.Second)
	default:
		d = d.Round(time.Minute)
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	if neg {
		s = "-" + s
	}
	return s
}

// formatDuration renders a proto duration, or "-" when unset.
func formatDuration(d *durationpb.Duration) string {
	if d == nil {
		return "-"
	}
	return humanDuration(d.AsDuration())
}

// runDuration is how long a run took, or "-" if it has not ended.
func runDuration(started, ended *timestamppb.Timestamp) string {
	if started == nil || ended == nil {
		return "-"
	}
	return humanDuration(ended.AsTime().Sub(started.AsTime()))
}

// trimMessage folds a message onto one line and cuts it to at most width
// runes, marking a cut with "...".
func trimMessage(s string, width int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= width {
		return s
	}
	return string(r[:width-3]) + "..."
}

// Enum names without their prefixes, as tables show them.

func stateName(s taskdv1.TaskState) string { return strings.TrimPrefix(s.String(), "TASK_STATE_") }
func outcomeName(o taskdv1.Outcome) string { return strings.TrimPrefix(o.String(), "OUTCOME_") }
func nodeStateName(s taskdv1.NodeState) string {
	return strings.TrimPrefix(s.String(), "NODE_STATE_")
}
func scopeName(s taskdv1.Scope) string { return strings.TrimPrefix(s.String(), "SCOPE_") }
func misfireName(m taskdv1.MisfirePolicy) string {
	if m == taskdv1.MisfirePolicy_MISFIRE_POLICY_UNSPECIFIED {
		return "default"
	}
	return strings.TrimPrefix(m.String(), "MISFIRE_POLICY_")
}

// yesNo renders a bool for a human.
func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// describeTrigger renders one trigger for a human: its name first if it
// has one, its misfire policy last if it has its own.
func describeTrigger(t *taskdv1.Trigger) string {
	s := describeTriggerKind(t)
	if t.GetName() != "" {
		s = t.GetName() + ": " + s
	}
	if t.GetMisfire() != taskdv1.MisfirePolicy_MISFIRE_POLICY_UNSPECIFIED {
		s += ", misfire " + misfireName(t.GetMisfire())
	}
	return s
}

// describeTriggerKind renders a trigger's rule.
func describeTriggerKind(t *taskdv1.Trigger) string {
	switch k := t.GetKind().(type) {
	case *taskdv1.Trigger_Once:
		switch {
		case k.Once.GetAt() != nil:
			return "once at " + formatTime(k.Once.GetAt())
		case k.Once.GetDelay() != nil:
			return "once after " + formatDuration(k.Once.GetDelay())
		}
		return "once now"
	case *taskdv1.Trigger_Periodic:
		p := k.Periodic
		s := "every " + formatDuration(p.GetInterval())
		if p.GetStart() != nil {
			s += " from " + formatTime(p.GetStart())
		}
		if p.GetCount() > 0 {
			s += fmt.Sprintf(", %d times", p.GetCount())
		}
		if p.GetEnd() != nil {
			s += ", until " + formatTime(p.GetEnd())
		}
		return s
	case *taskdv1.Trigger_Cron:
		c := k.Cron
		zone := c.GetTimeZone()
		if zone == "" {
			zone = "UTC"
		}
		s := fmt.Sprintf("cron %q in %s", c.GetExpression(), zone)
		if c.GetStart() != nil {
			s += ", from " + formatTime(c.GetStart())
		}
		if c.GetEnd() != nil {
			s += ", until " + formatTime(c.GetEnd())
		}
		return s
	case *taskdv1.Trigger_OnStartup:
		return "on start-up of the node"
	}
	return "unknown trigger"
}

// describeRunSummary renders a task's last run on one line.
func describeRunSummary(r *taskdv1.RunSummary) string {
	if r == nil {
		return "-"
	}
	s := fmt.Sprintf("#%d %s on %s at %s (%s)", r.GetRunNumber(), outcomeName(r.GetOutcome()),
		cell(r.GetNode()), formatTime(r.GetStartedAt()), runDuration(r.GetStartedAt(), r.GetEndedAt()))
	if m := trimMessage(r.GetMessage(), messageWidth); m != "" {
		s += ": " + m
	}
	return s
}

// describeWaiting says what a task's due run waits for, and since when:
// the node's reason when it gave one.
func describeWaiting(t *taskdv1.Task) string {
	if r := t.GetWaitingReason(); r != "" {
		return r
	}
	what := t.GetWaiting()
	if what == "worker" {
		what = fmt.Sprintf("for a worker of kind %q", t.GetSpec().GetKind())
	}
	return what + " since " + formatTime(t.GetWaitingSince())
}

// writeTaskDetail writes one task as aligned "Field: value" lines.
func writeTaskDetail(w io.Writer, t *taskdv1.Task) error {
	tw := newTable(w)
	spec := t.GetSpec()
	field := func(name, value string) { row(tw, name+":", value) }
	field("ID", t.GetId())
	field("Identity", spec.GetIdentity())
	field("Kind", spec.GetKind())
	field("Scope", scopeName(spec.GetScope()))
	field("State", stateName(t.GetState()))
	field("Durable", yesNo(!spec.GetNonDurable()))
	if len(spec.GetTriggers()) == 0 {
		field("Trigger", "")
	}
	for _, tr := range spec.GetTriggers() {
		field("Trigger", describeTrigger(tr))
	}
	field("Next fire", formatTime(t.GetNextFireTime()))
	for _, ts := range t.GetNextFireTimes() {
		field("Coming fire", formatTime(ts))
	}
	paused := yesNo(t.GetPaused())
	if len(t.GetPausedBy()) > 0 {
		paused += " (by " + strings.Join(t.GetPausedBy(), ", ") + ")"
	}
	field("Paused", paused)
	if t.GetWaiting() != "" {
		// Its due run waits, holding nothing, for what it names.
		field("Waiting", describeWaiting(t))
	}
	field("Misfires", strconv.FormatInt(t.GetMisfires(), 10))
	field("Created", formatTime(t.GetCreatedAt()))
	field("Finished", formatTime(t.GetFinishedAt()))
	field("Runs", strconv.FormatInt(t.GetRunCount(), 10))
	field("Attempt", strconv.Itoa(int(t.GetAttempt())))
	field("Last run", describeRunSummary(t.GetLastRun()))
	field("Priority", strconv.Itoa(int(spec.GetPriority())))
	// The values in force, the node's defaults marked (defaults.go).
	set := specdefaults.Of(spec)
	field("Max attempts", strconv.Itoa(int(set.MaxAttempts))+defaultMark(set.MaxAttemptsDefault))
	field("Timeout", humanDuration(set.Timeout)+defaultMark(set.TimeoutDefault))
	field("Backoff", describeBackoff(set))
	field("Misfire", describeMisfire(spec))
	field("Calendars", strings.Join(spec.GetCalendars(), ","))
	field("Recovery", yesNo(spec.RequestsRecovery == nil || spec.GetRequestsRecovery()))
	field("Allow overlap", yesNo(spec.GetAllowOverlap()))
	field("Labels", sortedLabels(spec.GetLabels()))
	field("Idempotency key", spec.GetIdempotencyKey())
	field("Payload", fmt.Sprintf("%d bytes", len(spec.GetPayload())))
	field("Data", fmt.Sprintf("%d bytes", len(spec.GetData())))
	field("Revision", strconv.FormatInt(t.GetRevision(), 10))
	return tw.Flush()
}

// writeTasksTable writes tasks as a table: id, kind, state, next fire, runs,
// last outcome; withIdentity adds the identity after the id (for a listing
// across identities).
func writeTasksTable(w io.Writer, tasks []*taskdv1.Task, withIdentity bool) error {
	tw := newTable(w)
	head := []string{"ID", "KIND", "STATE", "NEXT FIRE", "RUNS", "LAST OUTCOME"}
	if withIdentity {
		head = slices.Insert(head, 1, "IDENTITY")
	}
	row(tw, head...)
	for _, t := range tasks {
		last := "-"
		if t.GetLastRun() != nil {
			last = outcomeName(t.GetLastRun().GetOutcome())
		}
		state := stateName(t.GetState())
		if t.GetWaiting() != "" {
			// Its due run waits (holding nothing); taskctl get says why.
			state += "/WAITING"
		}
		cells := []string{t.GetId(), t.GetSpec().GetKind(), state, formatTime(t.GetNextFireTime()),
			strconv.FormatInt(t.GetRunCount(), 10), last}
		if withIdentity {
			cells = slices.Insert(cells, 1, t.GetSpec().GetIdentity())
		}
		row(tw, cells...)
	}
	return tw.Flush()
}

// runTrigger names the trigger that fired a run: its name (with
// "(removed)" when the task no longer has it), else (a run recorded before
// triggers had names) its index in the task's triggers, "manual" for a
// RunTaskNow run.
func runTrigger(r *taskdv1.Run) string {
	switch {
	case r.GetManual() || r.GetTrigger() < 0:
		return "manual"
	case r.GetTriggerName() != "" && r.GetTriggerRemoved():
		return r.GetTriggerName() + " (removed)"
	case r.GetTriggerName() != "":
		return r.GetTriggerName()
	}
	return strconv.Itoa(int(r.GetTrigger()))
}

// writeRunsTable writes runs as a table: run number, attempt, trigger,
// outcome, node, started, duration, fence, message (cut to 60 characters).
func writeRunsTable(w io.Writer, runs []*taskdv1.Run) error {
	tw := newTable(w)
	row(tw, "RUN", "ATTEMPT", "TRIGGER", "OUTCOME", "NODE", "STARTED", "DURATION", "FENCE", "MESSAGE")
	for _, r := range runs {
		row(tw, strconv.FormatInt(r.GetRunNumber(), 10), strconv.Itoa(int(r.GetAttempt())), runTrigger(r),
			outcomeName(r.GetOutcome()), r.GetNode(), formatTime(r.GetStartedAt()),
			runDuration(r.GetStartedAt(), r.GetEndedAt()), r.GetFence(), trimMessage(r.GetMessage(), messageWidth))
	}
	return tw.Flush()
}

// writeNodesTable writes nodes as a table: name (with "*" for the
// placement leader), state, address, incarnation, dispatch start, lease
// time left, identities owned, kinds (its handlers' and its workers').
func writeNodesTable(w io.Writer, nodes []*taskdv1.Node) error {
	tw := newTable(w)
	row(tw, "NAME", "STATE", "ADDRESS", "INCARNATION", "DISPATCH START", "LEASE", "IDENTITIES", "KINDS")
	for _, n := range nodes {
		name, lease, kinds := n.GetName(), "-", "-"
		if n.GetLeader() {
			name += "*"
		}
		if n.GetLeaseRemaining() != nil {
			lease = n.GetLeaseRemaining().AsDuration().String()
		}
		if len(n.GetKinds()) > 0 {
			kinds = strings.Join(n.GetKinds(), ",")
		}
		row(tw, name, nodeStateName(n.GetState()), n.GetAddress(), n.GetIncarnation(),
			formatTime(n.GetDispatchStart()), lease, strconv.FormatInt(n.GetIdentitiesOwned(), 10), kinds)
	}
	return tw.Flush()
}

// writeIdentityTable writes an identity as a one-row table: identity,
// mapped, node, epoch, tasks.
func writeIdentityTable(w io.Writer, id *taskdv1.Identity) error {
	tw := newTable(w)
	row(tw, "IDENTITY", "MAPPED", "NODE", "EPOCH", "TASKS", "STATUS")
	status := "-"
	if id.GetStatusNode() != "" {
		status = "inactive"
		if id.GetActive() {
			status = "active"
		}
		status += "@" + id.GetStatusNode()
	}
	row(tw, id.GetIdentity(), yesNo(id.GetMapped()), id.GetNode(), strconv.FormatInt(id.GetEpoch(), 10),
		strconv.FormatInt(id.GetTaskCount(), 10), status)
	return tw.Flush()
}

// writePausesTable writes identity and kind pauses as a table: what is
// paused (identity or kind), its name, since when.
func writePausesTable(w io.Writer, pauses []*taskdv1.Pause) error {
	tw := newTable(w)
	row(tw, "PAUSED", "NAME", "SINCE")
	for _, p := range pauses {
		what, name := "identity", p.GetIdentity()
		if p.GetKind() != "" {
			what, name = "kind", p.GetKind()
		}
		row(tw, what, name, formatTime(p.GetSince()))
	}
	return tw.Flush()
}

// writeFireTimes writes one line per fire time: the time in its trigger's
// zone, then in UTC, both RFC 3339, to the second or, for a time between
// seconds (a periodic trigger started from now), to the millisecond
// (fireTimeLayout); withTrigger adds the index of the trigger that makes
// it. The exact instants are in the JSON output.
func writeFireTimes(w io.Writer, fts []*taskdv1.PreviewFireTime, withTrigger bool) error {
	for _, ft := range fts {
		at := ft.GetAt().AsTime()
		local := at.UTC()
		// The server renders the local time to the second; its offset
		// gives the zone to render the exact instant in.
		if l, err := time.Parse(time.RFC3339, ft.GetLocal()); err == nil {
			local = at.In(l.Location())
		}
		layout := fireTimeLayout(at)
		line := local.Format(layout) + "  " + at.UTC().Format(layout)
		if withTrigger {
			line += fmt.Sprintf("  trigger %d", ft.GetTrigger())
		}
		if _, err := fmt.Fprintln(w, line); err != nil {
			return err
		}
	}
	return nil
}

// fireTimeLayout is the layout a fire time is shown in: RFC 3339 to the
// second when it falls on one, else with milliseconds (always three
// digits, so the times of one trigger line up); the nanoseconds of a
// start taken from the clock say nothing to a reader.
func fireTimeLayout(at time.Time) string {
	if at.Nanosecond() == 0 {
		return time.RFC3339
	}
	return "2006-01-02T15:04:05.000Z07:00"
}
