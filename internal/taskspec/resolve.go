package taskspec

import (
	"fmt"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// This file is what a spec's triggers mean when a task is scheduled: the
// default trigger of a spec without one, and the times the server fills in
// (ResolveTriggers). Both live here only: every way of scheduling (the
// gRPC ScheduleTask and ScheduleTasks, the library's Schedule, and through
// them the Go client and taskctl) and UpdateTask and PreviewTriggers come
// through these functions, so no client carries a copy of a default.

// WithDefaultTrigger returns specs with each spec that has no trigger
// replaced by a copy that has the default one: a once trigger without a
// time or delay, due when the task is stored (contract §4.1). The caller's
// specs are not changed.
func WithDefaultTrigger(specs []*taskdv1.TaskSpec) []*taskdv1.TaskSpec {
	out, copied := specs, false
	for i, s := range specs {
		if s == nil || len(s.Triggers) > 0 {
			continue
		}
		if !copied {
			out, copied = slices.Clone(specs), true
		}
		c := proto.Clone(s).(*taskdv1.TaskSpec)
		c.Triggers = []*taskdv1.Trigger{{Kind: &taskdv1.Trigger_Once{Once: &taskdv1.OnceTrigger{}}}}
		out[i] = c
	}
	return out
}

// ResolveTriggers makes a validated spec's triggers absolute as of now:
// delays become times, a periodic start defaults to one interval from now,
// a cron start to now (a cron trigger has no past). It then checks each
// recurring trigger's window against the start it has now, given or
// filled in: an end before it would make a trigger that never fires, which
// is refused naming the end under field (CheckTriggers has already
// refused an end before a start given explicitly).
func ResolveTriggers(field string, spec *taskdv1.TaskSpec, now time.Time) error {
	for i, t := range spec.Triggers {
		f := fmt.Sprintf("%s[%d]", field, i)
		switch k := t.Kind.(type) {
		case *taskdv1.Trigger_Once:
			if k.Once.At == nil {
				k.Once.At = timestamppb.New(now.Add(k.Once.GetDelay().AsDuration()))
			}
			k.Once.Delay = nil
		case *taskdv1.Trigger_Periodic:
			p := k.Periodic
			filled := p.Start == nil
			if filled {
				p.Start = timestamppb.New(now.Add(p.Interval.AsDuration()))
			}
			if p.End != nil && p.End.AsTime().Before(p.Start.AsTime()) {
				why := "periodic.start"
				if filled {
					why = fmt.Sprintf("the first fire time, one interval (%s) after now (no periodic.start is set)", p.Interval.AsDuration())
				}
				return Invalid(f+".periodic.end", "is %s, before %s %s: the trigger would never fire",
					p.End.AsTime().UTC().Format(time.RFC3339Nano), why, p.Start.AsTime().UTC().Format(time.RFC3339Nano))
			}
		case *taskdv1.Trigger_Cron:
			c := k.Cron
			filled := c.Start == nil
			if filled {
				c.Start = timestamppb.New(now)
			}
			if c.End != nil && c.End.AsTime().Before(c.Start.AsTime()) {
				why := "cron.start"
				if filled {
					why = "now (no cron.start is set)"
				}
				return Invalid(f+".cron.end", "is %s, before %s %s: the trigger would never fire",
					c.End.AsTime().UTC().Format(time.RFC3339Nano), why, c.Start.AsTime().UTC().Format(time.RFC3339Nano))
			}
		}
	}
	return nil
}
