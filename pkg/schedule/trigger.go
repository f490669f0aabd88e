package schedule

import (
	"math"
	"time"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// Exclusions is what a task's calendars contribute to its fire times
// (calendar.Set implements it). A nil Exclusions excludes nothing.
type Exclusions interface {
	// Excludes reports whether the instant t is excluded.
	Excludes(t time.Time) bool
	// NextIncluded returns the first instant at or after t that is not
	// excluded; ok is false when there is none.
	NextIncluded(t time.Time) (at time.Time, ok bool)
}

// maxExclusionJumps bounds the search for a fire time that no calendar
// excludes: each step jumps a whole excluded stretch (a day, a window, a
// matched cron run), so this many steps cover decades of any real calendar.
const maxExclusionJumps = 100_000

// beforeAll is an instant before every fire time validation lets in.
var beforeAll = time.Unix(math.MinInt64/4, 0)

// First returns trigger t's first fire time that cals does not exclude;
// ok is false when it has none. An on-start-up trigger has no fire time of
// its own: its firing depends on the node (see OnStartupDue).
func First(t *taskdv1.Trigger, cals Exclusions) (time.Time, bool) {
	return Next(t, beforeAll, cals)
}

// Next returns trigger t's first fire time strictly after `after` that cals
// does not exclude; ok is false when it has none.
func Next(t *taskdv1.Trigger, after time.Time, cals Exclusions) (time.Time, bool) {
	at, ok := rawNext(t, after)
	if cals == nil {
		return at, ok
	}
	for i := 0; ok && cals.Excludes(at); i++ {
		if i == maxExclusionJumps {
			return time.Time{}, false
		}
		inc, incOK := cals.NextIncluded(at)
		if !incOK {
			return time.Time{}, false
		}
		// The first fire time at or after the end of the excluded stretch.
		at, ok = rawNext(t, inc.Add(-time.Nanosecond))
	}
	return at, ok
}

// rawNext is Next without calendars.
func rawNext(t *taskdv1.Trigger, after time.Time) (time.Time, bool) {
	switch kind := t.GetKind().(type) {
	case *taskdv1.Trigger_Once:
		if kind.Once.GetAt() == nil {
			return time.Time{}, false
		}
		at := kind.Once.GetAt().AsTime()
		if !at.After(after) {
			return time.Time{}, false
		}
		return at, true
	case *taskdv1.Trigger_Periodic:
		return periodicNext(kind.Periodic, after)
	case *taskdv1.Trigger_Cron:
		return cronNext(kind.Cron, after)
	}
	return time.Time{}, false
}

// periodicNext is the first fire time start + k*interval (k ≥ 0, k < count
// when count is set, not after end) strictly after `after`.
func periodicNext(p *taskdv1.PeriodicTrigger, after time.Time) (time.Time, bool) {
	if p.GetStart() == nil || p.GetInterval() == nil || p.GetInterval().AsDuration() <= 0 {
		return time.Time{}, false
	}
	start, iv := p.GetStart().AsTime(), p.GetInterval().AsDuration()
	k := int64(0)
	if !after.Before(start) {
		d := after.Sub(start)
		if d == math.MaxInt64 { // saturated: more than ≈292 years apart
			return time.Time{}, false
		}
		k = int64(d/iv) + 1
	}
	return periodicAt(p, k)
}

// periodicAt returns fire time k of p, if it has one.
func periodicAt(p *taskdv1.PeriodicTrigger, k int64) (time.Time, bool) {
	iv := p.GetInterval().AsDuration()
	if k < 0 || (p.GetCount() > 0 && k >= p.GetCount()) || k > math.MaxInt64/int64(iv) {
		// k*interval would overflow time.Duration (≈292 years): rather than
		// wrap to a time before start, say there is no such fire time.
		return time.Time{}, false
	}
	start := p.GetStart().AsTime()
	at := start.Add(time.Duration(k) * iv)
	if at.Sub(start) != time.Duration(k)*iv || (p.GetEnd() != nil && at.After(p.GetEnd().AsTime())) {
		// (The first test catches an instant that passed time.Time's range
		// and wrapped.)
		return time.Time{}, false
	}
	return at, true
}

// periodicIndex returns how many fire times of p are at or before t.
func periodicIndex(p *taskdv1.PeriodicTrigger, t time.Time) int64 {
	start, iv := p.GetStart().AsTime(), p.GetInterval().AsDuration()
	if t.Before(start) {
		return 0
	}
	n := int64(t.Sub(start) / iv)
	if n < math.MaxInt64 { // (t.Sub saturates more than ≈292 years apart)
		n++
	}
	if c := p.GetCount(); c > 0 && n > c {
		n = c
	}
	if p.GetEnd() != nil {
		if e := periodicIndex(&taskdv1.PeriodicTrigger{Start: p.GetStart(), Interval: p.GetInterval()}, p.GetEnd().AsTime()); n > e {
			n = e
		}
	}
	return n
}

// cronNext is the cron expression's first fire time strictly after
// `after`, within the trigger's start and end.
func cronNext(c *taskdv1.CronTrigger, after time.Time) (time.Time, bool) {
	e, err := CronExpression(c.GetExpression(), c.GetTimeZone())
	if err != nil {
		return time.Time{}, false // validation keeps such triggers out
	}
	if s := c.GetStart(); s != nil && after.Before(s.AsTime()) {
		after = s.AsTime().Add(-time.Nanosecond)
	}
	at, ok := e.Next(after)
	if !ok || (c.GetEnd() != nil && at.After(c.GetEnd().AsTime())) {
		return time.Time{}, false
	}
	return at, true
}

// IsOnStartup reports whether t is an on-start-up trigger.
func IsOnStartup(t *taskdv1.Trigger) bool { return t.GetOnStartup() != nil }

// OnStartupDue reports whether an on-start-up trigger fires on a node that
// began dispatching at dispatchStart, given when the last run it fired
// started (zero: none known). It fires once per start: when no run of it is
// known, or the last one started before this start. A last run persisted by
// an earlier start never suppresses it.
func OnStartupDue(lastStart, dispatchStart time.Time) bool {
	return lastStart.IsZero() || lastStart.Before(dispatchStart)
}
