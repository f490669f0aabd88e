package taskspec

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/taskd/taskd/internal/specdefaults"
	"github.com/taskd/taskd/pkg/calendar"
	"github.com/taskd/taskd/pkg/identity"
	"github.com/taskd/taskd/pkg/schedule"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// NodeView is what the check of a spec needs to know of the node that
// makes it and of its cluster.
type NodeView struct {
	// MaxPayload bounds a spec's payload and its data (--max-payload).
	MaxPayload int
	// KindServed reports whether some node of the cluster handles kind
	// (a durable task's kind must be).
	KindServed func(kind string) bool
	// HandlesKind reports whether this node has a handler for kind (a
	// non-durable task runs on the node that accepts it).
	HandlesKind func(kind string) bool
	// CalendarStored reports whether a calendar of that name is stored,
	// as the node knows (the schedule Txn also compares that each still
	// exists).
	CalendarStored func(name string) bool
}

// CheckTask checks one TaskSpec; field is its path in the request, e.g.
// "spec" ("" names the fields relative to the spec, as Schedule does).
func CheckTask(field string, s *taskdv1.TaskSpec, node NodeView) error {
	if s == nil {
		return Invalid(field, "is required")
	}
	if err := identity.Validate(s.Identity); err != nil {
		return Invalid(Subfield(field, "identity"), "%s", err.Error())
	}
	if err := CheckKind(Subfield(field, "kind"), s.Kind); err != nil {
		return err
	}
	switch s.Scope {
	case taskdv1.Scope_SCOPE_IDENTITY:
	case taskdv1.Scope_SCOPE_EVERY_NODE:
		if s.NonDurable {
			return Invalid(Subfield(field, "non_durable"), "a task of scope EVERY_NODE is stored once for all nodes; it cannot be non-durable")
		}
	case taskdv1.Scope_SCOPE_UNSPECIFIED:
		return Invalid(Subfield(field, "scope"), "is required: SCOPE_IDENTITY (once in the cluster) or SCOPE_EVERY_NODE (on every node)")
	default:
		return Invalid(Subfield(field, "scope"), "unknown value %d", s.Scope)
	}
	if len(s.Payload) > node.MaxPayload {
		return Invalid(Subfield(field, "payload"), "is %d bytes, the limit is %d", len(s.Payload), node.MaxPayload)
	}
	if len(s.Data) > node.MaxPayload {
		return Invalid(Subfield(field, "data"), "is %d bytes, the limit is %d", len(s.Data), node.MaxPayload)
	}
	if len(s.Triggers) == 0 {
		// Schedule gave a spec without triggers the default one
		// (WithDefaultTrigger): this is an update, which replaces them all.
		return Invalid(Subfield(field, "triggers"), "needs at least one trigger: an update replaces the task's triggers (send its own to keep them)")
	}
	if len(s.Triggers) > MaxTriggers {
		return Invalid(Subfield(field, "triggers"), "has %d triggers, the limit is %d", len(s.Triggers), MaxTriggers)
	}
	if err := CheckTriggers(Subfield(field, "triggers"), s.Triggers); err != nil {
		return err
	}
	if _, ok := taskdv1.MisfirePolicy_name[int32(s.Misfire)]; !ok {
		return Invalid(Subfield(field, "misfire"), "unknown value %d", s.Misfire)
	}
	if s.MaxAttempts < 0 || s.MaxAttempts > MaxAttemptsLimit {
		return Invalid(Subfield(field, "max_attempts"), "is %d, must be 0 (default %d) to %d", s.MaxAttempts, specdefaults.MaxAttempts, MaxAttemptsLimit)
	}
	if b := s.Backoff; b != nil {
		if err := checkDuration(Subfield(field, "backoff.initial"), b.Initial, 0, 24*time.Hour); err != nil {
			return err
		}
		if err := checkDuration(Subfield(field, "backoff.max"), b.Max, 0, 7*24*time.Hour); err != nil {
			return err
		}
		if b.Initial != nil && b.Max != nil && b.Max.AsDuration() > 0 && b.Max.AsDuration() < b.Initial.AsDuration() {
			return Invalid(Subfield(field, "backoff.max"), "is shorter than backoff.initial")
		}
	}
	if err := checkDuration(Subfield(field, "timeout"), s.Timeout, 0, 7*24*time.Hour); err != nil {
		return err
	}
	if s.AllowOverlap && (s.NonDurable || s.Scope != taskdv1.Scope_SCOPE_IDENTITY) {
		return Invalid(Subfield(field, "allow_overlap"), "is for durable tasks of scope IDENTITY (an overlapping run is stored as a task of its identity)")
	}
	if err := CheckCalendarRefs(Subfield(field, "calendars"), s.Calendars, node.CalendarStored); err != nil {
		return err
	}
	if err := CheckLabels(Subfield(field, "labels"), s.Labels); err != nil {
		return err
	}
	if err := CheckText(Subfield(field, "idempotency_key"), s.IdempotencyKey, MaxIdempotencyKeyLen, true); err != nil {
		return err
	}
	if size := proto.Size(s); size > MaxTaskBytes {
		return Invalid(field, "is %d bytes encoded, the limit is %d (payload, data, labels and triggers together)", size, MaxTaskBytes)
	}
	if !s.NonDurable && !node.KindServed(s.Kind) {
		return Invalid(Subfield(field, "kind"), "no node of the cluster handles kind %q", s.Kind)
	}
	if s.NonDurable && s.IdempotencyKey != "" {
		return Invalid(Subfield(field, "idempotency_key"), "is not supported for a non-durable task (nothing is stored to remember it)")
	}
	if s.NonDurable && !node.HandlesKind(s.Kind) {
		return Invalid(Subfield(field, "kind"), "this node has no handler for kind %q (a non-durable task runs on the node that accepts it)", s.Kind)
	}
	return nil
}

// CheckCalendarRefs checks the calendars a task lists: at most
// MaxCalendarsPerTask, no repeats, each stored (stored says which are).
func CheckCalendarRefs(field string, names []string, stored func(name string) bool) error {
	if len(names) > MaxCalendarsPerTask {
		return Invalid(field, "lists %d calendars, the limit is %d", len(names), MaxCalendarsPerTask)
	}
	seen := map[string]bool{}
	for i, name := range names {
		f := fmt.Sprintf("%s[%d]", field, i)
		if err := calendar.ValidateName(name); err != nil {
			return Invalid(f, "%s", err.Error())
		}
		if seen[name] {
			return Invalid(f, "calendar %q is listed twice", name)
		}
		seen[name] = true
		if !stored(name) {
			return Invalid(f, "no calendar %q (create it first: CreateCalendar)", name)
		}
	}
	return nil
}

type durationLike interface{ AsDuration() time.Duration }

func checkDuration[D interface {
	durationLike
	comparable
}](field string, d D, min, max time.Duration) error {
	var zero D
	if d == zero {
		return nil
	}
	v := d.AsDuration()
	if v < min || v > max {
		return Invalid(field, "is %s, must be between %s and %s", v, min, max)
	}
	return nil
}

// CheckTriggers checks a task's triggers (also those of a preview or an
// edit): each trigger, and no name twice.
func CheckTriggers(field string, ts []*taskdv1.Trigger) error {
	names := map[string]int{}
	for i, t := range ts {
		f := fmt.Sprintf("%s[%d]", field, i)
		if err := checkTrigger(f, t); err != nil {
			return err
		}
		if t.Name == "" {
			continue
		}
		if j, dup := names[t.Name]; dup {
			first := fmt.Sprintf("%s[%d]", field, j)
			return &InvalidArgumentError{Field: f + ".name", Reason: fmt.Sprintf("%q is also the name of %s", t.Name, first), refersTo: first}
		}
		names[t.Name] = i
	}
	return nil
}

func checkTrigger(field string, t *taskdv1.Trigger) error {
	if err := checkTriggerKind(field, t); err != nil {
		return err
	}
	return checkJitter(field, t)
}

// checkJitter checks a trigger's jitter: not negative, at most MaxJitter,
// less than a periodic trigger's interval (so a delayed fire time never
// passes the next one), and for periodic and cron triggers only. A cron
// trigger's fire times may be closer than its jitter: each delay is then
// kept below the gap to the next fire time (internal/record/jitter.go).
func checkJitter(field string, t *taskdv1.Trigger) error {
	if t.Jitter == nil {
		return nil
	}
	if err := t.Jitter.CheckValid(); err != nil {
		return Invalid(field+".jitter", "%s", err.Error())
	}
	j := t.Jitter.AsDuration()
	if j < 0 || j > MaxJitter {
		return Invalid(field+".jitter", "is %s, must be between 0s and %s", j, MaxJitter)
	}
	switch k := t.GetKind().(type) {
	case *taskdv1.Trigger_Periodic:
		if iv := k.Periodic.GetInterval().AsDuration(); j >= iv && j > 0 {
			return Invalid(field+".jitter", "is %s, must be less than the interval %s", j, iv)
		}
	case *taskdv1.Trigger_Cron:
	default:
		if j > 0 {
			return Invalid(field+".jitter", "only periodic and cron triggers take a jitter")
		}
	}
	return nil
}

func checkTriggerKind(field string, t *taskdv1.Trigger) error {
	if t == nil {
		return Invalid(field, "is required")
	}
	if _, ok := taskdv1.MisfirePolicy_name[int32(t.Misfire)]; !ok {
		return Invalid(field+".misfire", "unknown value %d", t.Misfire)
	}
	if err := CheckText(field+".name", t.Name, MaxTriggerNameLen, true); err != nil {
		return err
	}
	switch k := t.GetKind().(type) {
	case *taskdv1.Trigger_Once:
		o := k.Once
		if o.At != nil && o.Delay != nil {
			return Invalid(field+".once", "set at or delay, not both")
		}
		if err := CheckInstant(field+".once.at", o.At); err != nil {
			return err
		}
		if o.Delay != nil {
			if err := o.Delay.CheckValid(); err != nil {
				return Invalid(field+".once.delay", "%s", err.Error())
			}
		}
		return checkDuration(field+".once.delay", o.Delay, 0, maxHorizon)
	case *taskdv1.Trigger_Periodic:
		p := k.Periodic
		if p.Interval == nil {
			return Invalid(field+".periodic.interval", "is required")
		}
		if err := checkDuration(field+".periodic.interval", p.Interval, time.Millisecond, maxHorizon); err != nil {
			return err
		}
		if p.Count < 0 {
			return Invalid(field+".periodic.count", "is %d, must not be negative", p.Count)
		}
		return checkWindow(field+".periodic", p.Start, p.End)
	case *taskdv1.Trigger_Cron:
		c := k.Cron
		if c.Expression == "" {
			return Invalid(field+".cron.expression", "is required, e.g. \"0 30 2 ? * MON-FRI\" (docs/cron.md)")
		}
		if _, err := schedule.CronExpression(c.Expression, c.TimeZone); err != nil {
			var ze *schedule.ZoneError
			if errors.As(err, &ze) {
				return Invalid(field+".cron.time_zone", "%s", err.Error())
			}
			return Invalid(field+".cron.expression", "%s", err.Error())
		}
		return checkWindow(field+".cron", c.Start, c.End)
	case *taskdv1.Trigger_OnStartup:
		return nil
	case nil:
		return Invalid(field, "names no trigger kind (once, periodic, cron or on_startup)")
	}
	return Invalid(field, "unknown trigger kind")
}

// checkWindow checks a trigger's optional start and end.
func checkWindow(field string, start, end *timestamppb.Timestamp) error {
	if err := CheckInstant(field+".start", start); err != nil {
		return err
	}
	if end != nil {
		if err := CheckInstant(field+".end", end); err != nil {
			return err
		}
		if start != nil && end.AsTime().Before(start.AsTime()) {
			return Invalid(field+".end", "is before %s.start", field[strings.LastIndex(field, ".")+1:])
		}
	}
	return nil
}
