package taskservice

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/taskd/taskd/internal/specdefaults"
	"github.com/taskd/taskd/pkg/identity"
	"github.com/taskd/taskd/pkg/schedule"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// InvalidArgumentError names the request field that is wrong.
type InvalidArgumentError struct {
	Field  string
	Reason string
	// refersTo is the path of another field of the request that Reason
	// ends with (the trigger whose name a trigger repeats), so that
	// SpecError.In names it under the spec's path as it does Field.
	refersTo string
}

func (e *InvalidArgumentError) Error() string { return e.Field + ": " + e.Reason }

// UnimplementedError names a field whose value asks for a feature that
// this release does not have yet.
type UnimplementedError struct {
	Field  string
	Reason string
}

func (e *UnimplementedError) Error() string { return e.Field + ": " + e.Reason }

func invalid(field, format string, args ...any) error {
	return &InvalidArgumentError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// subfield is the path of the field name inside the field parent: "" is
// the request itself, or, in Schedule, the spec (whose fields SpecError
// names relative to it).
func subfield(parent, name string) string {
	switch {
	case parent == "":
		return name
	case name == "":
		return parent
	}
	return parent + "." + name
}

// validateSpec checks one TaskSpec; field is its path in the request, e.g.
// "spec" ("" names the fields relative to the spec, as Schedule does).
// knownKind reports whether some node handles a kind.
func (n *Node) validateSpec(field string, s *taskdv1.TaskSpec, knownKind func(string) bool) error {
	if s == nil {
		return invalid(field, "is required")
	}
	if err := identity.Validate(s.Identity); err != nil {
		return invalid(subfield(field, "identity"), "%s", err.Error())
	}
	if err := validateKind(subfield(field, "kind"), s.Kind); err != nil {
		return err
	}
	switch s.Scope {
	case taskdv1.Scope_SCOPE_IDENTITY:
	case taskdv1.Scope_SCOPE_EVERY_NODE:
		if s.NonDurable {
			return invalid(subfield(field, "non_durable"), "a task of scope EVERY_NODE is stored once for all nodes; it cannot be non-durable")
		}
	case taskdv1.Scope_SCOPE_UNSPECIFIED:
		return invalid(subfield(field, "scope"), "is required: SCOPE_IDENTITY (once in the cluster) or SCOPE_EVERY_NODE (on every node)")
	default:
		return invalid(subfield(field, "scope"), "unknown value %d", s.Scope)
	}
	if len(s.Payload) > n.cfg.MaxPayload {
		return invalid(subfield(field, "payload"), "is %d bytes, the limit is %d", len(s.Payload), n.cfg.MaxPayload)
	}
	if len(s.Data) > n.cfg.MaxPayload {
		return invalid(subfield(field, "data"), "is %d bytes, the limit is %d", len(s.Data), n.cfg.MaxPayload)
	}
	if len(s.Triggers) == 0 {
		// Schedule gave a spec without triggers the default one
		// (withDefaultTrigger): this is an update, which replaces them all.
		return invalid(subfield(field, "triggers"), "needs at least one trigger: an update replaces the task's triggers (send its own to keep them)")
	}
	if len(s.Triggers) > MaxTriggers {
		return invalid(subfield(field, "triggers"), "has %d triggers, the limit is %d", len(s.Triggers), MaxTriggers)
	}
	if err := validateTriggers(subfield(field, "triggers"), s.Triggers); err != nil {
		return err
	}
	if _, ok := taskdv1.MisfirePolicy_name[int32(s.Misfire)]; !ok {
		return invalid(subfield(field, "misfire"), "unknown value %d", s.Misfire)
	}
	if s.MaxAttempts < 0 || s.MaxAttempts > MaxAttemptsLimit {
		return invalid(subfield(field, "max_attempts"), "is %d, must be 0 (default %d) to %d", s.MaxAttempts, specdefaults.MaxAttempts, MaxAttemptsLimit)
	}
	if b := s.Backoff; b != nil {
		if err := checkDuration(subfield(field, "backoff.initial"), b.Initial, 0, 24*time.Hour); err != nil {
			return err
		}
		if err := checkDuration(subfield(field, "backoff.max"), b.Max, 0, 7*24*time.Hour); err != nil {
			return err
		}
		if b.Initial != nil && b.Max != nil && b.Max.AsDuration() > 0 && b.Max.AsDuration() < b.Initial.AsDuration() {
			return invalid(subfield(field, "backoff.max"), "is shorter than backoff.initial")
		}
	}
	if err := checkDuration(subfield(field, "timeout"), s.Timeout, 0, 7*24*time.Hour); err != nil {
		return err
	}
	if s.AllowOverlap && (s.NonDurable || s.Scope != taskdv1.Scope_SCOPE_IDENTITY) {
		return invalid(subfield(field, "allow_overlap"), "is for durable tasks of scope IDENTITY (an overlapping run is stored as a task of its identity)")
	}
	if err := n.validateCalendarRefs(subfield(field, "calendars"), s.Calendars); err != nil {
		return err
	}
	if err := checkLabels(subfield(field, "labels"), s.Labels); err != nil {
		return err
	}
	if err := checkText(subfield(field, "idempotency_key"), s.IdempotencyKey, MaxIdempotencyKeyLen, true); err != nil {
		return err
	}
	if size := proto.Size(s); size > MaxTaskBytes {
		return invalid(field, "is %d bytes encoded, the limit is %d (payload, data, labels and triggers together)", size, MaxTaskBytes)
	}
	if !s.NonDurable && !knownKind(s.Kind) {
		return invalid(subfield(field, "kind"), "no node of the cluster handles kind %q", s.Kind)
	}
	if s.NonDurable && s.IdempotencyKey != "" {
		return invalid(subfield(field, "idempotency_key"), "is not supported for a non-durable task (nothing is stored to remember it)")
	}
	if s.NonDurable && n.cfg.Handlers[s.Kind] == nil {
		return invalid(subfield(field, "kind"), "this node has no handler for kind %q (a non-durable task runs on the node that accepts it)", s.Kind)
	}
	return nil
}

// ValidateKind checks a kind name: 1-MaxKindLen bytes of UTF-8 without
// control or bidirectional formatting characters. The error names field.
func ValidateKind(field, kind string) error { return validateKind(field, kind) }

func validateKind(field, kind string) error { return checkText(field, kind, MaxKindLen, false) }

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
		return invalid(field, "is %s, must be between %s and %s", v, min, max)
	}
	return nil
}

// validateTriggers checks a task's triggers (also those of a preview).
func validateTriggers(field string, ts []*taskdv1.Trigger) error {
	names := map[string]int{}
	for i, t := range ts {
		f := fmt.Sprintf("%s[%d]", field, i)
		if err := validateTrigger(f, t); err != nil {
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

func validateTrigger(field string, t *taskdv1.Trigger) error {
	if t == nil {
		return invalid(field, "is required")
	}
	if _, ok := taskdv1.MisfirePolicy_name[int32(t.Misfire)]; !ok {
		return invalid(field+".misfire", "unknown value %d", t.Misfire)
	}
	if err := checkText(field+".name", t.Name, MaxTriggerNameLen, true); err != nil {
		return err
	}
	switch k := t.GetKind().(type) {
	case *taskdv1.Trigger_Once:
		o := k.Once
		if o.At != nil && o.Delay != nil {
			return invalid(field+".once", "set at or delay, not both")
		}
		if err := checkInstant(field+".once.at", o.At); err != nil {
			return err
		}
		if o.Delay != nil {
			if err := o.Delay.CheckValid(); err != nil {
				return invalid(field+".once.delay", "%s", err.Error())
			}
		}
		return checkDuration(field+".once.delay", o.Delay, 0, maxHorizon)
	case *taskdv1.Trigger_Periodic:
		p := k.Periodic
		if p.Interval == nil {
			return invalid(field+".periodic.interval", "is required")
		}
		if err := checkDuration(field+".periodic.interval", p.Interval, time.Millisecond, maxHorizon); err != nil {
			return err
		}
		if p.Count < 0 {
			return invalid(field+".periodic.count", "is %d, must not be negative", p.Count)
		}
		return checkWindow(field+".periodic", p.Start, p.End)
	case *taskdv1.Trigger_Cron:
		c := k.Cron
		if c.Expression == "" {
			return invalid(field+".cron.expression", "is required, e.g. \"0 30 2 ? * MON-FRI\" (docs/cron.md)")
		}
		if _, err := schedule.CronExpression(c.Expression, c.TimeZone); err != nil {
			var ze *schedule.ZoneError
			if errors.As(err, &ze) {
				return invalid(field+".cron.time_zone", "%s", err.Error())
			}
			return invalid(field+".cron.expression", "%s", err.Error())
		}
		return checkWindow(field+".cron", c.Start, c.End)
	case *taskdv1.Trigger_OnStartup:
		return nil
	case nil:
		return invalid(field, "names no trigger kind (once, periodic, cron or on_startup)")
	}
	return invalid(field, "unknown trigger kind")
}

// checkWindow checks a trigger's optional start and end.
func checkWindow(field string, start, end *timestamppb.Timestamp) error {
	if err := checkInstant(field+".start", start); err != nil {
		return err
	}
	if end != nil {
		if err := checkInstant(field+".end", end); err != nil {
			return err
		}
		if start != nil && end.AsTime().Before(start.AsTime()) {
			return invalid(field+".end", "is before %s.start", field[strings.LastIndex(field, ".")+1:])
		}
	}
	return nil
}
