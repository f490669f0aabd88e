package render

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/taskd/taskd/internal/specdefaults"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// This file renders tasks and their runs.

// describeTrigger renders one trigger for a human: its name first if it
// has one, its misfire policy last if it has its own.
func describeTrigger(t *taskdv1.Trigger) string {
	s := describeTriggerKind(t)
	if t.GetJitter().AsDuration() > 0 {
		s += ", jitter up to " + formatDuration(t.GetJitter())
	}
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
			return "once at " + Time(k.Once.GetAt())
		case k.Once.GetDelay() != nil:
			return "once after " + formatDuration(k.Once.GetDelay())
		}
		return "once now"
	case *taskdv1.Trigger_Periodic:
		p := k.Periodic
		s := "every " + formatDuration(p.GetInterval())
		if p.GetStart() != nil {
			s += " from " + Time(p.GetStart())
		}
		if p.GetCount() > 0 {
			s += fmt.Sprintf(", %d times", p.GetCount())
		}
		if p.GetEnd() != nil {
			s += ", until " + Time(p.GetEnd())
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
			s += ", from " + Time(c.GetStart())
		}
		if c.GetEnd() != nil {
			s += ", until " + Time(c.GetEnd())
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
		cell(r.GetNode()), Time(r.GetStartedAt()), runDuration(r.GetStartedAt(), r.GetEndedAt()))
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
	return what + " since " + Time(t.GetWaitingSince())
}

// WriteTaskDetail writes one task as aligned "Field: value" lines.
func WriteTaskDetail(w io.Writer, t *taskdv1.Task) error {
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
	field("Next fire", Time(t.GetNextFireTime()))
	for _, ts := range t.GetNextFireTimes() {
		field("Coming fire", Time(ts))
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
	field("Created", Time(t.GetCreatedAt()))
	field("Finished", Time(t.GetFinishedAt()))
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

// sortedLabels renders labels as k=v pairs sorted by key.
func sortedLabels(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m[k]
	}
	return strings.Join(parts, ",")
}

// WriteTasksTable writes tasks as a table: id, kind, state, next fire, runs,
// last outcome; withIdentity adds the identity after the id (for a listing
// across identities).
func WriteTasksTable(w io.Writer, tasks []*taskdv1.Task, withIdentity bool) error {
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
		cells := []string{t.GetId(), t.GetSpec().GetKind(), state, Time(t.GetNextFireTime()),
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

// WriteRunsTable writes runs as a table: run number, attempt, trigger,
// outcome, node, started, duration, fence, message (cut to 60 characters).
func WriteRunsTable(w io.Writer, runs []*taskdv1.Run) error {
	tw := newTable(w)
	row(tw, "RUN", "ATTEMPT", "TRIGGER", "OUTCOME", "NODE", "STARTED", "DURATION", "FENCE", "MESSAGE")
	for _, r := range runs {
		row(tw, strconv.FormatInt(r.GetRunNumber(), 10), strconv.Itoa(int(r.GetAttempt())), runTrigger(r),
			outcomeName(r.GetOutcome()), r.GetNode(), Time(r.GetStartedAt()),
			runDuration(r.GetStartedAt(), r.GetEndedAt()), r.GetFence(), trimMessage(r.GetMessage(), messageWidth))
	}
	return tw.Flush()
}
