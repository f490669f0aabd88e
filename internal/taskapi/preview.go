package taskapi

import (
	"context"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/taskd/taskd/internal/record"
	"github.com/taskd/taskd/internal/taskspec"
	"github.com/taskd/taskd/pkg/schedule"
	storev1 "github.com/taskd/taskd/proto/taskd/store/v1"
	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// PreviewTriggers returns the first count fire times at or after from that
// triggers make under the named calendars, merged in time order, without
// scheduling anything. With a taskID each is the instant that task's run
// of it is due: delayed by its trigger's jitter (record.DueOf).
func (a *Service) PreviewTriggers(ctx context.Context, taskID string, triggers []*taskdv1.Trigger, calendars []string, from time.Time, count int) ([]*taskdv1.PreviewFireTime, error) {
	count, err := taskspec.CheckPreview(triggers, calendars, count, a.cfg.Calendars.Stored)
	if err != nil {
		return nil, err
	}
	cals := a.cfg.Calendars.Exclusions(calendars)
	spec := &taskdv1.TaskSpec{Triggers: make([]*taskdv1.Trigger, len(triggers))}
	for i, t := range triggers {
		spec.Triggers[i] = proto.Clone(t).(*taskdv1.Trigger)
	}
	if err := taskspec.ResolveTriggers("triggers", spec, from); err != nil {
		return nil, err
	}
	next := make([]time.Time, len(triggers))
	ok := make([]bool, len(triggers))
	zones := make([]*time.Location, len(triggers))
	for i, t := range spec.Triggers {
		next[i], ok[i] = schedule.Next(t, from.Add(-time.Nanosecond), cals)
		zones[i] = time.UTC
		if c := t.GetCron(); c != nil {
			zones[i], _ = schedule.Location(c.TimeZone) // validated above
		}
	}
	var out []*taskdv1.PreviewFireTime
	merged := fireTimes{next: next, ok: ok, triggers: spec.Triggers, cals: cals, taskID: taskID}
	for len(out) < count && ctx.Err() == nil {
		i, at, more := merged.pop()
		if !more {
			break
		}
		out = append(out, &taskdv1.PreviewFireTime{
			At:      timestamppb.New(at),
			Trigger: int32(i),
			Local:   at.In(zones[i]).Format(time.RFC3339),
		})
	}
	return out, ctx.Err()
}

// upcoming returns up to k coming fire times of a stored task from its
// triggers' progress, after calendars (the run in flight, retries and
// manual runs aside).
func (a *Service) upcoming(rec *storev1.TaskRecord, k int) []*timestamppb.Timestamp {
	if record.IsFinal(rec.GetState()) {
		return nil
	}
	cals := a.cfg.Calendars.Exclusions(rec.GetSpec().GetCalendars())
	next := make([]time.Time, len(rec.GetTriggers()))
	ok := make([]bool, len(next))
	for i, st := range rec.GetTriggers() {
		if st.GetNext() != nil && i < len(rec.GetSpec().GetTriggers()) {
			next[i], ok[i] = st.Next.AsTime(), true
		}
	}
	var out []*timestamppb.Timestamp
	if at, ok := record.ArmedFire(rec, time.Now()); ok {
		out = append(out, timestamppb.New(at))
	}
	merged := fireTimes{next: next, ok: ok, triggers: rec.Spec.GetTriggers(), cals: cals, taskID: rec.GetId()}
	for len(out) < k {
		_, at, more := merged.pop()
		if !more {
			break
		}
		out = append(out, timestamppb.New(at))
	}
	return out
}

// fireTimes merges the fire times of several triggers in time order: next
// holds each trigger's next fire time (ok false: none left).
type fireTimes struct {
	next     []time.Time
	ok       []bool
	triggers []*taskdv1.Trigger
	cals     schedule.Exclusions
	taskID   string // the task whose jitter delays the fire times ("": none)
}

// pop returns the earliest instant a fire time is due (with taskID, its
// jitter's delay after it) and its trigger, and advances that trigger;
// more is false when no trigger has one left.
func (f *fireTimes) pop() (trigger int, at time.Time, more bool) {
	best, bestAt := -1, time.Time{}
	for i := range f.next {
		if !f.ok[i] {
			continue
		}
		if due := f.due(i); best < 0 || due.Before(bestAt) {
			best, bestAt = i, due
		}
	}
	if best < 0 {
		return 0, time.Time{}, false
	}
	f.next[best], f.ok[best] = schedule.Next(f.triggers[best], f.next[best], f.cals)
	return best, bestAt, true
}

// due is when trigger i's next fire time is due.
func (f *fireTimes) due(i int) time.Time {
	if f.taskID == "" {
		return f.next[i]
	}
	return record.DueOf(f.taskID, f.triggers, i, f.next[i])
}
