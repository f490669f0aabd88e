// Package schedule is the time arithmetic of triggers: the fire times a
// trigger makes, what a late fire time becomes under a misfire policy, and
// retry backoff. It is pure: callers pass the clock's reading in.
//
// A trigger's progress is one number, fired: how many of its fire times are
// behind it. Fire time k of a periodic trigger is start + k*interval (fixed
// rate: each period starts one interval after the previous scheduled start,
// whenever the previous run actually started), so progress survives restarts
// and moves as a single integer with no drift.
package schedule

import (
	"math"
	"time"

	taskdv1 "github.com/taskd/taskd/proto/taskd/v1"
)

// FireAt returns fire time k (0-based) of t; ok is false if t has fewer.
func FireAt(t *taskdv1.Trigger, k int64) (at time.Time, ok bool) {
	if k < 0 {
		return time.Time{}, false
	}
	switch kind := t.GetKind().(type) {
	case *taskdv1.Trigger_Once:
		if k > 0 || kind.Once.GetAt() == nil {
			return time.Time{}, false
		}
		return kind.Once.GetAt().AsTime(), true
	case *taskdv1.Trigger_Periodic:
		p := kind.Periodic
		if p.GetStart() == nil || p.GetInterval() == nil || p.GetInterval().AsDuration() <= 0 {
			return time.Time{}, false
		}
		if p.GetCount() > 0 && k >= p.GetCount() {
			return time.Time{}, false
		}
		iv := p.GetInterval().AsDuration()
		if k > math.MaxInt64/int64(iv) {
			// k*interval overflows time.Duration (≈292 years): rather than
			// wrap to a time before start, say there is no such fire time.
			return time.Time{}, false
		}
		at = p.GetStart().AsTime().Add(time.Duration(k) * iv)
		if p.GetEnd() != nil && at.After(p.GetEnd().AsTime()) {
			return time.Time{}, false
		}
		return at, true
	}
	return time.Time{}, false
}

// firstAfter returns the smallest k ≥ from whose fire time is after now (it
// may not exist: FireAt then says so).
func firstAfter(t *taskdv1.Trigger, from int64, now time.Time) int64 {
	p := t.GetPeriodic()
	if p == nil {
		// A once trigger has one fire time, k = 0: none from k ≥ 1 on.
		return from
	}
	iv := p.GetInterval().AsDuration()
	start := p.GetStart().AsTime()
	if !now.Before(start) {
		k := int64(now.Sub(start)/iv) + 1
		if k > from {
			return k
		}
	}
	return from
}

// total returns how many fire times t has, when that number is finite
// (bounded true): 1 for once, the count and/or the periods up to end
// (inclusive) for periodic.
func total(t *taskdv1.Trigger) (n int64, bounded bool) {
	p := t.GetPeriodic()
	if p == nil {
		return 1, true
	}
	if c := p.GetCount(); c > 0 {
		n, bounded = c, true
	}
	if p.GetEnd() != nil {
		start, end := p.GetStart().AsTime(), p.GetEnd().AsTime()
		e := int64(0)
		if !end.Before(start) {
			e = int64(end.Sub(start)/p.GetInterval().AsDuration()) + 1
		}
		if !bounded || e < n {
			n, bounded = e, true
		}
	}
	return n, bounded
}

// DefaultPolicy is the misfire policy a trigger takes when the task names
// none (contract §4.4): FIRE_ONCE_NOW for once, SKIP for recurring triggers.
func DefaultPolicy(t *taskdv1.Trigger) taskdv1.MisfirePolicy {
	if t.GetPeriodic() != nil {
		return taskdv1.MisfirePolicy_MISFIRE_POLICY_SKIP
	}
	return taskdv1.MisfirePolicy_MISFIRE_POLICY_FIRE_ONCE_NOW
}

// Plan is what to do with a trigger's due fire time.
type Plan struct {
	// Run is true when Fire is to be run now.
	Run  bool
	Fire time.Time
	// Fired is the trigger's progress once the plan is carried out.
	Fired int64
	// Misfired counts fire times resolved by the misfire policy, without a
	// run of their own.
	Misfired int64
	// Late is true when the fire time misfired.
	Late bool
}

// Due plans trigger t's fire time number fired, which is due at or before
// now. A fire time that starts within threshold of it runs as usual;
// later than that it has misfired and the policy decides (maxCatchUp bounds
// FIRE_ALL).
func Due(t *taskdv1.Trigger, fired int64, now time.Time, threshold time.Duration,
	policy taskdv1.MisfirePolicy, maxCatchUp int) Plan {
	fire, ok := FireAt(t, fired)
	if !ok {
		return Plan{Fired: fired}
	}
	if now.Sub(fire) <= threshold {
		return Plan{Run: true, Fire: fire, Fired: fired + 1}
	}
	switch policy {
	case taskdv1.MisfirePolicy_MISFIRE_POLICY_SKIP,
		taskdv1.MisfirePolicy_MISFIRE_POLICY_FIRE_ONCE_NOW,
		taskdv1.MisfirePolicy_MISFIRE_POLICY_FIRE_ALL:
	default: // UNSPECIFIED (or a value this version does not know)
		policy = DefaultPolicy(t)
	}
	next := firstAfter(t, fired+1, now)
	if n, bounded := total(t); bounded && next > n {
		next = n // the trigger runs out of fire times before now
	}
	missed := next - fired // fire times at or before now, this one included
	switch policy {
	case taskdv1.MisfirePolicy_MISFIRE_POLICY_SKIP:
		return Plan{Fired: next, Misfired: missed, Late: true}
	case taskdv1.MisfirePolicy_MISFIRE_POLICY_FIRE_ALL:
		if maxCatchUp < 1 {
			maxCatchUp = 1
		}
		if missed > int64(maxCatchUp) {
			// Drop the oldest beyond the cap; run the first one kept.
			skip := missed - int64(maxCatchUp)
			fire, _ = FireAt(t, fired+skip)
			return Plan{Run: true, Fire: fire, Fired: fired + skip + 1, Misfired: skip, Late: true}
		}
		return Plan{Run: true, Fire: fire, Fired: fired + 1, Late: true}
	default: // FIRE_ONCE_NOW
		return Plan{Run: true, Fire: fire, Fired: next, Misfired: missed - 1, Late: true}
	}
}

// Defaults of taskd.v1.Backoff.
const (
	DefaultBackoffInitial = time.Second
	DefaultBackoffMax     = 10 * time.Minute
)

// Backoff is the wait before retry number attempt (1 for the first retry):
// initial doubled per attempt, capped at max, with jitter taking it to a
// point in [d/2, d] chosen by rnd in [0,1). A zero initial is the default
// 1s and a zero max the default 10m (taskd.v1.Backoff).
func Backoff(attempt int, initial, max time.Duration, rnd float64) time.Duration {
	if initial <= 0 {
		initial = DefaultBackoffInitial
	}
	if max <= 0 {
		max = DefaultBackoffMax
	}
	if max < initial {
		max = initial
	}
	d := initial
	for i := 1; i < attempt && d < max; i++ {
		if d > max/2 {
			d = max // doubling would pass max (or overflow)
			break
		}
		d *= 2
	}
	if d > max {
		d = max
	}
	switch {
	case rnd < 0 || rnd != rnd: // negative or NaN
		rnd = 0
	case rnd > 1:
		rnd = 1
	}
	half := d / 2
	return half + time.Duration(rnd*float64(d-half))
}
